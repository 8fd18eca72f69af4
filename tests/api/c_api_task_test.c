/* The task layer through the C API, from C, on the default model (models/pocket-nano-q4.pocket): results as
 * JSON, the redaction detectors without a session, clear errors for bad requests, tasks on speculative
 * sessions. */
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

/* Sum of the numbers after every "probability": in a JSON text (labels' probabilities). */
static double sum_probabilities(const char* json) {
  double sum = 0.0;
  const char* key = "\"probability\":";
  for (const char* p = strstr(json, key); p != NULL; p = strstr(p + 1, key)) sum += strtod(p + strlen(key), NULL);
  return sum;
}

int main(int argc, char** argv) {
  const char* result = NULL;
  /* Redaction's detectors need no model. */
  const char* text = "call 13812345678 or mail a@b.cn";
  CHECK(pocket_task_redact(NULL, text, strlen(text), &result) == POCKET_OK);
  CHECK(result != NULL && strstr(result, "\"text\":\"call [PHONE] or mail [EMAIL]\"") != NULL);
  CHECK(pocket_task_redact(NULL, text, strlen(text), NULL) == POCKET_ERR_INVALID_ARGUMENT);
  CHECK(pocket_task_run(NULL, "{}", 2, &result) == POCKET_ERR_INVALID_ARGUMENT);

  if (argc < 2) {
    printf("c_api_task_test: no model given; skipping the model checks\n");
    return failures == 0 ? 0 : 1;
  }
  pocket_model* model = NULL;
  CHECK(pocket_model_load(argv[1], &model) == POCKET_OK);
  if (model == NULL) return 1;
  pocket_session* s = NULL;
  pocket_session_params sp = pocket_session_default_params();
  sp.n_threads = 1;
  CHECK(pocket_session_create(model, &sp, &s) == POCKET_OK);

  const char* labels[] = {"order_status", "refund", "cancel_order"};
  const char* q = "where is my parcel? order R123456";
  CHECK(pocket_task_classify(s, q, strlen(q), labels, 3, &result) == POCKET_OK);
  CHECK(strstr(result, "\"label\":") != NULL);
  const double sum = sum_probabilities(result);
  CHECK(sum > 0.999999 && sum < 1.000001);
  CHECK(pocket_task_classify(s, q, strlen(q), labels, 0, &result) == POCKET_ERR_INVALID_ARGUMENT);

  const char* product = "墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。";
  const char* schema =
      "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"x-pocket-copy\":true},"
      "\"price\":{\"type\":\"number\",\"x-pocket-copy\":true}},\"required\":[\"name\"]}";
  CHECK(pocket_task_extract(s, product, strlen(product), schema, 0, &result) == POCKET_OK);
  CHECK(strstr(result, "\"valid\":true") != NULL);
  CHECK(pocket_task_extract(s, product, strlen(product), "{\"type\":\"object\",", 0, &result) ==
        POCKET_ERR_INVALID_ARGUMENT);
  CHECK(pocket_task_extract(s, product, strlen(product), "{\"type\":\"string\",\"pattern\":\"a\"}", 0, &result) ==
        POCKET_ERR_INVALID_ARGUMENT);
  CHECK(strstr(pocket_last_error(), "pattern") != NULL);

  const char* ctx = "Context: The store opens at 9 am.\nQuestion: When does the store open?";
  CHECK(pocket_task_route(s, ctx, strlen(ctx), 0.5, &result) == POCKET_OK);
  CHECK(strstr(result, "\"route\":\"local\"") != NULL || strstr(result, "\"route\":\"cloud\"") != NULL);
  CHECK(pocket_task_route(s, ctx, strlen(ctx), 2.0, &result) == POCKET_ERR_INVALID_ARGUMENT);

  const char* bad = "{\"task\":\"classify\",\"text\":\"x\",\"lables\":[\"a\"]}";
  CHECK(pocket_task_run(s, bad, strlen(bad), &result) == POCKET_ERR_INVALID_ARGUMENT);
  CHECK(strstr(pocket_last_error(), "lables") != NULL);
  CHECK(pocket_task_run(s, "{not json", 9, &result) == POCKET_ERR_INVALID_ARGUMENT);
  const char* req = "{\"task\":\"rewrite\",\"text\":\"i has a apple\",\"max_tokens\":16}";
  CHECK(pocket_task_run(s, req, strlen(req), &result) == POCKET_OK);
  CHECK(strstr(result, "\"task\":\"rewrite\"") != NULL);
  char plain_rewrite[512] = {0}, plain_classify[512] = {0};
  /* The results without their "usage" (timings differ between runs). */
  strncpy(plain_rewrite, result, sizeof plain_rewrite - 1);
  if (strstr(plain_rewrite, ",\"usage\"") != NULL) *strstr(plain_rewrite, ",\"usage\"") = '\0';
  CHECK(pocket_task_classify(s, q, strlen(q), labels, 3, &result) == POCKET_OK);
  strncpy(plain_classify, result, sizeof plain_classify - 1);
  pocket_session_free(s);

  /* A speculative session runs tasks too: free generation speculatively, label scoring on a plain session
   * created beside it; the same results. */
  sp.spec_method = POCKET_SPEC_NGRAM;
  sp.spec_fallback = 0;
  CHECK(pocket_session_create(model, &sp, &s) == POCKET_OK);
  CHECK(pocket_task_run(s, req, strlen(req), &result) == POCKET_OK);
  if (strstr(result, ",\"usage\"") != NULL) CHECK(strncmp(result, plain_rewrite, strlen(plain_rewrite)) == 0);
  else CHECK(0 && "no usage in the rewrite result");
  CHECK(pocket_task_classify(s, q, strlen(q), labels, 3, &result) == POCKET_OK);
  CHECK(strcmp(result, plain_classify) == 0);
  pocket_session_free(s);

  pocket_model_free(model);
  if (failures == 0) printf("c_api_task_test: ok\n");
  return failures == 0 ? 0 : 1;
}
