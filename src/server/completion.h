// One completion on a Session: a checked CompletionRequest becomes prompt tokens and generation options
// (the same chat rendering, BOS and stop tokens as `pocket run --chat`), runs with stop strings and
// cancellation, and its result becomes OpenAI's response and stream-chunk shapes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "generate/session.h"
#include "sampling/token_constraint.h"
#include "server/openai_request.h"

namespace pocket::server {

struct PreparedCompletion {
  std::vector<int32_t> prompt_ids;
  GenerateOptions options;        // n_predict, sampling, special-token parsing; constraint set from `constraint`
  std::vector<std::string> stop;  // stop strings
  std::unique_ptr<TokenConstraint> constraint;  // response_format json_object / json_schema, else null
};

// Renders and tokenises the request and sizes the generation. Errors (all 400s): a chat the package's
// template rejects, a prompt that does not fit in `n_ctx` (kContextExceeded), max_tokens above
// `max_tokens_limit`, prompt + max_tokens past the context (kContextExceeded), a response_format schema
// the task layer's constrained decoding cannot compile (malformed, an unsupported keyword, impossible).
Expected<PreparedCompletion> prepare_completion(const Model& model, int64_t n_ctx, const CompletionRequest& req,
                                                int64_t max_tokens_limit);

struct CompletionResult {
  std::string text;           // what the client got, stop string excluded
  GenerateStats stats;
  std::string finish_reason;  // "stop" (stop token, stop string, complete JSON) or "length"
};

// Generates on `s` (which must be empty). `emit` gets each safe-to-send piece of text; returning false
// means the client is gone and stops generation. `client_alive` is polled once per token. Returns
// kCancelled when `cancel` was raised or the client went away.
Status run_completion(Session& s, PreparedCompletion& p, std::atomic<bool>& cancel,
                      const std::function<bool(std::string_view)>& emit, const std::function<bool()>& client_alive,
                      CompletionResult* out);

// Response shapes. `id` is "chatcmpl-…" or "cmpl-…", `created` Unix seconds.
nlohmann::json usage_json(const GenerateStats& st);
nlohmann::json timings_json(const GenerateStats& st, double queue_ms);
nlohmann::json completion_response(const CompletionRequest& req, const std::string& id, int64_t created,
                                   const std::string& model, const CompletionResult& r, double queue_ms);
// One streamed chunk: `delta` text (chat: {"content": …}; the first chunk also carries the role), and the
// finish reason on the last (empty: null).
nlohmann::json completion_chunk(const CompletionRequest& req, const std::string& id, int64_t created,
                                const std::string& model, std::string_view delta, bool first,
                                const std::string& finish_reason);

}  // namespace pocket::server
