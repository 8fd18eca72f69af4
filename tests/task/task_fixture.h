// Shared by the task-layer tests: the default model committed under models/ (pocket-nano, a real bilingual
// model fine-tuned on the app tasks), loaded once per test binary.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "generate/session.h"
#include "model/model.h"

namespace pocket::testing {

inline std::string nano_path() {
  // tests/task/ -> the repository's models/.
  return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "models" /
          "pocket-nano-q4.pocket")
      .string();
}

inline std::shared_ptr<const Model> nano_model() {
  static std::shared_ptr<const Model> m = [] {
    auto r = Model::load(nano_path());
    EXPECT_TRUE(r) << r.status().to_string();
    return r ? *r : nullptr;
  }();
  return m;
}

inline std::unique_ptr<Session> nano_session(int64_t n_logit_rows = 16, int64_t n_ctx = 0) {
  SessionOptions so;
  so.n_threads = 1;
  so.n_logit_rows = n_logit_rows;
  so.n_ctx = n_ctx;
  auto s = Session::create(nano_model(), so);
  EXPECT_TRUE(s) << s.status().to_string();
  return s ? std::move(*s) : nullptr;
}

}  // namespace pocket::testing
