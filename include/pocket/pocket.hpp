// pocket C++ API: RAII wrappers over the C API for C++ users (no exceptions; errors as pocket::Error).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pocket/pocket.h"

namespace pocket::api {

struct Error {
  pocket_status code = POCKET_OK;
  std::string message;
  explicit operator bool() const { return code != POCKET_OK; }  // true when there is an error
};

inline Error last_error(pocket_status code) { return {code, pocket_last_error()}; }

class Model {
 public:
  static std::pair<Model, Error> load(const std::string& path,
                                      const pocket_model_params& p = pocket_model_default_params()) {
    pocket_model* m = nullptr;
    pocket_status s = pocket_model_load_ex(path.c_str(), &p, &m);
    return {Model(m), s == POCKET_OK ? Error{} : last_error(s)};
  }
  pocket_model* get() const { return m_.get(); }
  explicit operator bool() const { return m_ != nullptr; }
  int32_t n_vocab() const { return pocket_model_n_vocab(get()); }

  std::pair<std::vector<int32_t>, Error> tokenize(std::string_view text, bool add_bos = false) const {
    size_t n = 0;
    pocket_status s = pocket_tokenize(get(), text.data(), text.size(), add_bos, 0, nullptr, 0, &n);
    if (s != POCKET_OK && s != POCKET_ERR_BUFFER_TOO_SMALL) return {{}, last_error(s)};
    std::vector<int32_t> ids(n);
    s = pocket_tokenize(get(), text.data(), text.size(), add_bos, 0, ids.data(), ids.size(), &n);
    return {ids, s == POCKET_OK ? Error{} : last_error(s)};
  }
  std::pair<std::string, Error> detokenize(const std::vector<int32_t>& ids) const {
    size_t n = 0;
    pocket_status s = pocket_detokenize(get(), ids.data(), ids.size(), nullptr, 0, &n);
    if (s != POCKET_OK && s != POCKET_ERR_BUFFER_TOO_SMALL) return {{}, last_error(s)};
    std::string text(n, '\0');
    s = pocket_detokenize(get(), ids.data(), ids.size(), text.data(), text.size(), &n);
    return {text, s == POCKET_OK ? Error{} : last_error(s)};
  }

 private:
  explicit Model(pocket_model* m) : m_(m, &pocket_model_free) {}
  std::shared_ptr<pocket_model> m_;
};

class Session {
 public:
  static std::pair<Session, Error> create(const Model& model, const pocket_session_params& p = pocket_session_default_params()) {
    pocket_session* s = nullptr;
    pocket_status st = pocket_session_create(model.get(), &p, &s);
    return {Session(s), st == POCKET_OK ? Error{} : last_error(st)};
  }
  pocket_session* get() const { return s_.get(); }
  explicit operator bool() const { return s_ != nullptr; }
  void cancel() { pocket_session_cancel(get()); }

  // Generates, appending the text to *out and calling on_text for each piece (may be empty).
  template <typename OnText>
  Error generate(std::string_view prompt, const pocket_generate_params& p, OnText&& on_text,
                 pocket_generate_stats* stats = nullptr) {
    auto cb = [](void* ud, int32_t, const char* text, size_t len) -> int32_t {
      return (*static_cast<OnText*>(ud))(std::string_view(text, len)) ? 1 : 0;
    };
    pocket_status s = pocket_generate(get(), prompt.data(), prompt.size(), &p, cb, &on_text, stats);
    return s == POCKET_OK ? Error{} : last_error(s);
  }

  // Runs one app task given as a JSON request (pocket_task_run; docs/tasks.md) and returns its JSON result.
  std::pair<std::string, Error> task(std::string_view request_json) {
    const char* result = nullptr;
    pocket_status s = pocket_task_run(get(), request_json.data(), request_json.size(), &result);
    return s == POCKET_OK ? std::pair<std::string, Error>{result, Error{}} : std::pair<std::string, Error>{{}, last_error(s)};
  }

  // Speculative decoding's counters for the last generate() (all zero without speculation).
  pocket_spec_stats spec_stats() const {
    pocket_spec_stats st{};
    if (get() != nullptr) (void)pocket_session_spec_stats(get(), &st);
    return st;
  }
  // Why the speculation asked for was switched off at creation ("" when it speculates as asked).
  std::string spec_off_reason() const { return pocket_session_spec_off_reason(get()); }

 private:
  explicit Session(pocket_session* s) : s_(s, &pocket_session_free) {}
  std::unique_ptr<pocket_session, decltype(&pocket_session_free)> s_;
};

}  // namespace pocket::api
