/* pocket C API: small language models on device.
 *
 * Opaque handles with create/destroy pairs; every function returns a pocket_status (0 = success) and never
 * lets a C++ exception escape. After a failure, pocket_last_error() gives a message for the calling thread.
 *
 * Thread safety: a pocket_model is immutable and may be shared by any number of sessions on any threads.
 * A pocket_session must be used by one thread at a time; pocket_session_cancel may be called from any
 * thread. */
#ifndef POCKET_POCKET_H_
#define POCKET_POCKET_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
typedef int32_t pocket_status;
#define POCKET_OK 0                    /* success */
#define POCKET_ERR_INVALID_ARGUMENT 1  /* a parameter is NULL or out of range */
#define POCKET_ERR_IO 2                /* a file could not be opened, read, mapped or written */
#define POCKET_ERR_CORRUPT_FILE 3      /* a file is malformed, truncated or fails its checksum */
#define POCKET_ERR_UNSUPPORTED 4       /* a valid request this build cannot serve (e.g. unknown dtype) */
#define POCKET_ERR_OUT_OF_MEMORY 5     /* allocation failed or the memory budget cannot be met */
#define POCKET_ERR_CONTEXT_EXCEEDED 6  /* the prompt does not fit in the session's context */
#define POCKET_ERR_CANCELLED 7         /* pocket_session_cancel() stopped the call; the session stays usable */
#define POCKET_ERR_NUMERICAL 8         /* NaN/Inf appeared where a number was needed (e.g. logits) */
#define POCKET_ERR_INTERNAL 9          /* a bug in pocket; please report it */
#define POCKET_ERR_BUFFER_TOO_SMALL 10 /* the output buffer is too small; the needed size was written */

typedef struct pocket_model pocket_model;
typedef struct pocket_session pocket_session;

/* The message of the last failed call on this thread ("" when none). Valid until the next call. */
const char* pocket_last_error(void);
/* A fixed name for a status code ("ok", "corrupt file", ...). */
const char* pocket_status_name(pocket_status status);

/* Models ------------------------------------------------------------------------------------------------ */
/* Maps and validates a .pocket package. *out is NULL on failure. */
pocket_status pocket_model_load(const char* path, pocket_model** out);

typedef struct pocket_model_params {
  /* 1 (default): map the file (pages shared with the page cache, evictable), huge pages requested and all
   * of it faulted in at load (one sequential read on a cold cache; where the page cache holds it in 2 MiB
   * folios, decode runs as fast as with 0).
   * 0: read it into anonymous memory with transparent huge pages requested: a slower open and memory the
   * system cannot evict, huge pages even for a file the page cache holds in small pages (docs/performance.md,
   * "Loading"). */
  int32_t use_mmap;
} pocket_model_params;
pocket_model_params pocket_model_default_params(void);
/* pocket_model_load with options; params NULL means the defaults. */
pocket_status pocket_model_load_ex(const char* path, const pocket_model_params* params, pocket_model** out);
void pocket_model_free(pocket_model* model); /* NULL is allowed */
int32_t pocket_model_n_vocab(const pocket_model* model);
int32_t pocket_model_n_ctx_train(const pocket_model* model);
int32_t pocket_model_bos(const pocket_model* model); /* -1 when none */
int32_t pocket_model_eos(const pocket_model* model); /* -1 when none */

/* Tokens ------------------------------------------------------------------------------------------------ */
/* Encodes UTF-8 text (len bytes; invalid UTF-8 becomes U+FFFD). Writes at most `capacity` ids and sets
 * *n_tokens to the number of ids the text needs; POCKET_ERR_BUFFER_TOO_SMALL when capacity < *n_tokens. */
pocket_status pocket_tokenize(const pocket_model* model, const char* text, size_t len, int32_t add_bos,
                              int32_t parse_special, int32_t* tokens, size_t capacity, size_t* n_tokens);
/* Decodes ids to UTF-8. Writes at most `capacity` bytes (not NUL-terminated) and sets *n_bytes to the
 * length needed; POCKET_ERR_BUFFER_TOO_SMALL when capacity < *n_bytes. */
pocket_status pocket_detokenize(const pocket_model* model, const int32_t* tokens, size_t n_tokens, char* text,
                                size_t capacity, size_t* n_bytes);

