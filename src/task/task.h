// The task layer: the app tasks (extract, classify, route, rewrite, redact) over a Session, returning
// results that are valid by construction — JSON constrained to a schema, extracted values restricted to
// spans of the input, labels scored by the model's probabilities instead of sampled. docs/tasks.md.
// A Session is used by one thread at a time; every call resets it first (tasks are independent requests).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "generate/session.h"
#include "sampling/token_constraint.h"
#include "task/answer_confidence.h"

namespace pocket {

// A fresh generation after `prompt` on another session over the same model — in practice a speculative
// session's reset() then generate_tokens() (`pocket task --spec`, the server with --spec): the task layer
// never sees the speculative session's type, so this layer need not link it.
using TaskGenerateFn = std::function<Status(std::span<const int32_t> prompt, const GenerateOptions& opts,
                                            const TokenCallback& on_token, const std::atomic<bool>* cancel,
                                            GenerateStats* stats)>;

struct TaskOptions {
  int32_t max_tokens = 256;  // generated tokens at most (extract, rewrite)
  SamplingParams sampling = SamplingParams::greedy();
  bool chat = true;    // wrap the instruction in the package's chat template
  std::string system;  // optional system turn
  const std::atomic<bool>* cancel = nullptr;
  // extract: values by beam search (docs/tasks.md, "Beam search"): 1 = token-by-token greedy; N > 1 keeps N
  // alternatives of every value (greedy decoding only); 0 = the default, 2 under greedy decoding and 1 with a
  // temperature. A search costs up to N more KV caches (the answer's length, not the context) for the call
  // and about N times the decoding work inside values.
  int32_t beams = 0;
  // When set, free generation runs through it instead of the Session: rewriting, and extraction decoded
  // token by token (beams 1; the constraint masks every row, so the answer is the Session's under greedy
  // decoding). Label scoring (classify, route) and the value search (beams > 1) use the Session.
  TaskGenerateFn generate;
};

// The instruction line each task puts before the text when the caller gives none (docs/tasks.md: the
// default model was fine-tuned on these).
std::string default_instruction(std::string_view task, std::string_view text);

// A constraint for one generation: `schema_json` is a JSON schema of the supported subset (docs/tasks.md);
// empty means any JSON object (OpenAI's response_format json_object). `source_text` is what
// "x-pocket-copy" strings must be spans of. Errors: malformed JSON, unsupported keyword (named), an
// impossible schema.
// `ground_strings` marks every plain string property "x-pocket-copy". Number and integer properties marked
// "x-pocket-copy" (or all of them with `ground_strings`) may take only a number written in `source_text`
// (the schema is specialised to the request: an enum of those numbers). Compiled grammars are cached
// (keyed by the vocabulary and the schema text), so a repeated schema costs only its masks.
Expected<std::unique_ptr<TokenConstraint>> make_json_constraint(const Model& model,
                                                                std::string_view schema_json,
                                                                std::string_view source_text,
                                                                bool ground_strings = false);
// The same from a grammar in the GBNF-like text form (docs/tasks.md, "Grammars").
Expected<std::unique_ptr<TokenConstraint>> make_grammar_constraint(const Model& model,
                                                                   std::string_view grammar_text,
                                                                   std::string_view source_text = {});

struct ExtractResult {
  nlohmann::ordered_json value;  // valid against the schema
  std::string text;              // the generated text
  GenerateStats stats;
  std::vector<std::string> validation_errors;  // the independent validator's verdict (empty: valid)
  AnswerConfidence confidence;  // the model's certainty over the answer's tokens (answer_confidence.h)
  std::vector<int32_t> tokens;  // the answer's token ids (text is their decoding)
};
// Extracts `text` into the schema. `schema_json` may mark string properties "x-pocket-copy": true (values
// must be spans of `text`); `ground_strings` marks every string property so.
Expected<ExtractResult> task_extract(Session& s, std::string_view text, std::string_view schema_json,
                                     const TaskOptions& opts = {}, bool ground_strings = false,
                                     std::string_view instruction = {});

// The numbers written in `text` (digits with an optional fraction; a leading minus sign only where it
// stands as a sign), as JSON numbers: integers stay integers, "89.00" becomes 89. At most 64, in order.
std::vector<nlohmann::ordered_json> numbers_in_text(std::string_view text);

struct LabelScore {
  std::string label;
  double probability = 0.0;  // normalised over the label set
  double logprob = 0.0;      // the model's log-probability of the label's tokens and the end of the answer
  int32_t n_tokens = 0;
};
struct ClassifyResult {
  std::vector<LabelScore> labels;  // in the order given
  std::string top;
  double confidence = 0.0;  // the top label's probability (after temperature calibration)
  double margin = 0.0;      // top minus second probability
  double entropy = 0.0;     // of the normalised distribution, nats
};
// Scores every label as the answer: the prompt is evaluated once and each label's continuation (its
// tokens and the end-of-turn token) in one batched pass from that shared prefix. `calibration_t` divides
// the label log-probabilities before normalising (temperature scaling fitted on held-out data; 1 = none).
Expected<ClassifyResult> task_classify(Session& s, std::string_view text,
                                       const std::vector<std::string>& labels, const TaskOptions& opts = {},
                                       std::string_view instruction = {}, double calibration_t = 1.0);

struct RouteResult {
  std::string route;  // "local" or "cloud"
  double p_local = 0.0;
  double confidence = 0.0;  // of the decision, in [0, 1]
  ClassifyResult scores;
};
// Classification over {local, cloud}: "local" when p(local) >= threshold, else "cloud".
Expected<RouteResult> task_route(Session& s, std::string_view text, double threshold = 0.5,
                                 const TaskOptions& opts = {}, std::string_view instruction = {},
                                 double calibration_t = 1.0);

struct RewriteResult {
  std::string text;
  GenerateStats stats;
};
Expected<RewriteResult> task_rewrite(Session& s, std::string_view text, const TaskOptions& opts = {},
                                     std::string_view instruction = {});

struct RedactSpan {
  size_t begin = 0, end = 0;  // bytes of the input
  std::string kind;           // "phone", "id_card", "bank_card", "email", "name", "address"
  std::string source;         // "detector" or "model"
};
struct RedactResult {
  std::string text;  // the input with each span replaced by [KIND]
  std::vector<RedactSpan> spans;
};
// Deterministic detectors first (phones, ID-card numbers with their check digit, Luhn-valid bank cards,
// e-mails); then, when `s` is not null, the model extracts names and addresses as spans of the text.
Expected<RedactResult> task_redact(Session* s, std::string_view text, const TaskOptions& opts = {});

// One JSON request for every task (the server's POST /v1/pocket/task and the C API):
//   {"task":"extract","text":"…","schema":{…}[,"ground":true]} → {"result":{…},"valid":true,…}
//   {"task":"classify","text":"…","labels":["a","b"]}          → {"label":"a","confidence":…,"labels":[…]}
//   {"task":"route","text":"…"[,"threshold":0.5]}                → {"route":"local","p_local":…,…}
//   {"task":"rewrite","text":"…"}                                → {"text":"…"}
//   {"task":"redact","text":"…"[,"model":true]}                  → {"text":"…","spans":[…]}
// Optional in every request: "instruction", "max_tokens", "temperature", "seed", "system", "chat"; an unknown
// key is an error naming it. `cancel` (may be null) stops a running task with kCancelled.
// `generate` (may be empty): TaskOptions::generate for the request.
Expected<nlohmann::ordered_json> run_task(Session& s, const nlohmann::ordered_json& request,
                                          const std::atomic<bool>* cancel = nullptr,
                                          const TaskGenerateFn& generate = {});

// The JSON of a redaction of `text` (as run_task returns it): {"task":"redact","text":…,"spans":[…]}.
nlohmann::ordered_json redact_result_json(std::string_view text, const RedactResult& r);

}  // namespace pocket
