// Models for the server tests: a random tiny package synthesised once per binary (no chat template), and
// the shipped pocket-nano (ChatML) from the source tree.
#pragma once

#include <filesystem>
#include <memory>

#include "convert/synth.h"
#include "model/model.h"
#include "test_util.h"

namespace pocket::server::testing {

inline std::shared_ptr<const Model> tiny_model() {
  static pocket::testing::TempDir dir;
  static std::shared_ptr<const Model> model = [] {
    auto h = architecture_preset("tiny");
    EXPECT_TRUE(h);
    const std::string path = dir.file("tiny.pocket");
    SynthOptions o;
    o.dtype = DType::kF32;
    o.seed = 11;
    EXPECT_TRUE(synthesize_model(*h, path, o).is_ok());
    auto m = Model::load(path);
    EXPECT_TRUE(m) << m.status().to_string();
    return m ? *m : nullptr;
  }();
  return model;
}

inline std::string nano_path() { return std::string(POCKET_SOURCE_DIR) + "/models/pocket-nano-q4.pocket"; }

// Null when the package is absent (the caller skips).
inline std::shared_ptr<const Model> nano_model() {
  static std::shared_ptr<const Model> model = []() -> std::shared_ptr<const Model> {
    if (!std::filesystem::exists(nano_path())) return nullptr;
    auto m = Model::load(nano_path());
    EXPECT_TRUE(m) << m.status().to_string();
    return m ? *m : nullptr;
  }();
  return model;
}

#define POCKET_REQUIRE_NANO(var)                                         \
  auto var = ::pocket::server::testing::nano_model();                    \
  if (!var) GTEST_SKIP() << ::pocket::server::testing::nano_path() << " is absent"

}  // namespace pocket::server::testing
