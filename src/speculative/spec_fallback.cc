#include "speculative/spec_fallback.h"

#include <algorithm>

namespace pocket {

namespace {
constexpr double kMinSeconds = 1e-9;  // a round timed at zero (coarse clock) still counts as work
}  // namespace

SpecFallback::SpecFallback(const SpecFallbackOptions& o) : o_(o), backoff_(std::max(1, o.backoff_min)) {
  o_.trial_rounds = std::max(1, o_.trial_rounds);
  o_.early_rounds = std::clamp(o_.early_rounds, 1, o_.trial_rounds);
  o_.plain_rounds = std::max(1, o_.plain_rounds);
  o_.recheck_rounds = std::max(1, o_.recheck_rounds);
  o_.backoff_min = std::max(1, o_.backoff_min);
  o_.backoff_max = std::max(o_.backoff_min, o_.backoff_max);
  win_tokens_.assign(static_cast<size_t>(o_.trial_rounds), 0.0);
  win_seconds_.assign(static_cast<size_t>(o_.trial_rounds), 0.0);
  restart();
}

void SpecFallback::restart() {
  state_ = plain_rate_ > 0.0 ? State::kTrial : State::kMeasure;
  win_next_ = win_size_ = 0;
  rounds_in_state_ = 0;
  meas_tokens_ = meas_seconds_ = 0.0;
  backoff_ = o_.backoff_min;
}

double SpecFallback::spec_rate() const {
  double t = 0.0, s = 0.0;
  for (int32_t i = 0; i < win_size_; ++i) {
    t += win_tokens_[static_cast<size_t>(i)];
    s += win_seconds_[static_cast<size_t>(i)];
  }
  return win_size_ > 0 ? t / std::max(s, kMinSeconds) : 0.0;
}

void SpecFallback::compare() {
  rounds_in_state_ = 0;
  if (spec_rate() >= plain_rate_) {
    state_ = State::kSpec;
    backoff_ = o_.backoff_min;
    return;
  }
  ++losses_total_;
  state_ = State::kOff;
  meas_tokens_ = meas_seconds_ = 0.0;
}

void SpecFallback::record(int64_t tokens, double seconds) {
  if (!o_.enabled) return;
  const double t = static_cast<double>(tokens), s = std::max(seconds, 0.0);
  switch (state_) {
    case State::kTrial:
    case State::kSpec:
      win_tokens_[static_cast<size_t>(win_next_)] = t;
      win_seconds_[static_cast<size_t>(win_next_)] = s;
      win_next_ = (win_next_ + 1) % o_.trial_rounds;
      win_size_ = std::min(win_size_ + 1, o_.trial_rounds);
      ++spec_since_plain_;
      ++rounds_in_state_;
      if (state_ == State::kTrial && rounds_in_state_ >= o_.early_rounds && rounds_in_state_ < o_.trial_rounds &&
          spec_rate() < o_.early_ratio * plain_rate_) {
        compare();  // clearly losing: no need to finish the trial
        return;
      }
      if (rounds_in_state_ < o_.trial_rounds) return;
      rounds_in_state_ = 0;
      if (plain_rate_ <= 0.0 || spec_since_plain_ >= o_.recheck_rounds) {
        state_ = State::kMeasure;
        meas_tokens_ = meas_seconds_ = 0.0;
      } else {
        compare();
      }
      return;
    case State::kMeasure:
    case State::kOff:
      meas_tokens_ += t;
      meas_seconds_ += s;
      ++rounds_in_state_;
      if (state_ == State::kMeasure) {
        if (rounds_in_state_ < o_.plain_rounds) return;
        plain_rate_ = meas_tokens_ / std::max(meas_seconds_, kMinSeconds);
        spec_since_plain_ = 0;
        if (win_size_ == 0) {  // measured before any speculation: now the trial
          state_ = State::kTrial;
          rounds_in_state_ = 0;
          return;
        }
        compare();
        return;
      }
      if (rounds_in_state_ < backoff_) return;
      plain_rate_ = meas_tokens_ / std::max(meas_seconds_, kMinSeconds);  // the off period measured it afresh
      spec_since_plain_ = 0;
      backoff_ = std::min(2 * backoff_, o_.backoff_max);
      state_ = State::kTrial;
      win_next_ = win_size_ = 0;
      rounds_in_state_ = 0;
      return;
  }
}

}  // namespace pocket
