// The 8-row interleaved Q4G32 layout (q4_g32r8) end to end: a lossless permutation of q4_g32 both ways,
// rejected by the reader where rows are not whole groups, refused for an embedding table, written by
// `pocket quantize`/synth for layer matrices, and giving the logits of the row-major q4_g32 package.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "convert/gguf_exporter.h"
#include "convert/quantize_model.h"
#include "convert/synth.h"
#include "core/thread_pool.h"
#include "format/package.h"
#include "model/model.h"
#include "model/transformer.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pocket {
namespace {

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Q4R8, InterleaveIsALosslessPermutation) {
  for (int64_t cols : {32, 172, 1000}) {
    const int64_t rows = 24;
    const auto w = random_matrix(rows, cols, static_cast<uint32_t>(cols));
    const uint64_t shape[2] = {static_cast<uint64_t>(rows), static_cast<uint64_t>(cols)};
    std::vector<uint8_t> rm(*tensor_bytes(DType::kQ4G32, shape)), r8(*tensor_bytes(DType::kQ4G32R8, shape));
    ASSERT_EQ(rm.size(), r8.size());
    ASSERT_TRUE(quant::quantize_tensor(DType::kQ4G32, w.data(), rows, cols, rm).is_ok());
    ASSERT_TRUE(quant::quantize_tensor(DType::kQ4G32R8, w.data(), rows, cols, r8).is_ok());
    EXPECT_NE(rm, r8);  // really rearranged
    std::vector<uint8_t> il(rm.size());
    quant::interleave_r8(il.data(), rm.data(), rows, cols);
    EXPECT_EQ(il, r8);
    const uint64_t rb = *row_bytes(DType::kQ4G32, static_cast<uint64_t>(cols));
    std::vector<float> a(static_cast<size_t>(cols)), b(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<quant::BlockQ4G32> row(static_cast<size_t>((cols + 31) / 32));
      quant::r8_row(row.data(), r8.data(), cols, r);
      ASSERT_EQ(0, std::memcmp(row.data(), rm.data() + r * rb, rb)) << "row " << r;
      ASSERT_TRUE(quant::dequantize_row(DType::kQ4G32, rm, rows, cols, r, a.data()).is_ok());
      ASSERT_TRUE(quant::dequantize_row(DType::kQ4G32R8, r8, rows, cols, r, b.data()).is_ok());
      ASSERT_EQ(a, b) << "row " << r;
    }
  }
  std::vector<uint8_t> out(10 * 18);
  const auto w = random_matrix(10, 32, 1);
  EXPECT_FALSE(quant::quantize_tensor(DType::kQ4G32R8, w.data(), 10, 32, out).is_ok());  // not whole groups
}

class Q4R8Model : public ::testing::Test {
 protected:
  void SetUp() override {
    auto h = architecture_preset("tiny");
    ASSERT_TRUE(h);
    h_ = *h;
    SynthOptions o;
    o.dtype = DType::kF32;
    ASSERT_TRUE(synthesize_model(h_, dir_.file("f32.pocket"), o).is_ok());
    QuantizePolicy rm;
    rm.interleave = false;
    ASSERT_TRUE(quantize_model(dir_.file("f32.pocket"), dir_.file("rm.pocket"), rm).is_ok());
    QuantizePolicy il;
    ASSERT_TRUE(quantize_model(dir_.file("f32.pocket"), dir_.file("r8.pocket"), il).is_ok());
  }
  std::vector<float> logits(const std::string& file, const std::vector<int32_t>& toks) {
    auto model = Model::load(dir_.file(file));
    EXPECT_TRUE(model.has_value());
    ThreadPool pool(2);
    SessionShape shape;
    shape.n_ctx = 64;
    shape.n_batch = 32;
    shape.n_threads = 2;
    shape.n_logit_rows = 32;
    shape.kv_f16 = true;
    auto tf = Transformer::create(*model, shape, &pool);
    EXPECT_TRUE(tf.has_value());
    EXPECT_TRUE((*tf)->forward(toks, true).is_ok());
    std::vector<float> out;
    for (size_t i = 0; i < toks.size(); ++i) {
      const float* l = (*tf)->logits(static_cast<int64_t>(i));
      out.insert(out.end(), l, l + h_.n_vocab);
    }
    return out;
  }
  testing::TempDir dir_;
  HParams h_;
};

TEST_F(Q4R8Model, QuantizeWritesR8ForEveryEligibleMatrix) {
  auto pkg = Package::open(dir_.file("r8.pocket"));
  ASSERT_TRUE(pkg.has_value());
  int r8 = 0;
  for (const TensorInfo& t : pkg->tensors()) {
    if (t.shape.size() == 2 && t.shape[0] % 8 == 0) {  // the embedding table too (the tied head)
      EXPECT_EQ(t.dtype, DType::kQ4G32R8) << t.name;
      ++r8;
    }
  }
  EXPECT_GT(r8, 0);
  // Converting back to row-major q4_g32 is lossless: the same bytes as quantising row-major directly.
  QuantizePolicy rm;
  rm.interleave = false;
  ASSERT_TRUE(quantize_model(dir_.file("r8.pocket"), dir_.file("back.pocket"), rm).is_ok());
  auto a = Package::open(dir_.file("back.pocket")), b = Package::open(dir_.file("rm.pocket"));
  ASSERT_TRUE(a.has_value() && b.has_value());
  for (const TensorInfo& t : b->tensors()) {
    const TensorInfo* u = a->find(t.name);
    ASSERT_NE(u, nullptr);
    ASSERT_EQ(u->dtype, t.dtype) << t.name;
    ASSERT_EQ(0, std::memcmp(u->data, t.data, t.size)) << t.name;
  }
}

TEST_F(Q4R8Model, SameLogitsAsRowMajor) {
  std::vector<int32_t> toks;
  for (int i = 0; i < 21; ++i) toks.push_back((i * 37 + 5) % static_cast<int32_t>(h_.n_vocab));
  const auto a = logits("rm.pocket", toks), b = logits("r8.pocket", toks);
  ASSERT_EQ(a.size(), b.size());
  double max_abs = 0.0, max_diff = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(a[i])));
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  // Same integer dot products; only the float grouping per block differs (see the kernel tests' bound).
  EXPECT_LE(max_diff, 1e-4 * std::max(1.0, max_abs)) << "max |logit| " << max_abs;
}

TEST_F(Q4R8Model, GgufExportMatchesRowMajor) {
  GgufExportOptions o;
  ASSERT_TRUE(export_gguf(dir_.file("rm.pocket"), dir_.file("rm.gguf"), o).is_ok());
  ASSERT_TRUE(export_gguf(dir_.file("r8.pocket"), dir_.file("r8.gguf"), o).is_ok());
  EXPECT_EQ(testing::read_file(dir_.file("rm.gguf")), testing::read_file(dir_.file("r8.gguf")));
}

}  // namespace
}  // namespace pocket
