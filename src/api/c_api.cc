// The C API over Model/Session. Every entry point catches everything: no exception crosses into C.
#include <atomic>
#include <cstring>
#include <new>
#include <string>

#include "generate/session.h"
#include "speculative/speculative_session.h"
#include "task/task.h"
#include "pocket/pocket.h"

struct pocket_model {
  std::shared_ptr<const pocket::Model> model;
};

struct pocket_session {
  std::unique_ptr<pocket::Session> session;            // plain decoding, or
  std::unique_ptr<pocket::SpeculativeSession> spec;   // speculative decoding (spec_method != NONE); then
                                                       // `session` is created on the first task call, for
                                                       // the task layer's label scoring and value search
  pocket::SessionOptions options;                      // what the session was created with
  std::shared_ptr<const pocket::Model> model;
  std::atomic<bool> cancel{false};
};

namespace {

thread_local std::string g_last_error;

static_assert(POCKET_ERR_INTERNAL == static_cast<int>(pocket::ErrorCode::kInternal), "status codes drifted");

pocket_status fail(const pocket::Status& st) {
  g_last_error = st.to_string();
  return static_cast<pocket_status>(st.code());
}

pocket_status fail(pocket_status code, const std::string& msg) {
  g_last_error = msg;
  return code;
}

template <typename Fn>
pocket_status guarded(Fn&& fn) {
  try {
    g_last_error.clear();
    return fn();
  } catch (const std::bad_alloc&) {
    return fail(POCKET_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(POCKET_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(POCKET_ERR_INTERNAL, "internal error: unknown exception");
  }
}

}  // namespace

extern "C" {

const char* pocket_last_error(void) { return g_last_error.c_str(); }

const char* pocket_status_name(pocket_status status) {
  if (status == POCKET_ERR_BUFFER_TOO_SMALL) return "buffer too small";
  if (status < 0 || status > POCKET_ERR_INTERNAL) return "unknown status";
  return pocket::error_code_name(static_cast<pocket::ErrorCode>(status));
}

pocket_model_params pocket_model_default_params(void) {
  pocket_model_params p;
  p.use_mmap = 1;
  return p;
}

pocket_status pocket_model_load_ex(const char* path, const pocket_model_params* params, pocket_model** out) {
  return guarded([&]() -> pocket_status {
    if (out == nullptr) return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_model_load: out is NULL");
    *out = nullptr;
    if (path == nullptr) return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_model_load: path is NULL");
    const pocket_model_params p = params != nullptr ? *params : pocket_model_default_params();
    pocket::OpenOptions o;
    o.load = p.use_mmap != 0 ? pocket::FileLoad::kMap : pocket::FileLoad::kRead;
    auto m = pocket::Model::load(path, o);
    if (!m) return fail(m.status());
    *out = new pocket_model{std::move(*m)};
    return POCKET_OK;
  });
}

pocket_status pocket_model_load(const char* path, pocket_model** out) { return pocket_model_load_ex(path, nullptr, out); }

void pocket_model_free(pocket_model* model) { delete model; }

int32_t pocket_model_n_vocab(const pocket_model* m) {
  return m ? static_cast<int32_t>(m->model->hparams().n_vocab) : 0;
}
int32_t pocket_model_n_ctx_train(const pocket_model* m) {
  return m ? static_cast<int32_t>(m->model->hparams().n_ctx_train) : 0;
}
int32_t pocket_model_bos(const pocket_model* m) { return m ? m->model->tokenizer().bos_id() : -1; }
int32_t pocket_model_eos(const pocket_model* m) { return m ? m->model->tokenizer().eos_id() : -1; }

pocket_status pocket_tokenize(const pocket_model* m, const char* text, size_t len, int32_t add_bos,
                              int32_t parse_special, int32_t* tokens, size_t capacity, size_t* n_tokens) {
  return guarded([&]() -> pocket_status {
    if (m == nullptr || n_tokens == nullptr || (text == nullptr && len > 0) || (tokens == nullptr && capacity > 0)) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_tokenize: NULL argument");
    }
    std::vector<int32_t> ids;
    pocket::EncodeOptions eo;
    eo.add_bos = add_bos != 0;
    eo.parse_special = parse_special != 0;
    if (auto st = m->model->tokenizer().encode(std::string_view(text ? text : "", len), eo, &ids); !st.is_ok()) {
      return fail(st);
    }
    *n_tokens = ids.size();
    if (capacity < ids.size()) {
      return fail(POCKET_ERR_BUFFER_TOO_SMALL, "pocket_tokenize: " + std::to_string(ids.size()) + " tokens needed");
    }
    if (!ids.empty()) std::memcpy(tokens, ids.data(), ids.size() * sizeof(int32_t));
    return POCKET_OK;
  });
}

pocket_status pocket_detokenize(const pocket_model* m, const int32_t* tokens, size_t n_tokens, char* text,
                                size_t capacity, size_t* n_bytes) {
  return guarded([&]() -> pocket_status {
    if (m == nullptr || n_bytes == nullptr || (tokens == nullptr && n_tokens > 0) || (text == nullptr && capacity > 0)) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_detokenize: NULL argument");
    }
    const int32_t n_vocab = m->model->tokenizer().n_vocab();
    for (size_t i = 0; i < n_tokens; ++i) {
      if (tokens[i] < 0 || tokens[i] >= n_vocab) {
        return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_detokenize: token " + std::to_string(tokens[i]) +
                                                     " at index " + std::to_string(i) + " is outside the vocabulary");
      }
    }
    const std::string s = m->model->tokenizer().decode(std::span<const int32_t>(tokens, n_tokens));
    *n_bytes = s.size();
    if (capacity < s.size()) return fail(POCKET_ERR_BUFFER_TOO_SMALL, "pocket_detokenize: buffer too small");
    if (!s.empty()) std::memcpy(text, s.data(), s.size());
    return POCKET_OK;
  });
}