/* Sessions ---------------------------------------------------------------------------------------------- */
typedef struct pocket_session_params {
  int32_t n_ctx;            /* 0: the package's default */
  int32_t n_threads;        /* 0: physical cores */
  int32_t n_batch;          /* 0: min(n_ctx, 128) */
  uint64_t mem_budget_bytes; /* 0: none; otherwise creation fails with POCKET_ERR_OUT_OF_MEMORY if the plan exceeds it */
  /* Speculative decoding (lossless: greedy output is unchanged, sampling keeps the model's distribution). */
  int32_t spec_method;      /* POCKET_SPEC_NONE (default), POCKET_SPEC_NGRAM, POCKET_SPEC_DRAFT or POCKET_SPEC_BLOCK */
  int32_t draft_max;        /* longest draft k, 1..16 (default 8); out of range: POCKET_ERR_INVALID_ARGUMENT */
  const char* draft_model;  /* POCKET_SPEC_DRAFT: path of a .pocket with the same tokenizer; POCKET_SPEC_BLOCK:
                               path of the block drafter package trained for this model (a drafter for
                               another model, or a model given as the drafter: POCKET_ERR_INVALID_ARGUMENT
                               with the reason in pocket_last_error()). Required by both (else
                               POCKET_ERR_INVALID_ARGUMENT); copied, need not outlive the call */
  int32_t spec_fallback;    /* 1 (default): decode plainly while speculation is measured slower on this
                               machine and text (output unchanged either way); 0: always speculate */
} pocket_session_params;

#define POCKET_SPEC_NONE 0  /* plain decoding */
#define POCKET_SPEC_NGRAM 1 /* prompt lookup: drafts copy earlier text (extraction, edits, quoting) */
#define POCKET_SPEC_DRAFT 2 /* a smaller model drafts (params.draft_model) */
#define POCKET_SPEC_BLOCK 3 /* a block drafter proposes up to 8 tokens per pass from the model's hidden states
                               (params.draft_model; docs/speculative.md). Its bytes count towards
                               mem_budget_bytes: when the model fits the budget but not both, the session
                               decodes plainly (pocket_session_spec_off_reason says so) */

pocket_session_params pocket_session_default_params(void);
pocket_status pocket_session_create(const pocket_model* model, const pocket_session_params* params,
                                    pocket_session** out);
void pocket_session_free(pocket_session* session); /* NULL is allowed */
/* Forgets the conversation (KV cache and history). */
pocket_status pocket_session_reset(pocket_session* session);
/* Asks a running pocket_generate on this session to stop; safe from any thread. The flag is cleared when
 * the next pocket_generate starts. */
void pocket_session_cancel(pocket_session* session);

/* Generation -------------------------------------------------------------------------------------------- */
typedef struct pocket_generate_params {
  int32_t n_predict;        /* tokens to generate; -1: until a stop token or the context is full; 0: prompt only */
  float temperature;        /* 0: greedy; must be >= 0 */
  int32_t top_k;            /* <= 0: off */
  float top_p;              /* >= 1: off */
  float min_p;              /* <= 0: off */
  float repeat_penalty;     /* 1: off; must be > 0 */
  int32_t repeat_last_n;
  uint64_t seed;
  int32_t add_bos;          /* non-zero: prepend BOS at the start of a conversation */
  int32_t parse_special;    /* non-zero: special-token text in the prompt becomes special tokens */
} pocket_generate_params;

pocket_generate_params pocket_generate_default_params(void); /* greedy, 128 tokens */

/* Called for each generated token with the UTF-8 text it completes (text may be empty while a multi-byte
 * character is incomplete; not NUL-terminated). A character still incomplete when generation ends is
 * delivered as U+FFFD in one last call with token -1 (text only). Return non-zero to continue, 0 to stop. */
typedef int32_t (*pocket_token_callback)(void* user_data, int32_t token, const char* text, size_t len);

typedef struct pocket_generate_stats {
  int32_t n_prompt;
  int32_t n_generated;
  double prefill_tokens_per_second;
  double decode_tokens_per_second;
} pocket_generate_stats;

/* Evaluates `prompt` after what the session already holds, then generates. `callback` and `stats` may be
 * NULL. */
