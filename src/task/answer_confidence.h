// The model's own certainty about a constrained answer: a TokenConstraint that wraps another and, after the
// inner mask, reads the distribution the sampler will draw from (softmax over the allowed tokens' logits) —
// the chosen token's probability and the entropy at every step. An app routes a low-confidence extraction
// to a bigger model (docs/tasks.md, "Confidence").
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/token_constraint.h"

namespace pocket {

struct AnswerConfidence {
  int64_t n_tokens = 0;
  double min_token_probability = 1.0;  // of the chosen token among the allowed ones (1 with no tokens)
  double mean_token_logprob = 0.0;     // mean log-probability of the chosen tokens, nats
  double mean_entropy = 0.0;           // mean entropy of the allowed distribution, nats
  // log p(answer | prompt) under the model itself (softmax over the whole vocabulary, nothing masked): what
  // beam search maximises (TaskOptions::beams), comparable between answers to one prompt.
  double sequence_logprob = 0.0;
};

// log-sum-exp of logits[0..n) (-inf entries skipped; -inf when all are).
double log_sum_exp(const float* logits, int32_t n);

class ConfidenceTracker final : public TokenConstraint {
 public:
  // `inner` is not owned and must outlive the tracker.
  explicit ConfidenceTracker(TokenConstraint* inner) : inner_(inner) {}

  Status mask(float* logits, int32_t n_vocab, int64_t n_left) override;
  Status accept(int32_t id) override;
  bool can_stop() const override { return inner_->can_stop(); }
  bool done() const override { return inner_->done(); }

  AnswerConfidence result() const;

 private:
  TokenConstraint* inner_;
  const float* logits_ = nullptr;  // the masked logits of the current step (the session's buffer)
  int32_t n_vocab_ = 0;
  double max_ = 0.0, log_z_ = 0.0;  // log-sum-exp over the allowed tokens = max_ + log_z_
  double raw_lse_ = 0.0;            // log-sum-exp over every token before the inner mask
  double entropy_ = 0.0;
  int64_t n_ = 0;
  double min_p_ = 1.0, sum_lp_ = 0.0, sum_entropy_ = 0.0, sum_raw_lp_ = 0.0;
};

}  // namespace pocket