pocket_session_params pocket_session_default_params(void) {
  pocket_session_params p;
  std::memset(&p, 0, sizeof p);
  p.spec_method = POCKET_SPEC_NONE;
  p.draft_max = 8;
  p.spec_fallback = 1;
  return p;
}

pocket_status pocket_session_create(const pocket_model* m, const pocket_session_params* params, pocket_session** out) {
  return guarded([&]() -> pocket_status {
    if (out == nullptr) return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_session_create: out is NULL");
    *out = nullptr;
    if (m == nullptr) return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_session_create: model is NULL");
    const pocket_session_params p = params ? *params : pocket_session_default_params();
    pocket::SessionOptions so;
    so.n_ctx = p.n_ctx;
    so.n_threads = p.n_threads;
    so.n_batch = p.n_batch;
    so.mem_budget_bytes = p.mem_budget_bytes;
    if (p.spec_method != POCKET_SPEC_NONE) {
      pocket::SpeculativeOptions spec;
      if (p.spec_method == POCKET_SPEC_NGRAM) spec.method = pocket::SpecMethod::kNgram;
      else if (p.spec_method == POCKET_SPEC_DRAFT) spec.method = pocket::SpecMethod::kDraftModel;
      else if (p.spec_method == POCKET_SPEC_BLOCK) spec.method = pocket::SpecMethod::kBlock;
      else return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_session_create: unknown spec_method " +
                                                        std::to_string(p.spec_method));
      spec.draft_max = p.draft_max;
      spec.fallback.enabled = p.spec_fallback != 0;
      if (p.draft_model != nullptr) spec.draft_model_path = p.draft_model;
      auto s = pocket::SpeculativeSession::create(m->model, so, spec);
      if (!s) return fail(s.status());
      auto* h = new pocket_session();
      h->spec = std::move(*s);
      h->options = so;
      h->model = m->model;
      *out = h;
      return POCKET_OK;
    }
    auto s = pocket::Session::create(m->model, so);
    if (!s) return fail(s.status());
    auto* h = new pocket_session();
    h->session = std::move(*s);
    h->options = so;
    h->model = m->model;
    *out = h;
    return POCKET_OK;
  });
}

void pocket_session_free(pocket_session* s) { delete s; }

pocket_status pocket_session_reset(pocket_session* s) {
  return guarded([&]() -> pocket_status {
    if (s == nullptr) return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_session_reset: session is NULL");
    if (s->spec) s->spec->reset();
    else s->session->reset();
    return POCKET_OK;
  });
}

