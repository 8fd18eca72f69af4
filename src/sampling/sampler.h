// Sampling as a chain of small typed processors over a preallocated candidate buffer:
//   repetition penalty → top-k → top-p → min-p → temperature → pick (greedy argmax, or a seeded draw).
// Parameters are validated and normalised once (RELIABILITY.md 15); sampling allocates nothing.
// Not thread-safe: one Sampler per session.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "sampling/rng.h"

namespace pocket {

// Documented meanings of edge values (see docs/sampling.md):
//   temperature 0 → greedy (argmax, lowest id on ties); < 0 or NaN → rejected; above 1e4 → clamped to 1e4.
//   top_k <= 0 → disabled (all tokens); larger than the vocabulary → the vocabulary.
//   top_p >= 1 → disabled; <= 0 → only the most likely token is kept; NaN → rejected.
//   min_p <= 0 → disabled; >= 1 → only tokens as likely as the most likely; NaN → rejected.
//   repeat_penalty 1 → disabled; must be finite and > 0. repeat_last_n < 0 → the whole history kept.
struct SamplingParams {
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  uint64_t seed = 0;

  static SamplingParams greedy() {
    SamplingParams p;
    p.temperature = 0.0f;
    return p;
  }
};

enum class ProcessorKind { kRepetitionPenalty, kTopK, kTopP, kMinP, kTemperature };

struct Candidate {
  int32_t id;
  float logit;  // after the processors so far; becomes a probability for the final draw
};

class Sampler {
 public:
  // Validates `params` (kInvalidArgument naming the bad one) and sizes every buffer for `n_vocab`.
  static Expected<Sampler> create(const SamplingParams& params, int32_t n_vocab, int32_t history_capacity = 4096);

  // Picks the next token from logits[n_vocab]. kNumericalError when a logit is NaN.
  Expected<int32_t> sample(const float* logits);
  // Records a token (prompt or generated) for the repetition penalty.
  void accept(int32_t id);
  void reset(uint64_t seed);
  const SamplingParams& params() const { return params_; }
  // The processors in application order (empty for pure greedy without penalties).
  const std::vector<ProcessorKind>& chain() const { return chain_; }

 private:
  Sampler() = default;
  void apply(ProcessorKind k);

  SamplingParams params_;
  int32_t n_vocab_ = 0;
  std::vector<ProcessorKind> chain_;
  std::vector<Candidate> cand_;
  size_t n_cand_ = 0;
  bool sorted_ = false;
  std::vector<int32_t> history_;  // ring buffer of recent tokens
  size_t history_len_ = 0, history_pos_ = 0;
  std::vector<uint32_t> stamp_;  // per id: the penalty pass that last touched it
  uint32_t stamp_now_ = 0;
  Rng rng_;
};

}  // namespace pocket
