// Drafter: the one interface every speculative method implements (STYLE.md 14). A drafter proposes tokens
// that continue the accepted context; the target verifies them in one batched pass and reports back.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"

namespace pocket {

// The largest draft a session accepts (the verify batch is draft + 1 rows).
inline constexpr int32_t kMaxDraft = 16;

class Drafter {
 public:
  virtual ~Drafter() = default;
  Drafter() = default;
  Drafter(const Drafter&) = delete;
  Drafter& operator=(const Drafter&) = delete;

  // A short fixed name ("ngram", "draft", "block") for reports.
  virtual const char* name() const = 0;

  // Writes up to out.size() tokens that continue `context` — every token the target has accepted, in order;
  // its last token may not be evaluated by the target yet (it leads the next verify batch). Returns how
  // many were written; 0 means "no proposal" and the session decodes one token plainly.
  //
  // Contract: a proposal is a deterministic function of the context and the drafter's state (a point-mass
  // draft distribution q). The session's acceptance rule relies on it: with q a point mass at d, the
  // rejection rule "accept with min(1, p/q), else resample from norm(max(0, p - q))" is exactly "draw
  // y ~ p; accept when y == d, else emit y" (see rejection.h for the general rule).
  // Must not allocate per call: buffers are sized at creation.
  virtual Expected<int32_t> propose(std::span<const int32_t> context, std::span<int32_t> out) = 0;

  // The target accepted the first `n_accepted` of the last `n_drafted` proposed tokens.
  virtual void observe(int32_t n_drafted, int32_t n_accepted) {
    (void)n_drafted;
    (void)n_accepted;
  }

  // The session forgot its context (reset); drop anything cached about it.
  virtual void reset() {}
};

}  // namespace pocket