pocket_status pocket_session_spec_stats(const pocket_session* s, pocket_spec_stats* out) {
  return guarded([&]() -> pocket_status {
    if (s == nullptr || out == nullptr) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_session_spec_stats: session or out is NULL");
    }
    *out = pocket_spec_stats{};
    if (!s->spec) return POCKET_OK;
    const pocket::SpecStats& st = s->spec->spec_stats();
    out->n_passes = st.n_passes;
    out->n_drafted = st.n_drafted;
    out->n_accepted = st.n_accepted;
    out->n_plain = st.n_plain;
    out->tokens_per_pass = st.tokens_per_pass();
    out->acceptance_rate = st.acceptance_rate();
    return POCKET_OK;
  });
}

const char* pocket_session_spec_off_reason(const pocket_session* s) {
  if (s == nullptr || !s->spec) return "";
  return s->spec->spec_disabled_reason().c_str();
}

void pocket_session_cancel(pocket_session* s) {
  if (s != nullptr) s->cancel.store(true);
}

pocket_generate_params pocket_generate_default_params(void) {
  pocket_generate_params p;
  std::memset(&p, 0, sizeof p);
  p.n_predict = 128;
  p.temperature = 0.0f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  p.repeat_penalty = 1.0f;
  p.repeat_last_n = 64;
  p.add_bos = 1;
  return p;
}

pocket_status pocket_generate(pocket_session* s, const char* prompt, size_t len, const pocket_generate_params* params,
                              pocket_token_callback callback, void* user_data, pocket_generate_stats* stats) {
  return guarded([&]() -> pocket_status {
    if (s == nullptr || (prompt == nullptr && len > 0)) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_generate: NULL argument");
    }
    const pocket_generate_params p = params ? *params : pocket_generate_default_params();
    pocket::GenerateOptions go;
    go.n_predict = p.n_predict;
    go.add_bos = p.add_bos != 0;
    go.parse_special = p.parse_special != 0;
    go.sampling.temperature = p.temperature;
    go.sampling.top_k = p.top_k;
    go.sampling.top_p = p.top_p;
    go.sampling.min_p = p.min_p;
    go.sampling.repeat_penalty = p.repeat_penalty;
    go.sampling.repeat_last_n = p.repeat_last_n;
    go.sampling.seed = p.seed;
    s->cancel.store(false);
    pocket::GenerateStats gs;
    pocket::TokenCallback cb;
    if (callback != nullptr) {
      cb = [&](int32_t id, std::string_view text) { return callback(user_data, id, text.data(), text.size()) != 0; };
    }
    const std::string_view text(prompt ? prompt : "", len);
    pocket::Status st = s->spec ? s->spec->generate(text, go, cb, &s->cancel, &gs)
                                : s->session->generate(text, go, cb, &s->cancel, &gs);
    if (stats != nullptr) {
      stats->n_prompt = static_cast<int32_t>(gs.n_prompt);
      stats->n_generated = static_cast<int32_t>(gs.n_generated);
      stats->prefill_tokens_per_second = gs.prefill_tps();
      stats->decode_tokens_per_second = gs.decode_tps();
    }
    if (!st.is_ok()) return fail(st);
    return POCKET_OK;
  });
}

/* App tasks ---------------------------------------------------------------------------------------------- */

namespace {

thread_local std::string g_task_result;

// Runs `req` and keeps the result for the caller (valid until this thread's next task). On a speculative
// session, free generation runs on it and the rest on a plain session created beside it on first use, within
// what the memory budget leaves.
pocket_status run_task_request(pocket_session* s, const nlohmann::ordered_json& req, const char** result_json) {
  pocket::TaskGenerateFn gen;
  if (s->spec) {
    if (!s->session) {
      pocket::SessionOptions so = s->options;
      // The target's mapped weights are shared: only the speculative session's own bytes (and a drafter's)
      // come off the budget the plain session's plan (weights included) must fit.
      const uint64_t used = s->spec->plan().total() - s->model->package().file_size();
      if (so.mem_budget_bytes > 0) {
        if (used >= so.mem_budget_bytes) {
          return fail(POCKET_ERR_OUT_OF_MEMORY,
                      "pocket_task: the speculative session uses the whole memory budget; the task layer needs a "
                      "plain session beside it");
        }
        so.mem_budget_bytes -= used;
      }
      auto plain = pocket::Session::create(s->model, so);
      if (!plain) return fail(plain.status());
      s->session = std::move(*plain);
    }
    pocket::SpeculativeSession* sp = s->spec.get();
    gen = [sp](std::span<const int32_t> prompt, const pocket::GenerateOptions& go, const pocket::TokenCallback& cb,
               const std::atomic<bool>* c, pocket::GenerateStats* st) {
      sp->reset();
      return sp->generate_tokens(prompt, go, cb, c, st);
    };
  }
  s->cancel.store(false);
  auto r = pocket::run_task(*s->session, req, &s->cancel, gen);  // pocket_session_cancel reaches the task
  if (!r) return fail(r.status());
  g_task_result = r->dump();
  *result_json = g_task_result.c_str();
  return POCKET_OK;
}

}  // namespace

