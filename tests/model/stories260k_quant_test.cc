// stories260K quantised (width 64, FFN 172: ragged 32-groups in every ffn_down row) against its F32 self and
// the reference implementation's greedy texts: Q8 and Q4 top-1 agreement and KL over the three reference
// sequences, and Q8's greedy continuations. The figures are printed for docs/quantization.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "convert/quantize_model.h"
#include "generate/session.h"
#include "model/stories_fixture.h"
#include "model/transformer.h"

namespace pocket {
namespace {

using testing::read_ids_line;
using testing::read_text;
using testing::stories260k_package;

constexpr int kVocab = 512;

// stories260K with every matrix (embedding included) at `t`, through `pocket quantize`'s policy code.
std::string quantized(DType t) {
  static ::pocket::testing::TempDir dir;
  const std::string out = dir.file("stories260K-" + std::string(dtype_name(t)) + ".pocket");
  if (!std::filesystem::exists(out)) {
    QuantizePolicy policy;
    policy.matrices = t;
    const Status st = quantize_model(stories260k_package(), out, policy);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return out;
}

// Teacher-forced logits for all positions of a reference sequence but the last.
std::vector<float> all_logits(const std::string& package, const std::vector<int32_t>& ids) {
  return testing::teacher_forced_logits(package, std::span<const int32_t>(ids.data(), ids.size() - 1));
}

int argmax(const float* l) { return static_cast<int>(std::max_element(l, l + kVocab) - l); }

// KL(softmax(ref) || softmax(q)) in double.
double kl(const float* ref, const float* q) {
  const double mr = *std::max_element(ref, ref + kVocab), mq = *std::max_element(q, q + kVocab);
  double zr = 0, zq = 0;
  for (int v = 0; v < kVocab; ++v) zr += std::exp(ref[v] - mr), zq += std::exp(q[v] - mq);
  double d = 0;
  for (int v = 0; v < kVocab; ++v) {
    const double lr = ref[v] - mr - std::log(zr), lq = q[v] - mq - std::log(zq);
    d += std::exp(lr) * (lr - lq);
  }
  return d;
}

struct Agreement {
  int agree = 0, total = 0;
  double kl_sum = 0;
};

Agreement compare(DType t, const std::string& data) {
  Agreement a;
  for (int p = 1; p <= 3; ++p) {
    const auto ids = read_ids_line(data + "/reference/stories260K/p" + std::to_string(p) + ".ids", "ALL_IDS");
    const auto ref = all_logits(stories260k_package(), ids);
    const auto q = all_logits(quantized(t), ids);
    if (ref.empty() || q.size() != ref.size()) return a;
    for (size_t i = 0; i < ref.size() / kVocab; ++i) {
      a.agree += argmax(&ref[i * kVocab]) == argmax(&q[i * kVocab]);
      a.kl_sum += kl(&ref[i * kVocab], &q[i * kVocab]);
      ++a.total;
    }
  }
  return a;
}

// Q4: the issue asks for the figures; the bounds only catch a broken path (random logits agree ~0.2 %).
TEST(Stories260KQuant, Q4TopOneAgreementAndKl) {
  POCKET_REQUIRE_SHARED_DATA(data);
  for (DType t : {DType::kQ4G32, DType::kQ4G64, DType::kQ4G32A}) {
    const Agreement a = compare(t, data);
    ASSERT_EQ(a.total, 192);
    const double top1 = 100.0 * a.agree / a.total, kl_mean = a.kl_sum / a.total;
    std::printf("stories260K %s vs F32, 3 x 64 teacher-forced positions: top-1 %.1f %%, KL mean %.4f\n",
                std::string(dtype_name(t)).c_str(), top1, kl_mean);
    EXPECT_GE(top1, 70.0) << dtype_name(t);
    EXPECT_LE(kl_mean, 0.25) << dtype_name(t);
  }
}

TEST(Stories260KQuant, Q8TopOneAgreementAndKl) {
  POCKET_REQUIRE_SHARED_DATA(data);
  const Agreement a = compare(DType::kQ8G32, data);
  ASSERT_EQ(a.total, 192);
  const double kl_mean = a.kl_sum / a.total;
  std::printf("stories260K q8_g32 vs F32: top-1 %d / %d, KL mean %.6f\n", a.agree, a.total, kl_mean);
  EXPECT_GE(a.agree, 191);
  EXPECT_LE(kl_mean, 5e-4);
}

// Q8's greedy continuation of each reference prompt is the F32 reference text, token for token. p3 has a
// near-tie at generated token 39 (F32's margin 0.0795 logit) that int8 activations alone flipped; Q8's
// residual activations (kernels::residual_activations) keep it. On a mismatch the test prints F32's margin
// at the first differing position, to tell a near-tie from a broken path.
TEST(Stories260KQuant, Q8GreedyTextMatchesF32) {
  POCKET_REQUIRE_SHARED_DATA(data);
  auto model = Model::load(quantized(DType::kQ8G32));
  ASSERT_TRUE(model) << model.status().to_string();
  for (int p = 1; p <= 3; ++p) {
    const std::string base = data + "/reference/stories260K/p" + std::to_string(p);
    const auto prompt_ids = read_ids_line(base + ".ids", "PROMPT_TOKENS");
    const auto want = read_ids_line(base + ".ids", "ALL_IDS");
    ASSERT_EQ(want.size(), 65u);
    SessionOptions so;
    so.n_threads = 2;
    auto s = Session::create(*model, so);
    ASSERT_TRUE(s) << s.status().to_string();
    GenerateOptions go;
    go.n_predict = static_cast<int32_t>(want.size() - prompt_ids.size());
    go.stop_at_eos = false;
    std::vector<int32_t> got = prompt_ids;
    ASSERT_TRUE((*s)->generate(read_text(base + ".prompt"), go, [&](int32_t id, std::string_view) {
      if (id >= 0) got.push_back(id);
      return true;
    }).is_ok());
    ASSERT_EQ(got.size(), want.size());
    const auto first = std::mismatch(got.begin(), got.end(), want.begin());
    if (first.first == got.end()) {
      std::printf("p%d: Q8 greedy text identical to the F32 reference\n", p);
      continue;
    }
    const int64_t pos = first.first - got.begin();  // the token at `pos` was chosen from position pos - 1
    const auto ref = all_logits(stories260k_package(), want);
    const float* l = &ref[static_cast<size_t>(pos - 1) * kVocab];
    ADD_FAILURE() << "p" << p << ": Q8 parts from the F32 reference at token " << pos << ", where F32's margin is "
                  << l[want[static_cast<size_t>(pos)]] - l[*first.first] << " logit";
  }
}

}  // namespace
}  // namespace pocket
