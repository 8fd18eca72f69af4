// The general speculative-sampling acceptance rule for a stochastic drafter: the draft token d was drawn
// from q; accept it with probability min(1, p[d] / q[d]), otherwise draw from norm(max(0, p - q)). The
// emitted token is then distributed exactly as p, whatever q is.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/rng.h"

namespace pocket {

struct RejectionResult {
  int32_t token = -1;
  bool accepted = false;  // token == the draft token, accepted by the rule
};

// p, q: probability vectors over the same vocabulary (each summing to 1 within rounding; q[d] > 0).
// Consumes one uniform for the accept test and, on rejection, one more for the residual draw.
// With q a point mass at d this is "accept with probability p[d], else draw from p without d", which is
// the same law as "draw y ~ p; accept when y == d" — the form SpeculativeSession uses (drafter.h).
RejectionResult speculative_accept(std::span<const float> p, std::span<const float> q, int32_t d, Rng& rng);

}  // namespace pocket
