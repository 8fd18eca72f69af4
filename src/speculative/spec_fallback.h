// Speculation pays only where a verify pass yields more tokens than it costs: on a tiny model a verify of
// k + 1 rows costs several decode steps (per-row overheads dominate), on a compute-bound CPU eight rows cost
// about two, and a drafter that stops matching (the copy ended) buys nothing for that. SpecFallback
// measures both ways of decoding on the running session, in tokens per second of wall time, and decodes
// plainly while speculation is measured slower, retrying it with exponential backoff. Output never depends
// on it (speculation is lossless), only speed: the worst case is a bounded share of probing rounds.
//
// Rounds: one target pass, drafted (k >= 1 rows of draft) or plain (one row). States:
//   measure plain rounds (plain_rounds) that measure the plain rate: first of all when it is unknown, and
//           again when older than recheck_rounds speculative rounds; then compare (or start the trial);
//   trial   speculate for trial_rounds, measuring, then compare; a trial already clearly losing after
//           early_rounds (below early_ratio of the plain rate) ends there;
//   spec    speculation won: keep speculating, comparing every trial_rounds with the latest plain rate;
//   off     speculation lost: backoff plain rounds (backoff_min, doubled at each loss in a row up to
//           backoff_max), then a new trial.
// The speculative rate is a moving window (the last trial_rounds rounds), so a drafter that stops
// matching mid-stream is noticed within one window.
#pragma once

#include <cstdint>
#include <vector>

namespace pocket {

struct SpecFallbackOptions {
  bool enabled = true;           // false: always speculate (the drafter still decides how much)
  int32_t trial_rounds = 16;     // speculative rounds per comparison window (>= 1)
  int32_t early_rounds = 4;      // a trial this old may end early ...
  double early_ratio = 0.75;     // ... when its rate is below this fraction of the plain rate
  int32_t plain_rounds = 4;      // plain rounds per measurement of the plain rate (>= 1)
  int32_t recheck_rounds = 256;  // speculative rounds after which the plain rate is measured again (>= 1)
  int32_t backoff_min = 32;      // plain rounds after the first loss (>= 1)
  int32_t backoff_max = 1024;    // ... doubling up to this (>= backoff_min)
};

class SpecFallback {
 public:
  explicit SpecFallback(const SpecFallbackOptions& o = {});

  // Whether the next round drafts.
  bool speculate() const { return !o_.enabled || state_ == State::kTrial || state_ == State::kSpec; }
  // The round just run (as speculate() said): tokens it emitted and its wall time.
  void record(int64_t tokens, double seconds);
  // A new generation: speculation gets a fresh trial; the plain rate (a property of model and machine) is kept.
  void restart();

  // Tokens per second of the last plain measurement; 0 when none yet.
  double plain_rate() const { return plain_rate_; }
  // Over the current window of speculative rounds; 0 when empty.
  double spec_rate() const;
  int64_t losses() const { return losses_total_; }  // comparisons speculation lost

 private:
  enum class State { kTrial, kSpec, kMeasure, kOff };
  void compare();

  SpecFallbackOptions o_;
  State state_ = State::kTrial;
  // Window of the last trial_rounds speculative rounds (ring).
  std::vector<double> win_tokens_, win_seconds_;
  int32_t win_next_ = 0, win_size_ = 0;
  int32_t rounds_in_state_ = 0;
  int64_t spec_since_plain_ = 0;  // speculative rounds since the plain rate was measured
  double plain_rate_ = 0.0;
  double meas_tokens_ = 0.0, meas_seconds_ = 0.0;  // the plain rounds being measured
  int32_t backoff_;
  int64_t losses_total_ = 0;
};

}  // namespace pocket
