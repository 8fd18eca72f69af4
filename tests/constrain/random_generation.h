// Test helper: a generation driven by random logits under a TokenConstraint (what a model with arbitrary
// preferences would do), used by the constraint tests and the schema/GBNF property tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sampling/rng.h"
#include "sampling/token_constraint.h"

namespace pocket::testing {

struct RandomGeneration {
  std::vector<int32_t> ids;  // accepted tokens (EOS not included)
  std::string bytes;         // their bytes, concatenated
  bool eos = false;          // ended by sampling EOS (only offered where can_stop())
  bool done = false;         // ended because the constraint said nothing may follow
  Status status;             // the first error from mask/accept, if any
};

// Samples up to `max_tokens` tokens: logits uniform in [0, 4) (softmax sampling), masked by `constraint`
// with n_left = the tokens still allowed (or -1 when `limit_constraint` is false); EOS (`eos_id`, may be -1)
// gets a random logit only where can_stop(). Stops at done(), EOS, the limit or an error.
inline RandomGeneration random_generation(TokenConstraint& constraint, int32_t n_vocab, int32_t eos_id, uint64_t seed,
                                          int32_t max_tokens,
                                          const std::function<std::string_view(int32_t)>& token_bytes,
                                          bool limit_constraint = true) {
  RandomGeneration out;
  Rng rng(seed);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  std::vector<double> probs(static_cast<size_t>(n_vocab));
  while (static_cast<int32_t>(out.ids.size()) < max_tokens) {
    if (constraint.done()) {
      out.done = true;
      break;
    }
    for (float& l : logits) l = static_cast<float>(4.0 * rng.uniform());
    const int64_t n_left = limit_constraint ? max_tokens - static_cast<int64_t>(out.ids.size()) : -1;
    out.status = constraint.mask(logits.data(), n_vocab, n_left);
    if (!out.status.is_ok()) break;
    if (eos_id >= 0 && eos_id < n_vocab) {
      logits[static_cast<size_t>(eos_id)] =
          constraint.can_stop() ? static_cast<float>(4.0 * rng.uniform()) : -std::numeric_limits<float>::infinity();
    }
    double total = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      probs[i] = std::isinf(logits[i]) ? 0.0 : std::exp(static_cast<double>(logits[i]));
      total += probs[i];
    }
    if (total <= 0) {
      out.status = invalid_argument("[random-generation] every token masked");
      break;
    }
    double u = rng.uniform() * total;
    int32_t id = -1;
    for (size_t i = 0; i < probs.size(); ++i) {
      if (probs[i] <= 0) continue;
      id = static_cast<int32_t>(i);
      u -= probs[i];
      if (u < 0) break;
    }
    if (id == eos_id) {
      out.eos = true;
      break;
    }
    out.status = constraint.accept(id);
    if (!out.status.is_ok()) break;
    out.ids.push_back(id);
    out.bytes += token_bytes(id);
  }
  if (out.status.is_ok() && !out.done && !out.eos && constraint.done()) out.done = true;
  return out;
}

}  // namespace pocket::testing
