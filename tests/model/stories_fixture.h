// Converts ../shared/data's stories260K into a temporary .pocket once per test binary.
#pragma once

#include <algorithm>
#include <memory>
#include <fstream>
#include <span>
#include <sstream>
#include <string>

#include "convert/llama2c_importer.h"
#include "model/model.h"
#include "model/transformer.h"
#include "test_util.h"

namespace pocket::testing {

// The converted package path, or "" when the reference data is absent.
inline std::string stories260k_package(DType dtype = DType::kF32) {
  static TempDir dir;
  const std::string data = shared_data_dir();
  if (data.empty()) return "";
  const std::string out = dir.file(std::string("stories260K-") + std::string(dtype_name(dtype)) + ".pocket");
  if (!std::filesystem::exists(out)) {
    Llama2cImportOptions o;
    o.tokenizer_path = data + "/models/stories260K/tok512.bin";
    o.dtype = dtype;
    Status st = import_llama2c(data + "/models/stories260K/stories260K.bin", out, o);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return out;
}

// Reads "PROMPT_TOKENS n: ..." or "ALL_IDS(n): ..." from a pN.ids file.
inline std::vector<int32_t> read_ids_line(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) {
      std::vector<int32_t> ids;
      std::istringstream ss(line.substr(line.find(':') + 1));
      int32_t v;
      while (ss >> v) ids.push_back(v);
      return ids;
    }
  }
  return {};
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Teacher-forced logits of every position of `ids` ([ids.size()][n_vocab]) in one forward pass over a fresh
// two-thread session of `package`, opened with `open`. Empty (after a test failure) if anything fails.
inline std::vector<float> teacher_forced_logits(const std::string& package, std::span<const int32_t> ids,
                                                const OpenOptions& open = {}) {
  auto model = Model::load(package, open);
  EXPECT_TRUE(model) << model.status().to_string();
  if (!model) return {};
  ThreadPool pool(2);
  SessionShape shape;
  shape.n_ctx = static_cast<int64_t>(ids.size());
  shape.n_logit_rows = shape.n_ctx;
  auto tf = Transformer::create(*model, shape, &pool);
  EXPECT_TRUE(tf) << tf.status().to_string();
  if (!tf) return {};
  EXPECT_TRUE((*tf)->forward(ids, /*all_logits=*/true).is_ok());
  const int64_t n = shape.n_ctx, vocab = (*model)->hparams().n_vocab;
  std::vector<float> out(static_cast<size_t>(n * vocab));
  for (int64_t p = 0; p < n; ++p) std::copy_n((*tf)->logits(p), vocab, out.data() + p * vocab);
  return out;
}

}  // namespace pocket::testing
