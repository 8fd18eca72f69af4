// Importance-aware quantisation end to end: the Transformer's activation observer reports every matrix's
// input (and changes nothing), and quantize_model with an ImportanceMap fits the matrices that have
// statistics, leaves the others plain, and refuses statistics whose width does not match.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "convert/quantize_model.h"
#include "convert/synth.h"
#include "core/thread_pool.h"
#include "format/package.h"
#include "model/activation_observer.h"
#include "model/model.h"
#include "model/transformer.h"
#include "quant/importance.h"
#include "test_util.h"

namespace pocket {
namespace {

class MeanSquare : public ActivationObserver {
 public:
  void observe(const WeightRef& w, const float* x, int64_t rows) override {
    ASSERT_NE(w.name, nullptr);
    auto& s = sums_[*w.name];
    s.resize(static_cast<size_t>(w.cols), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < w.cols; ++k) s[static_cast<size_t>(k)] += double(x[r * w.cols + k]) * x[r * w.cols + k];
    }
    rows_[*w.name] += rows;
  }
  quant::ImportanceMap map() const {
    quant::ImportanceMap m;
    m.n_tokens = 1;
    for (const auto& [name, s] : sums_) {
      std::vector<float> v(s.size());
      for (size_t k = 0; k < s.size(); ++k) v[k] = static_cast<float>(s[k] / double(rows_.at(name)));
      m.columns[name] = v;
    }
    return m;
  }
  std::map<std::string, std::vector<double>> sums_;
  std::map<std::string, int64_t> rows_;
};

class QuantizeImportance : public ::testing::Test {
 protected:
  void SetUp() override {
    auto h = architecture_preset("tiny");
    ASSERT_TRUE(h);
    h_ = *h;
    SynthOptions o;
    o.dtype = DType::kF32;
    ASSERT_TRUE(synthesize_model(h_, dir_.file("f32.pocket"), o).is_ok());
    for (int i = 0; i < 20; ++i) toks_.push_back((i * 37 + 5) % static_cast<int32_t>(h_.n_vocab));
  }
  // Logits of every position of toks_, with `obs` observing (nullptr: none).
  std::vector<float> run(const std::string& file, ActivationObserver* obs) {
    auto model = Model::load(dir_.file(file));
    EXPECT_TRUE(model.has_value());
    ThreadPool pool(2);
    SessionShape shape;
    shape.n_ctx = 64;
    shape.n_batch = 8;  // several chunks
    shape.n_logit_rows = 8;
    auto tf = Transformer::create(*model, shape, &pool);
    EXPECT_TRUE(tf.has_value());
    (*tf)->set_observer(obs);
    std::vector<float> out;
    for (size_t c = 0; c < toks_.size(); c += 8) {
      const size_t m = std::min<size_t>(8, toks_.size() - c);
      EXPECT_TRUE((*tf)->forward(std::span<const int32_t>(toks_.data() + c, m), true).is_ok());
      for (size_t i = 0; i < m; ++i) out.insert(out.end(), (*tf)->logits(int64_t(i)), (*tf)->logits(int64_t(i)) + h_.n_vocab);
    }
    return out;
  }
  testing::TempDir dir_;
  HParams h_;
  std::vector<int32_t> toks_;
};

TEST_F(QuantizeImportance, ObserverSeesEveryMatrixAndChangesNothing) {
  MeanSquare obs;
  const auto with = run("f32.pocket", &obs);
  EXPECT_EQ(with, run("f32.pocket", nullptr));
  auto pkg = Package::open(dir_.file("f32.pocket"));
  ASSERT_TRUE(pkg.has_value());
  for (const TensorInfo& t : pkg->tensors()) {
    if (t.shape.size() != 2) continue;
    if (t.name == "token_embd.weight" && !h_.tied_embeddings) continue;  // a lookup, not a matmul
    ASSERT_EQ(obs.sums_.count(t.name), 1u) << t.name;
    EXPECT_EQ(obs.sums_[t.name].size(), t.cols()) << t.name;
    EXPECT_EQ(obs.rows_[t.name], static_cast<int64_t>(toks_.size())) << t.name;  // every row: all logits
  }
}

TEST_F(QuantizeImportance, FitsMatricesWithStatisticsAndLeavesTheRestPlain) {
  MeanSquare obs;
  run("f32.pocket", &obs);
  quant::ImportanceMap imp = obs.map();
  const std::string dropped = "blk.0.ffn_down.weight";
  ASSERT_EQ(imp.columns.erase(dropped), 1u);
  for (DType t : {DType::kQ4G32, DType::kQ4G32A, DType::kQ8G32}) {
    QuantizePolicy plain;
    plain.matrices = t;
    ASSERT_TRUE(quantize_model(dir_.file("f32.pocket"), dir_.file("plain.pocket"), plain).is_ok());
    QuantizePolicy weighted = plain;
    weighted.importance = &imp;
    QuantizeReport rep;
    ASSERT_TRUE(quantize_model(dir_.file("f32.pocket"), dir_.file("w.pocket"), weighted, &rep).is_ok());
    EXPECT_EQ(rep.n_plain, h_.tied_embeddings ? 1 : 2);  // an untied embedding table has no statistics
    EXPECT_EQ(rep.n_weighted, static_cast<int>(imp.columns.size()));
    auto a = Package::open(dir_.file("plain.pocket")), b = Package::open(dir_.file("w.pocket"));
    ASSERT_TRUE(a.has_value() && b.has_value());
    int differ = 0;
    for (const TensorInfo& ta : a->tensors()) {
      const TensorInfo* tb = b->find(ta.name);
      ASSERT_NE(tb, nullptr);
      ASSERT_EQ(ta.dtype, tb->dtype) << ta.name;
      const bool same = std::memcmp(ta.data, tb->data, ta.size) == 0;
      if (ta.name == dropped || ta.shape.size() < 2) EXPECT_TRUE(same) << ta.name;
      differ += !same;
    }
    EXPECT_GT(differ, 0) << dtype_name(t);
    EXPECT_TRUE(Model::load(dir_.file("w.pocket")).has_value());
  }
}

TEST_F(QuantizeImportance, MismatchedWidthIsAnError) {
  quant::ImportanceMap imp;
  imp.n_tokens = 1;
  imp.columns["blk.0.attn_q.weight"] = std::vector<float>(3, 1.0f);
  QuantizePolicy p;
  p.importance = &imp;
  const Status st = quantize_model(dir_.file("f32.pocket"), dir_.file("bad.pocket"), p);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.to_string().find("blk.0.attn_q.weight"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace pocket
