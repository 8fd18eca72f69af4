// Drafter: the one interface every speculative method implements (STYLE.md 14). A drafter proposes tokens
// that continue the accepted context; the target verifies them in one batched pass and reports back.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"

namespace pocket {

// The largest draft a session accepts (the verify batch is draft + 1 rows).
inline constexpr int32_t kMaxDraft = 16;

// The target's residual stream after chosen layers for rows that entered the context: context positions
// pos0 .. pos0 + n_rows - 1. Row r of layer i (the i-th of Drafter::hidden_layers()) is the n_embd floats at
// data + i * layer_stride + r * n_embd. Valid only during the observe_hidden() call.
struct TargetHiddenStates {
  std::span<const int32_t> layers;  // target layer indices, as Drafter::hidden_layers() returned them
  const float* data = nullptr;
  int64_t layer_stride = 0;  // floats between layers
  int64_t pos0 = 0;          // the first row's position in the context
  int64_t n_rows = 0;
  int64_t n_embd = 0;
};

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

  // Drafters conditioned on the target's hidden states (the block drafter) name the target layers whose
  // outputs they read: increasing indices in [0, target layers), fixed for the drafter's lifetime. The
  // session then keeps those layers' outputs in every target pass and reports, after each pass, the rows
  // that entered the context (a prefill chunk's rows; a verify pass's row of the last accepted token and
  // its accepted drafts). Rows arrive in position order; a report starting at pos0 supersedes anything the
  // drafter holds for positions >= pos0 (rolled back or failed passes). Empty (the default): none.
  virtual std::span<const int32_t> hidden_layers() const { return {}; }
  // Must not allocate per call. An error ends the generate call with it (the session stays usable).
  [[nodiscard]] virtual Status observe_hidden(const TargetHiddenStates& states) {
    (void)states;
    return Status::ok();
  }

  // The session forgot its context (reset); drop anything cached about it.
  virtual void reset() {}
};

}  // namespace pocket
