/* The C API with POCKET_SPEC_BLOCK: a session over a random-weight block drafter (written by `pocket synth
 * --drafter-for`) gives the plain greedy text; no drafter, a model given as the drafter and a drafter for
 * another model are refused with POCKET_ERR_INVALID_ARGUMENT and a message saying which.
 * Arguments: TARGET.pocket DRAFTER.pocket (for TARGET) OTHER.pocket (another model). */
#include <stdio.h>
#include <string.h>

#include "pocket/pocket.h"

static int failures = 0;
#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              pocket_last_error());                                     \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

typedef struct {
  char text[4096];
  size_t len;
} collect;

static int32_t on_token(void* user_data, int32_t token, const char* text, size_t len) {
  collect* c = (collect*)user_data;
  (void)token;
  if (c->len + len < sizeof c->text) {
    memcpy(c->text + c->len, text, len);
    c->len += len;
  }
  return 1;
}

/* Greedy text of 40 tokens from `session`, or len 0 after a failure. */
static collect generate(pocket_session* session, const char* prompt) {
  collect c;
  memset(&c, 0, sizeof c);
  pocket_generate_params gp = pocket_generate_default_params();
  gp.n_predict = 40;
  CHECK(pocket_generate(session, prompt, strlen(prompt), &gp, on_token, &c, NULL) == POCKET_OK);
  return c;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s TARGET.pocket DRAFTER.pocket OTHER.pocket\n", argv[0]);
    return 2;
  }
  const char* prompt = "Once upon a time there was a little robot who";
  pocket_model* model = NULL;
  pocket_model* other = NULL;
  CHECK(pocket_model_load(argv[1], &model) == POCKET_OK);
  CHECK(pocket_model_load(argv[3], &other) == POCKET_OK);
  if (model == NULL || other == NULL) return 1;

  pocket_session_params sp = pocket_session_default_params();
  sp.n_ctx = 256;
  pocket_session* plain = NULL;
  CHECK(pocket_session_create(model, &sp, &plain) == POCKET_OK);
  if (plain == NULL) return 1;
  const collect want = generate(plain, prompt);
  CHECK(want.len > 0);
  CHECK(strcmp(pocket_session_spec_off_reason(plain), "") == 0);

  /* Refusals: no drafter, the model itself as the drafter, a drafter package as the model, a drafter for
   * another model. */
  pocket_session* s = NULL;
  sp.spec_method = POCKET_SPEC_BLOCK;
  CHECK(pocket_session_create(model, &sp, &s) == POCKET_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL && strstr(pocket_last_error(), "block drafter") != NULL);
  sp.draft_model = argv[1];
  CHECK(pocket_session_create(model, &sp, &s) == POCKET_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL && strstr(pocket_last_error(), "not a drafter") != NULL);
  pocket_model* as_model = NULL;
  CHECK(pocket_model_load(argv[2], &as_model) == POCKET_ERR_INVALID_ARGUMENT);
  CHECK(as_model == NULL && strstr(pocket_last_error(), "drafter, not a model") != NULL);
  sp.draft_model = argv[2];
  CHECK(pocket_session_create(other, &sp, &s) == POCKET_ERR_INVALID_ARGUMENT);
  CHECK(s == NULL && strstr(pocket_last_error(), "wrong target") != NULL);

  /* The block drafter: plain greedy's text, with and without the fallback to plain rounds, twice each (the
   * second after a reset). */
  for (int run = 0; run < 2; ++run) {
    sp.spec_fallback = run == 0;
    CHECK(pocket_session_create(model, &sp, &s) == POCKET_OK);
    if (s == NULL) continue;
    CHECK(strcmp(pocket_session_spec_off_reason(s), "") == 0);
    for (int rep = 0; rep < 2; ++rep) {
      const collect got = generate(s, prompt);
      CHECK(got.len == want.len && memcmp(got.text, want.text, want.len) == 0);
      pocket_spec_stats ss;
      CHECK(pocket_session_spec_stats(s, &ss) == POCKET_OK);
      CHECK(ss.n_passes > 0 && ss.n_accepted <= ss.n_drafted && ss.n_plain <= ss.n_passes);
      if (run == 1) CHECK(ss.n_plain == 0 && ss.n_drafted > 0); /* always speculating: it drafted */
      CHECK(pocket_session_reset(s) == POCKET_OK);
    }
    pocket_session_free(s);
    s = NULL;
  }

  pocket_session_free(plain);
  pocket_model_free(other);
  pocket_model_free(model);
  if (failures == 0) printf("c_api_block_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
