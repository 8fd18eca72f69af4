// A model read into memory (FileLoad::kRead, `--no-mmap`) computes exactly what the mapped one computes: same
// bytes, same kernels, bit-identical logits, for the float32 reference path and a quantised package.
#include <gtest/gtest.h>

#include <vector>

#include "convert/quantize_model.h"
#include "model/stories_fixture.h"
#include "model/transformer.h"

namespace pocket {
namespace {

std::vector<float> logits(const std::string& package, FileLoad how, const std::vector<int32_t>& ids) {
  OpenOptions o;
  o.load = how;
  auto model = Model::load(package, o);
  EXPECT_TRUE(model) << model.status().to_string();
  if (!model) return {};
  ThreadPool pool(2);
  SessionShape shape;
  shape.n_ctx = 64;
  shape.n_logit_rows = 64;
  auto tf = Transformer::create(*model, shape, &pool);
  EXPECT_TRUE(tf) << tf.status().to_string();
  if (!tf) return {};
  const int64_t n = static_cast<int64_t>(ids.size());
  EXPECT_TRUE((*tf)->forward(ids, /*all_logits=*/true).is_ok());
  const int64_t vocab = (*model)->hparams().n_vocab;
  std::vector<float> out(static_cast<size_t>(n * vocab));
  for (int64_t p = 0; p < n; ++p) std::copy_n((*tf)->logits(p), vocab, out.data() + p * vocab);
  return out;
}

TEST(LoadMode, ReadAndMapGiveIdenticalLogits) {
  POCKET_REQUIRE_SHARED_DATA(data);
  const std::vector<int32_t> ids = {1, 403, 407, 261, 378, 425, 394, 267, 380, 286, 312, 395, 430, 260, 397};
  testing::TempDir dir;
  const std::string q4 = dir.file("stories260K-q4.pocket");
  QuantizePolicy policy;
  policy.matrices = DType::kQ4G32;
  ASSERT_TRUE(quantize_model(testing::stories260k_package(), q4, policy).is_ok());
  for (const std::string& pkg : {testing::stories260k_package(), q4}) {
    const auto mapped = logits(pkg, FileLoad::kMap, ids);
    const auto read = logits(pkg, FileLoad::kRead, ids);
    ASSERT_FALSE(mapped.empty());
    ASSERT_EQ(mapped, read) << pkg;
  }
}

}  // namespace
}  // namespace pocket