pocket_status pocket_task_run(pocket_session* s, const char* request_json, size_t len, const char** result_json) {
  return guarded([&]() -> pocket_status {
    if (s == nullptr || result_json == nullptr || (request_json == nullptr && len > 0)) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_task_run: NULL argument");
    }
    nlohmann::ordered_json req = nlohmann::ordered_json::parse(std::string_view(request_json ? request_json : "", len), nullptr, false);
    if (req.is_discarded()) return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_task_run: the request is not valid JSON");
    return run_task_request(s, req, result_json);
  });
}

pocket_status pocket_task_extract(pocket_session* s, const char* text, size_t len, const char* schema_json,
                                  int32_t ground, const char** result_json) {
  return guarded([&]() -> pocket_status {
    if (s == nullptr || result_json == nullptr || (text == nullptr && len > 0)) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_task_extract: NULL argument");
    }
    nlohmann::ordered_json req = {{"task", "extract"}, {"text", std::string(text ? text : "", len)}, {"ground", ground != 0}};
    if (schema_json != nullptr && schema_json[0] != '\0') {
      nlohmann::ordered_json schema = nlohmann::ordered_json::parse(schema_json, nullptr, false);
      if (schema.is_discarded()) return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_task_extract: the schema is not valid JSON");
      req["schema"] = std::move(schema);
    }
    return run_task_request(s, req, result_json);
  });
}

pocket_status pocket_task_classify(pocket_session* s, const char* text, size_t len, const char* const* labels,
                                   size_t n_labels, const char** result_json) {
  return guarded([&]() -> pocket_status {
    if (s == nullptr || result_json == nullptr || (text == nullptr && len > 0) || (labels == nullptr && n_labels > 0)) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_task_classify: NULL argument");
    }
    nlohmann::ordered_json ls = nlohmann::ordered_json::array();
    for (size_t i = 0; i < n_labels; ++i) {
      if (labels[i] == nullptr) return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_task_classify: a NULL label");
      ls.push_back(labels[i]);
    }
    nlohmann::ordered_json req = {{"task", "classify"}, {"text", std::string(text ? text : "", len)}, {"labels", ls}};
    return run_task_request(s, req, result_json);
  });
}

pocket_status pocket_task_route(pocket_session* s, const char* text, size_t len, double threshold,
                                const char** result_json) {
  return guarded([&]() -> pocket_status {
    if (s == nullptr || result_json == nullptr || (text == nullptr && len > 0)) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_task_route: NULL argument");
    }
    if (!(threshold >= 0.0 && threshold <= 1.0)) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_task_route: threshold must be in [0, 1]");
    }
    nlohmann::ordered_json req = {{"task", "route"}, {"text", std::string(text ? text : "", len)}, {"threshold", threshold}};
    return run_task_request(s, req, result_json);
  });
}

pocket_status pocket_task_redact(pocket_session* s, const char* text, size_t len, const char** result_json) {
  return guarded([&]() -> pocket_status {
    if (result_json == nullptr || (text == nullptr && len > 0)) {
      return fail(POCKET_ERR_INVALID_ARGUMENT, "pocket_task_redact: NULL argument");
    }
    const std::string t(text ? text : "", len);
    if (s != nullptr) return run_task_request(s, {{"task", "redact"}, {"text", t}, {"model", true}}, result_json);
    auto r = pocket::task_redact(nullptr, t, pocket::TaskOptions{});
    if (!r) return fail(r.status());
    g_task_result = pocket::redact_result_json(t, *r).dump();
    *result_json = g_task_result.c_str();
    return POCKET_OK;
  });
}

}  // extern "C"
