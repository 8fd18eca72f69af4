// The sampling processors.
#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>

namespace pocket {

Expected<Sampler> Sampler::create(const SamplingParams& in, int32_t n_vocab, int32_t history_capacity) {
  if (n_vocab <= 0) return invalid_argument("[sampling] vocabulary size must be positive");
  SamplingParams p = in;
  if (std::isnan(p.temperature) || p.temperature < 0.0f) {
    return invalid_argument("[sampling] temperature " + std::to_string(p.temperature) + " must be >= 0 (0 = greedy)");
  }
  p.temperature = std::min(p.temperature, 1e4f);
  if (std::isnan(p.top_p)) return invalid_argument("[sampling] top_p is NaN");
  if (std::isnan(p.min_p)) return invalid_argument("[sampling] min_p is NaN");
  if (!std::isfinite(p.repeat_penalty) || p.repeat_penalty <= 0.0f) {
    return invalid_argument("[sampling] repeat_penalty must be finite and > 0 (1 = off)");
  }
  if (p.top_k <= 0 || p.top_k > n_vocab) p.top_k = n_vocab;
  p.top_p = std::clamp(p.top_p, 0.0f, 1.0f);
  p.min_p = std::clamp(p.min_p, 0.0f, 1.0f);
  if (history_capacity <= 0) history_capacity = 1;
  if (p.repeat_last_n < 0 || p.repeat_last_n > history_capacity) p.repeat_last_n = history_capacity;

  Sampler s;
  s.params_ = p;
  s.n_vocab_ = n_vocab;
  if (p.repeat_penalty != 1.0f && p.repeat_last_n > 0) s.chain_.push_back(ProcessorKind::kRepetitionPenalty);
  if (p.temperature > 0.0f) {
    if (p.top_k < n_vocab) s.chain_.push_back(ProcessorKind::kTopK);
    if (p.top_p < 1.0f) s.chain_.push_back(ProcessorKind::kTopP);
    if (p.min_p > 0.0f) s.chain_.push_back(ProcessorKind::kMinP);
    s.chain_.push_back(ProcessorKind::kTemperature);
  }
  s.cand_.resize(static_cast<size_t>(n_vocab));
  if (!s.chain_.empty() && s.chain_[0] == ProcessorKind::kRepetitionPenalty) s.stamp_.assign(static_cast<size_t>(n_vocab), 0u);
  s.history_.assign(static_cast<size_t>(std::max(1, p.repeat_last_n)), -1);
  s.rng_.reseed(p.seed);
  return s;
}

void Sampler::reset(uint64_t seed) {
  rng_.reseed(seed);
  history_len_ = history_pos_ = 0;
}

void Sampler::accept(int32_t id) {
  history_[history_pos_] = id;
  history_pos_ = (history_pos_ + 1) % history_.size();
  history_len_ = std::min(history_len_ + 1, history_.size());
}

void Sampler::apply(ProcessorKind k) {
  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  switch (k) {
    case ProcessorKind::kRepetitionPenalty: {
      // The candidates are still indexed by id here (the penalty runs first): divide positive logits,
      // multiply negative ones, once per distinct recent token.
      const float pen = params_.repeat_penalty;
      if (++stamp_now_ == 0) {  // wrapped: clear the stamps once every 2^32 calls
        std::fill(stamp_.begin(), stamp_.end(), 0u);
        stamp_now_ = 1;
      }
      for (size_t i = 0; i < history_len_; ++i) {
        const int32_t id = history_[i];
        if (id < 0 || id >= n_vocab_) continue;
        if (stamp_[static_cast<size_t>(id)] == stamp_now_) continue;  // penalise each distinct token once
        stamp_[static_cast<size_t>(id)] = stamp_now_;
        float& l = cand_[static_cast<size_t>(id)].logit;
        l = l > 0.0f ? l / pen : l * pen;
      }
      return;
    }
    case ProcessorKind::kTopK: {
      const size_t k = std::min(n_cand_, static_cast<size_t>(params_.top_k));
      std::partial_sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(k),
                        cand_.begin() + static_cast<ptrdiff_t>(n_cand_), by_logit);
      n_cand_ = k;
      sorted_ = true;
      return;
    }
    case ProcessorKind::kTopP:
    case ProcessorKind::kMinP: {
      if (!sorted_) {
        std::sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(n_cand_), by_logit);
        sorted_ = true;
      }
      const float mx = cand_[0].logit;
      double sum = 0.0;
      for (size_t i = 0; i < n_cand_; ++i) sum += std::exp(static_cast<double>(cand_[i].logit - mx));
      if (k == ProcessorKind::kTopP) {
        // Keep the smallest prefix whose probability mass reaches top_p (at least one token).
        double cum = 0.0;
        size_t keep = 1;
        for (size_t i = 0; i < n_cand_; ++i) {
          cum += std::exp(static_cast<double>(cand_[i].logit - mx)) / sum;
          keep = i + 1;
          if (cum >= params_.top_p) break;
        }
        n_cand_ = keep;
      } else {
        // Keep tokens with p >= min_p * p_max, i.e. logit >= max + log(min_p).
        const float cut = mx + std::log(params_.min_p);
        size_t keep = 1;
        while (keep < n_cand_ && cand_[keep].logit >= cut) ++keep;
        n_cand_ = keep;
      }
      return;
    }
    case ProcessorKind::kTemperature: {
      const float inv = 1.0f / params_.temperature;
      for (size_t i = 0; i < n_cand_; ++i) cand_[i].logit *= inv;
      return;
    }
  }
}

Expected<int32_t> Sampler::sample(const float* logits) {
  for (int32_t i = 0; i < n_vocab_; ++i) {
    if (std::isnan(logits[i])) {
      return Status(ErrorCode::kNumericalError, "[sampling] logit " + std::to_string(i) + " is NaN");
    }
    cand_[static_cast<size_t>(i)] = {i, logits[i]};
  }
  n_cand_ = static_cast<size_t>(n_vocab_);
  sorted_ = false;
  for (ProcessorKind k : chain_) apply(k);

  if (params_.temperature == 0.0f) {
    size_t best = 0;
    for (size_t i = 1; i < n_cand_; ++i) {
      if (cand_[i].logit > cand_[best].logit) best = i;
    }
    return cand_[best].id;
  }
  float mx = cand_[0].logit;
  for (size_t i = 1; i < n_cand_; ++i) mx = std::max(mx, cand_[i].logit);
  double sum = 0.0;
  for (size_t i = 0; i < n_cand_; ++i) sum += std::exp(static_cast<double>(cand_[i].logit - mx));
  const double target = rng_.uniform() * sum;
  double cum = 0.0;
  for (size_t i = 0; i < n_cand_; ++i) {
    cum += std::exp(static_cast<double>(cand_[i].logit - mx));
    if (cum > target) return cand_[i].id;
  }
  return cand_[n_cand_ - 1].id;  // rounding at the very end of the mass
}

}  // namespace pocket
