// The rejection rule of speculative sampling (accept with min(1, p/q), else resample the residual).
#include "speculative/rejection.h"

#include <algorithm>

namespace pocket {

RejectionResult speculative_accept(std::span<const float> p, std::span<const float> q, int32_t d, Rng& rng) {
  const size_t n = std::min(p.size(), q.size());
  const size_t di = static_cast<size_t>(d);
  const double pd = p[di], qd = q[di];
  if (qd <= 0.0 || rng.uniform() * qd < pd) return {d, true};  // u < p/q without dividing
  double mass = 0.0;
  for (size_t i = 0; i < n; ++i) mass += std::max(0.0, static_cast<double>(p[i]) - q[i]);
  if (mass <= 0.0) return {d, true};  // p == q within rounding: the draft is as good as any draw
  const double target = rng.uniform() * mass;
  double cum = 0.0;
  size_t last = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = std::max(0.0, static_cast<double>(p[i]) - q[i]);
    if (r <= 0.0) continue;
    last = i;
    cum += r;
    if (cum > target) return {static_cast<int32_t>(i), false};
  }
  return {static_cast<int32_t>(last), false};  // rounding at the very end of the mass
}

}  // namespace pocket
