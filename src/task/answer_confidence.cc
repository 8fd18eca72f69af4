// ConfidenceTracker (answer_confidence.h).
#include "task/answer_confidence.h"

#include <cmath>

namespace pocket {

double log_sum_exp(const float* logits, int32_t n) {
  float mx = -INFINITY;
  for (int32_t i = 0; i < n; ++i) mx = std::max(mx, logits[i]);
  if (!std::isfinite(mx)) return -INFINITY;
  double z = 0.0;
  for (int32_t i = 0; i < n; ++i) {
    if (logits[i] != -INFINITY) z += std::exp(static_cast<double>(logits[i]) - mx);
  }
  return mx + std::log(z);
}

Status ConfidenceTracker::mask(float* logits, int32_t n_vocab, int64_t n_left) {
  raw_lse_ = log_sum_exp(logits, n_vocab);
  POCKET_RETURN_IF_ERROR(inner_->mask(logits, n_vocab, n_left));
  // Stop tokens the session lets back in after this call are not counted: the distribution is over the
  // answer's tokens (the difference matters only at the last step).
  logits_ = logits;
  n_vocab_ = n_vocab;
  float mx = -INFINITY;
  for (int32_t i = 0; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
  max_ = mx;
  double z = 0.0, s = 0.0;  // sum of e^(l - max) and of (l - max) e^(l - max)
  if (std::isfinite(mx)) {
    for (int32_t i = 0; i < n_vocab; ++i) {
      if (logits[i] == -INFINITY) continue;
      const double d = static_cast<double>(logits[i]) - mx;
      const double e = std::exp(d);
      z += e;
      s += d * e;
    }
  }
  log_z_ = z > 0 ? std::log(z) : 0.0;
  // H = log Z - E[l - max] with the expectation under p = e^(l - max) / Z.
  entropy_ = z > 0 ? log_z_ - s / z : 0.0;
  return Status::ok();
}

Status ConfidenceTracker::accept(int32_t id) {
  POCKET_RETURN_IF_ERROR(inner_->accept(id));
  if (logits_ != nullptr && id >= 0 && id < n_vocab_ && std::isfinite(logits_[id])) {
    const double lp = static_cast<double>(logits_[id]) - max_ - log_z_;
    ++n_;
    sum_lp_ += lp;
    sum_raw_lp_ += static_cast<double>(logits_[id]) - raw_lse_;
    sum_entropy_ += entropy_;
    min_p_ = std::min(min_p_, std::exp(lp));
  }
  logits_ = nullptr;
  return Status::ok();
}

AnswerConfidence ConfidenceTracker::result() const {
  AnswerConfidence c;
  c.n_tokens = n_;
  if (n_ > 0) {
    c.min_token_probability = min_p_;
    c.mean_token_logprob = sum_lp_ / static_cast<double>(n_);
    c.mean_entropy = sum_entropy_ / static_cast<double>(n_);
    c.sequence_logprob = sum_raw_lp_;
  }
  return c;
}

}  // namespace pocket
