// The general rejection rule: whatever the draft distribution q, the emitted token is distributed as p.
#include "speculative/rejection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace pocket {
namespace {

std::vector<float> random_dist(Rng& rng, size_t n, double peak) {
  std::vector<float> v(n);
  double s = 0;
  for (auto& x : v) {
    x = static_cast<float>(std::pow(rng.uniform(), peak));
    s += x;
  }
  for (auto& x : v) x = static_cast<float>(x / s);
  return v;
}

int32_t draw(const std::vector<float>& q, Rng& rng) {
  double u = rng.uniform(), c = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    c += q[i];
    if (u < c) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(q.size() - 1);
}

// Goodness of fit against p with N = 200000 draws over 12 categories at alpha = 0.001 (critical value
// 31.26 for 11 degrees of freedom). Power: a rule off by 1 % of mass on one category with p = 0.1 has
// noncentrality N * 0.01^2 / 0.1 = 200 — detected with probability ~1.
TEST(Rejection, OutputIsDistributedAsP) {
  Rng rng(2024);
  const size_t n = 12;
  for (int trial = 0; trial < 4; ++trial) {
    const auto p = random_dist(rng, n, 1.0 + trial);
    const auto q = random_dist(rng, n, 3.0 - trial * 0.5);
    const int N = 200000;
    std::vector<int64_t> counts(n, 0);
    int64_t accepted = 0;
    for (int i = 0; i < N; ++i) {
      const int32_t d = draw(q, rng);
      const RejectionResult r = speculative_accept(p, q, d, rng);
      ASSERT_GE(r.token, 0);
      ASSERT_LT(r.token, static_cast<int32_t>(n));
      if (r.accepted) {
        ASSERT_EQ(r.token, d);
        ++accepted;
      } else {
        ASSERT_NE(r.token, d);
      }
      ++counts[static_cast<size_t>(r.token)];
    }
    double chi2 = 0;
    for (size_t i = 0; i < n; ++i) {
      const double e = N * static_cast<double>(p[i]);
      chi2 += (counts[i] - e) * (counts[i] - e) / e;
    }
    EXPECT_LT(chi2, 31.26) << "trial " << trial;
    // Acceptance rate is sum_i min(p_i, q_i).
    double overlap = 0;
    for (size_t i = 0; i < n; ++i) overlap += std::min(p[i], q[i]);
    EXPECT_NEAR(static_cast<double>(accepted) / N, overlap, 0.01);
  }
}

TEST(Rejection, PointMassDraftAcceptsWithProbabilityPd) {
  Rng rng(7);
  const std::vector<float> p = {0.5f, 0.3f, 0.2f};
  const std::vector<float> q = {0.0f, 1.0f, 0.0f};
  int accepted = 0, zero = 0;
  const int N = 100000;
  for (int i = 0; i < N; ++i) {
    const RejectionResult r = speculative_accept(p, q, 1, rng);
    accepted += r.accepted;
    zero += r.token == 0;
  }
  EXPECT_NEAR(accepted / static_cast<double>(N), 0.3, 0.01);
  EXPECT_NEAR(zero / static_cast<double>(N), 0.5, 0.01);  // the residual is p without the draft token
  // p == q: always accepted.
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(speculative_accept(p, p, i % 3, rng).accepted);
}

}  // namespace
}  // namespace pocket