pocket_status pocket_generate(pocket_session* session, const char* prompt, size_t len,
                              const pocket_generate_params* params, pocket_token_callback callback, void* user_data,
                              pocket_generate_stats* stats);

/* Speculative decoding's counters for the last pocket_generate on a session (all zero before the first call
 * and for a session without speculation). The first generated token comes from the prompt's pass; each
 * later pass verifies one token plus its drafts and yields the accepted drafts plus one token, so
 * n_passes + n_accepted <= n_generated <= n_passes + n_accepted + 1. */
typedef struct pocket_spec_stats {
  int64_t n_passes;        /* target forward passes while decoding */
  int64_t n_drafted;       /* draft tokens sent to verification */
  int64_t n_accepted;      /* draft tokens the target accepted */
  int64_t n_plain;         /* passes run without drafts because speculation was measured slower (spec_fallback) */
  double tokens_per_pass;  /* (n_accepted + n_passes) / n_passes; 0 without passes */
  double acceptance_rate;  /* n_accepted / n_drafted; 0 when nothing was drafted */
} pocket_spec_stats;

/* POCKET_ERR_INVALID_ARGUMENT when session or out is NULL. */
pocket_status pocket_session_spec_stats(const pocket_session* session, pocket_spec_stats* out);
/* Why the speculation asked for was switched off at creation, the session decoding plainly (a block drafter
 * that does not fit mem_budget_bytes beside the model), or "" when it speculates as asked, was created
 * without speculation, or session is NULL. Owned by the session, valid until it is freed. */
const char* pocket_session_spec_off_reason(const pocket_session* session);


/* App tasks (docs/tasks.md, "The task layer") -------------------------------------------------------------- */
/* Outputs valid by construction: extraction constrained to a JSON schema (string properties marked
 * "x-pocket-copy": true, or all with ground, are spans of the text), labels scored by the model's own
 * probabilities, redaction by check-digit detectors. Extraction decodes the JSON structure greedily and each
 * value by a 2-beam search (the request's "beams": 1 = token-by-token greedy, up to 16). Each call resets
 * the session (tasks are independent requests). On a speculative session (spec_method != NONE) free
 * generation (rewrite, extraction with "beams": 1) is speculative, lossless; label scoring and the value
 * search run on a plain session the first task call creates beside it (its own KV cache, within what
 * mem_budget_bytes leaves: POCKET_ERR_OUT_OF_MEMORY otherwise). On success
 * *result_json points to a NUL-terminated JSON object owned by the library, valid until the next
 * pocket_task_* call on the same thread. pocket_session_cancel stops a running task (POCKET_ERR_CANCELLED).
 * Errors: POCKET_ERR_INVALID_ARGUMENT for a malformed request or schema (an unsupported keyword is named),
 * labels that tokenize to nothing, bad UTF-8; POCKET_ERR_CONTEXT_EXCEEDED for a text too long. */

/* The whole request as JSON, e.g. {"task":"classify","text":"…","labels":["a","b"]} (the same JSON as
 * `pocket task --request` and the server's POST /v1/pocket/task). */
pocket_status pocket_task_run(pocket_session* session, const char* request_json, size_t len, const char** result_json);
/* {"result":{…},"valid":true,…}. schema_json: a JSON schema (NUL-terminated; NULL or "" = any JSON object). */
pocket_status pocket_task_extract(pocket_session* session, const char* text, size_t len, const char* schema_json,
                                  int32_t ground, const char** result_json);
/* {"label":"…","confidence":p,"labels":[{"label","probability","logprob"},…]}: probabilities sum to 1. */
pocket_status pocket_task_classify(pocket_session* session, const char* text, size_t len, const char* const* labels,
                                   size_t n_labels, const char** result_json);
/* {"route":"local"|"cloud","p_local":p,"confidence":c,…}: "local" when p_local >= threshold (0..1). */
pocket_status pocket_task_route(pocket_session* session, const char* text, size_t len, double threshold,
                                const char** result_json);
/* {"text":"…[PHONE]…","spans":[{"begin","end","kind","source"},…]}. session may be NULL: detectors only. */
pocket_status pocket_task_redact(pocket_session* session, const char* text, size_t len, const char** result_json);

#ifdef __cplusplus
}
#endif

#endif /* POCKET_POCKET_H_ */
