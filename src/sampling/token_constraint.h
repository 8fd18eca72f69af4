// TokenConstraint: what a generation may emit next, applied to the logits before the sampler's chain.
// Implemented by constrain/grammar_constraint.h (grammars, JSON schemas, copy-from-input spans); the session
// only sees this interface, so sampling and generation do not depend on how a constraint is compiled.
// Not thread-safe: one constraint per generation.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace pocket {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // Sets the logit of every token the constraint forbids now to -infinity (logits[n_vocab]). `n_left` is
  // how many more tokens the call may generate (-1: unbounded): a constraint that must finish within it
  // (a JSON value closed before the token limit) narrows the choice as the limit nears. Stop tokens
  // (`is_stop` in allow_stop) are the session's business: the constraint says only whether stopping is
  // allowed (can_stop). kInvalidArgument when no token is allowed (cannot happen for a compiled grammar
  // whose every state has a continuation; reported, never a silent empty set).
  virtual Status mask(float* logits, int32_t n_vocab, int64_t n_left) = 0;
  // Advances past a sampled token; kInvalidArgument when the token was not allowed.
  virtual Status accept(int32_t id) = 0;
  // The output so far is complete: stopping now leaves a valid result.
  virtual bool can_stop() const = 0;
  // Nothing may follow: the generation ends here (stop tokens need not be sampled).
  virtual bool done() const = 0;
};

}  // namespace pocket
