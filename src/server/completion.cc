// Request → tokens → generation → OpenAI response, for both endpoints (see completion.h).
#include "server/completion.h"

#include <span>

#include <algorithm>

#include "server/stop_matcher.h"
#include "generate/chat_prompt.h"
#include "task/task.h"
#include "tokenizer/chat_template.h"

namespace pocket::server {

using nlohmann::json;

Expected<PreparedCompletion> prepare_completion(const Model& model, int64_t n_ctx, const CompletionRequest& req,
                                                int64_t max_tokens_limit) {
  PreparedCompletion p;
  GenerateOptions& go = p.options;
  go.add_bos = true;
  go.parse_special = req.chat;
  go.stop_at_eos = !req.ignore_eos;
  // The package's sampling defaults, with the request's temperature, top_p and seed over them.
  const SamplingDefaults& def = model.config().sampling;
  SamplingParams& sp = go.sampling;
  sp.temperature = def.temperature;
  sp.top_k = def.top_k;
  sp.top_p = def.top_p;
  sp.min_p = def.min_p;
  sp.repeat_penalty = def.repeat_penalty;
  sp.repeat_last_n = def.repeat_last_n;
  if (req.temperature) go.sampling.temperature = *req.temperature;
  if (req.top_p) go.sampling.top_p = *req.top_p;
  go.sampling.seed = req.seed.value_or(0);

  if (req.chat) {
    // As `pocket run --chat`: the package's template and BOS rule, the messages' contents as plain text (a
    // user typing "<|im_end|>" cannot close their turn).
    POCKET_ASSIGN_OR_RETURN(p.prompt_ids, render_chat_ids(model, req.messages, true));
  } else {
    EncodeOptions eo;  // what Session::generate does for an empty session
    eo.add_bos = go.add_bos && model.config().add_bos;
    eo.parse_special = go.parse_special;
    POCKET_RETURN_IF_ERROR(model.tokenizer().encode(req.prompt, eo, &p.prompt_ids));
  }
  const int64_t n_prompt = static_cast<int64_t>(p.prompt_ids.size());
  if (n_prompt == 0) return invalid_argument("[server] the prompt encodes to no tokens");
  if (n_prompt >= n_ctx) {
    return Status(ErrorCode::kContextExceeded, "[server] the prompt has " + std::to_string(n_prompt) +
                                                   " tokens, which leaves no room in the context of " +
                                                   std::to_string(n_ctx) + " tokens");
  }
  if (req.max_tokens) {
    if (*req.max_tokens > max_tokens_limit) {
      return invalid_argument("[server] 'max_tokens' is " + std::to_string(*req.max_tokens) +
                              "; this server allows at most " + std::to_string(max_tokens_limit) + " (--max-tokens)");
    }
    if (n_prompt + *req.max_tokens > n_ctx) {
      return Status(ErrorCode::kContextExceeded,
                    "[server] the prompt has " + std::to_string(n_prompt) + " tokens and 'max_tokens' is " +
                        std::to_string(*req.max_tokens) + ": together past the context of " + std::to_string(n_ctx) +
                        " tokens");
    }
    go.n_predict = static_cast<int32_t>(*req.max_tokens);
  } else {
    go.n_predict = static_cast<int32_t>(std::min(max_tokens_limit, n_ctx - n_prompt));
  }
  if (req.format != ResponseFormat::kText) {
    // The task layer's constrained decoding: every token keeps the output a prefix of a JSON value of the
    // schema (json_object: any object). "x-pocket-copy" strings must be spans of what the user wrote.
    std::string source;
    for (const ChatMessage& m : req.messages) {
      if (m.role == "user") source += m.content + "\n";
    }
    const std::string_view schema = req.format == ResponseFormat::kJsonObject ? std::string_view() : req.schema_json;
    auto c = make_json_constraint(model, schema, source);
    if (!c) return Status(c.status().code(), "[server] response_format: " + c.status().message());
    p.constraint = std::move(*c);
  }
  p.stop = req.stop;
  return p;
}

namespace {

// Generates through `generate` (a plain or a speculative session's generate_tokens).
using GenerateFn = std::function<Status(std::span<const int32_t>, const GenerateOptions&, const TokenCallback&,
                                        const std::atomic<bool>*, GenerateStats*)>;

Status run_with(const GenerateFn& generate, PreparedCompletion& p, std::atomic<bool>& cancel,
                const std::function<bool(std::string_view)>& emit, const std::function<bool()>& client_alive,
                CompletionResult* out) {
  *out = CompletionResult{};
  StopMatcher stops(p.stop);
  bool gone = false;
  const TokenCallback on_token = [&](int32_t, std::string_view text) {
    if (client_alive && !client_alive()) {
      gone = true;
      cancel.store(true);
      return false;
    }
    std::string piece = stops.push(text);
    if (!piece.empty()) {
      out->text += piece;
      if (emit && !emit(piece)) {
        gone = true;
        cancel.store(true);
        return false;
      }
    }
    return !stops.stopped();
  };
  p.options.constraint = p.constraint.get();
  Status st = generate(p.prompt_ids, p.options, on_token, &cancel, &out->stats);
  if (gone) return Status(ErrorCode::kCancelled, "[server] the client closed the connection");
  POCKET_RETURN_IF_ERROR(st);
  if (!stops.stopped()) {
    std::string tail = stops.flush();
    if (!tail.empty()) {
      out->text += tail;
      if (emit && !emit(tail)) return Status(ErrorCode::kCancelled, "[server] the client closed the connection");
    }
  }
  const StopReason r = out->stats.stop;
  out->finish_reason = (r == StopReason::kLength || r == StopReason::kContextFull) ? "length" : "stop";
  return Status::ok();
}

}  // namespace

Status run_completion(Session& s, PreparedCompletion& p, std::atomic<bool>& cancel,
                      const std::function<bool(std::string_view)>& emit, const std::function<bool()>& client_alive,
                      CompletionResult* out) {
  const GenerateFn gen = [&s](std::span<const int32_t> ids, const GenerateOptions& o, const TokenCallback& cb,
                              const std::atomic<bool>* c, GenerateStats* st) {
    return s.generate_tokens(ids, o, cb, c, st);
  };
  return run_with(gen, p, cancel, emit, client_alive, out);
}

Status run_completion(SpeculativeSession& s, PreparedCompletion& p, std::atomic<bool>& cancel,
                      const std::function<bool(std::string_view)>& emit, const std::function<bool()>& client_alive,
                      CompletionResult* out) {
  const GenerateFn gen = [&s](std::span<const int32_t> ids, const GenerateOptions& o, const TokenCallback& cb,
                              const std::atomic<bool>* c, GenerateStats* st) {
    return s.generate_tokens(ids, o, cb, c, st);
  };
  POCKET_RETURN_IF_ERROR(run_with(gen, p, cancel, emit, client_alive, out));
  out->speculative = true;
  out->spec = s.spec_stats();
  return Status::ok();
}

json usage_json(const GenerateStats& st) {
  return json{{"prompt_tokens", st.n_prompt},
              {"completion_tokens", st.n_generated},
              {"total_tokens", st.n_prompt + st.n_generated}};
}

json timings_json(const CompletionResult& r, double queue_ms) {
  const GenerateStats& st = r.stats;
  json t{{"queue_ms", queue_ms},
         {"prompt_ms", st.prefill_seconds * 1e3},
         {"prompt_per_second", st.prefill_tps()},
         {"predicted_ms", st.decode_seconds * 1e3},
         {"predicted_per_second", st.decode_tps()}};
  if (r.speculative) {
    t["draft_n"] = r.spec.n_drafted;
    t["draft_n_accepted"] = r.spec.n_accepted;
    t["target_passes"] = r.spec.n_passes;
    t["plain_passes"] = r.spec.n_plain;
  }
  return t;
}

json completion_response(const CompletionRequest& req, const std::string& id, int64_t created, const std::string& model,
                         const CompletionResult& r, double queue_ms) {
  json choice = {{"index", 0}, {"finish_reason", r.finish_reason}, {"logprobs", nullptr}};
  if (req.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", r.text}};
  } else {
    choice["text"] = r.text;
  }
  return json{{"id", id},
              {"object", req.chat ? "chat.completion" : "text_completion"},
              {"created", created},
              {"model", model},
              {"choices", json::array({choice})},
              {"usage", usage_json(r.stats)},
              {"timings", timings_json(r, queue_ms)}};
}

json completion_chunk(const CompletionRequest& req, const std::string& id, int64_t created, const std::string& model,
                      std::string_view delta, bool first, const std::string& finish_reason) {
  json choice = {{"index", 0}, {"logprobs", nullptr}};
  choice["finish_reason"] = finish_reason.empty() ? json(nullptr) : json(finish_reason);
  if (req.chat) {
    json d = json::object();
    if (first) d["role"] = "assistant";
    if (!delta.empty() || first) d["content"] = std::string(delta);
    choice["delta"] = d;
  } else {
    choice["text"] = std::string(delta);
  }
  return json{{"id", id},
              {"object", req.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", created},
              {"model", model},
              {"choices", json::array({choice})}};
}

}  // namespace pocket::server
