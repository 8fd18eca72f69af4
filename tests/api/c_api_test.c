/* The C API used from C: load, tokenize, detokenize, generate with a callback, cancellation, errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pocket/pocket.h"

static int failures = 0;
#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

typedef struct {
  char text[4096];
  size_t len;
  int n_tokens;
  int stop_after;
  pocket_session* cancel_session;
} collect;

static int32_t on_token(void* user_data, int32_t token, const char* text, size_t len) {
  collect* c = (collect*)user_data;
  if (c->len + len < sizeof c->text) {
    memcpy(c->text + c->len, text, len);
    c->len += len;
  }
  if (token >= 0) c->n_tokens++; /* -1: a final text-only flush */
  if (c->cancel_session != NULL && c->n_tokens == 3) pocket_session_cancel(c->cancel_session);
  return c->stop_after == 0 || c->n_tokens < c->stop_after;
}

int main(int argc, char** argv) {
  const char* model_path = argc > 1 ? argv[1] : getenv("POCKET_TEST_MODEL");
  pocket_model* model = NULL;

  /* Errors: NULL arguments and a missing file, with a message. */
  CHECK(pocket_model_load(NULL, &model) == POCKET_ERR_INVALID_ARGUMENT);
  CHECK(model == NULL);
  CHECK(pocket_model_load("/nonexistent/model.pocket", &model) == POCKET_ERR_IO);
  CHECK(strstr(pocket_last_error(), "nonexistent") != NULL);
  CHECK(strcmp(pocket_status_name(POCKET_ERR_CORRUPT_FILE), "corrupt file") == 0);
  pocket_model_free(NULL);
  pocket_session_free(NULL);

  if (model_path == NULL) {
    printf("c_api_test: no model given (argument or POCKET_TEST_MODEL); skipping the model checks\n");
    return failures == 0 ? 0 : 1;
  }
  CHECK(pocket_model_load(model_path, &model) == POCKET_OK);
  if (model == NULL) {
    fprintf(stderr, "cannot load %s: %s\n", model_path, pocket_last_error());
    return 1;
  }
  CHECK(pocket_model_n_vocab(model) > 0);

  /* Tokenize: size query, then fill; round trip through detokenize. */
  const char* text = "Once upon a time";
  size_t n = 0;
  CHECK(pocket_tokenize(model, text, strlen(text), 1, 0, NULL, 0, &n) == POCKET_ERR_BUFFER_TOO_SMALL);
  CHECK(n > 1);
  int32_t ids[64];
  CHECK(pocket_tokenize(model, text, strlen(text), 1, 0, ids, 64, &n) == POCKET_OK);
  CHECK(ids[0] == pocket_model_bos(model));
  char out[256];
  size_t nb = 0;
  CHECK(pocket_detokenize(model, ids + 1, n - 1, out, sizeof out, &nb) == POCKET_OK);
  CHECK(nb >= strlen(text));
  int32_t bad = 1 << 30;
  CHECK(pocket_detokenize(model, &bad, 1, out, sizeof out, &nb) == POCKET_ERR_INVALID_ARGUMENT);

  /* Sessions: a budget that cannot be met is refused; a normal one generates. */
  pocket_session_params sp = pocket_session_default_params();
  sp.mem_budget_bytes = 1;
  pocket_session* session = NULL;
  CHECK(pocket_session_create(model, &sp, &session) == POCKET_ERR_OUT_OF_MEMORY);
  CHECK(session == NULL);
  sp = pocket_session_default_params();
  sp.n_threads = 2;
  CHECK(pocket_session_create(model, &sp, &session) == POCKET_OK);

  pocket_generate_params gp = pocket_generate_default_params();
  gp.n_predict = 20;
  collect c;
  memset(&c, 0, sizeof c);
  pocket_generate_stats stats;
  CHECK(pocket_generate(session, text, strlen(text), &gp, on_token, &c, &stats) == POCKET_OK);
  CHECK(stats.n_generated == c.n_tokens);
  CHECK(c.n_tokens > 0 && c.n_tokens <= 20);
  CHECK(c.len > 0);
  {
    /* A plain session has no speculation counters; NULL arguments are refused. */
    pocket_spec_stats ss;
    memset(&ss, 0xff, sizeof ss);
    CHECK(pocket_session_spec_stats(session, &ss) == POCKET_OK);
    CHECK(ss.n_passes == 0 && ss.n_drafted == 0 && ss.n_accepted == 0 && ss.n_plain == 0);
    CHECK(ss.tokens_per_pass == 0.0 && ss.acceptance_rate == 0.0);
    CHECK(pocket_session_spec_stats(NULL, &ss) == POCKET_ERR_INVALID_ARGUMENT);
    CHECK(pocket_session_spec_stats(session, NULL) == POCKET_ERR_INVALID_ARGUMENT);
  }

  /* Bad parameters are rejected, and the session keeps working. */
  gp.temperature = -1.0f;
  CHECK(pocket_generate(session, text, strlen(text), &gp, NULL, NULL, NULL) == POCKET_ERR_INVALID_ARGUMENT);
  gp.temperature = 0.0f;

  /* Cancellation from the callback: the call returns CANCELLED, the session is reusable. */
  CHECK(pocket_session_reset(session) == POCKET_OK);
  collect c2;
  memset(&c2, 0, sizeof c2);
  c2.cancel_session = session;
  gp.n_predict = 50;
  CHECK(pocket_generate(session, text, strlen(text), &gp, on_token, &c2, NULL) == POCKET_ERR_CANCELLED);
  CHECK(c2.n_tokens == 3);
  CHECK(pocket_session_reset(session) == POCKET_OK);
  collect c3;
  memset(&c3, 0, sizeof c3);
  gp.n_predict = 20;
  CHECK(pocket_generate(session, text, strlen(text), &gp, on_token, &c3, NULL) == POCKET_OK);
  CHECK(c3.len == c.len && memcmp(c3.text, c.text, c.len) == 0); /* greedy: same text as the first run */

  /* Speculative decoding: k out of 1..16 and a draft method without a draft model are refused; prompt
   * lookup and a draft model (here the model itself) give the plain greedy text, with or without the
   * fallback to plain rounds. */
  {
    pocket_session* spec = NULL;
    sp = pocket_session_default_params();
    CHECK(sp.spec_method == POCKET_SPEC_NONE && sp.draft_max == 8 && sp.spec_fallback == 1);
    sp.spec_method = POCKET_SPEC_NGRAM;
    sp.draft_max = 0;
    CHECK(pocket_session_create(model, &sp, &spec) == POCKET_ERR_INVALID_ARGUMENT);
    CHECK(spec == NULL && strstr(pocket_last_error(), "1..16") != NULL);
    sp.draft_max = 17;
    CHECK(pocket_session_create(model, &sp, &spec) == POCKET_ERR_INVALID_ARGUMENT);
    sp.spec_method = POCKET_SPEC_DRAFT;
    sp.draft_max = 4;
    CHECK(pocket_session_create(model, &sp, &spec) == POCKET_ERR_INVALID_ARGUMENT);
    CHECK(strstr(pocket_last_error(), "draft model") != NULL);
    for (int run = 0; run < 4; ++run) { /* both methods, with the fallback to plain rounds on and off */
      const int method = run % 2 == 0 ? POCKET_SPEC_NGRAM : POCKET_SPEC_DRAFT;
      sp.spec_method = method;
      sp.spec_fallback = run < 2;
      sp.draft_model = model_path;
      CHECK(pocket_session_create(model, &sp, &spec) == POCKET_OK);
      if (spec == NULL) continue;
      collect c4;
      memset(&c4, 0, sizeof c4);
      pocket_generate_stats gs4;
      CHECK(pocket_generate(spec, text, strlen(text), &gp, on_token, &c4, &gs4) == POCKET_OK);
      CHECK(c4.len == c.len && memcmp(c4.text, c.text, c.len) == 0);
      /* The counters account for every generated token: the prompt's pass gives the first, each decode
       * pass its accepted drafts plus one. */
      pocket_spec_stats ss;
      CHECK(pocket_session_spec_stats(spec, &ss) == POCKET_OK);
      CHECK(ss.n_passes > 0 && ss.n_accepted <= ss.n_drafted && ss.n_plain <= ss.n_passes);
      CHECK(ss.n_passes + ss.n_accepted <= gs4.n_generated && gs4.n_generated <= ss.n_passes + ss.n_accepted + 1);
      CHECK(ss.tokens_per_pass == (double)(ss.n_accepted + ss.n_passes) / (double)ss.n_passes);
      if (method == POCKET_SPEC_DRAFT && !sp.spec_fallback) {
        /* The model drafting for itself, greedily, always speculating: its drafts are the target's own
         * choices, accepted unless a batched row's rounding flips a near tie (at most rarely). */
        CHECK(ss.n_plain == 0 && ss.n_drafted > 0 && 10 * ss.n_accepted >= 9 * ss.n_drafted);
        CHECK(ss.acceptance_rate >= 0.9 && ss.tokens_per_pass > 1.0);
      }
      CHECK(pocket_session_reset(spec) == POCKET_OK);
      pocket_session_free(spec);
      spec = NULL;
    }
  }

  /* The model read into memory instead of mapped (use_mmap = 0) gives the same greedy text. */
  {
    pocket_model_params mp = pocket_model_default_params();
    CHECK(mp.use_mmap == 1);
    mp.use_mmap = 0;
    pocket_model* read_model = NULL;
    CHECK(pocket_model_load_ex("/nonexistent/model.pocket", &mp, &read_model) == POCKET_ERR_IO);
    CHECK(read_model == NULL && strstr(pocket_last_error(), "nonexistent") != NULL);
    CHECK(pocket_model_load_ex(model_path, &mp, &read_model) == POCKET_OK);
    if (read_model != NULL) {
      pocket_session* rs = NULL;
      sp = pocket_session_default_params();
      sp.n_threads = 2;
      CHECK(pocket_session_create(read_model, &sp, &rs) == POCKET_OK);
      collect c5;
      memset(&c5, 0, sizeof c5);
      CHECK(pocket_generate(rs, text, strlen(text), &gp, on_token, &c5, NULL) == POCKET_OK);
      CHECK(c5.len == c.len && memcmp(c5.text, c.text, c.len) == 0);
      pocket_session_free(rs);
      pocket_model_free(read_model);
    }
  }

  pocket_session_free(session);
  pocket_model_free(model);
  if (failures == 0) printf("c_api_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
