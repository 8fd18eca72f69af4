// Adaptive draft length: grow the draft after a fully accepted one, shrink it after a rejection, so a
// drafter that stops matching costs little more than plain decoding while a copying one runs long drafts.
#pragma once

#include <algorithm>
#include <cstdint>

namespace pocket {

class AdaptiveDraftLength {
 public:
  // k starts at k_max. adaptive = false keeps it there.
  AdaptiveDraftLength(int32_t k_max, bool adaptive) : k_max_(k_max), k_(k_max), adaptive_(adaptive) {}

  int32_t current() const { return k_; }

  // After a verify pass: all drafted accepted → k + 2 (at most k_max); a rejection → k − 1 (at least 1).
  // An empty draft (the drafter had nothing) carries no evidence and leaves k alone.
  void update(int32_t n_drafted, int32_t n_accepted) {
    if (!adaptive_ || n_drafted == 0) return;
    if (n_accepted == n_drafted) k_ = std::min(k_max_, k_ + 2);
    else k_ = std::max(1, k_ - 1);
  }
  void reset() { k_ = k_max_; }

 private:
  int32_t k_max_;
  int32_t k_;
  bool adaptive_;
};

}  // namespace pocket
