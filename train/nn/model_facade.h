// Torch-free entry points to the libtorch model, for tests and tools that must not include torch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "run/named_tensor.h"
#include "core/status.h"
#include "model/hparams.h"

namespace pocket::train {

// The freshly initialised weights of a model with hyper-parameters `h` (the trainer's initialisation).
Expected<std::vector<NamedTensor>> init_model_weights(const HParams& h, uint64_t seed);

// Logits of every position of `tokens` (one sequence) computed by the libtorch model: [n_tokens, n_vocab].
Expected<std::vector<float>> libtorch_logits(const HParams& h, const std::vector<NamedTensor>& weights,
                                             std::span<const int32_t> tokens);

// Logits of one packed row as SFT trains it: token t has RoPE position positions[t] and reads token j iff
// j <= t and segments[j] == segments[t]. Empty positions: 0..n-1; empty segments: one causal sequence.
// [n_tokens, n_vocab]; an error when a non-empty span's length differs from the tokens' or a position < 0.
Expected<std::vector<float>> libtorch_logits_packed(const HParams& h, const std::vector<NamedTensor>& weights,
                                                    std::span<const int32_t> tokens,
                                                    std::span<const int32_t> positions,
                                                    std::span<const int32_t> segments);

// What the sampler computes: the first `prefill` tokens in one KV-cached pass, then one cached pass per
// further token (LlamaImpl::forward_cached). Returns the logits at columns prefill-1 .. n-1, [n - prefill + 1,
// n_vocab], which equal libtorch_logits' rows there up to float summation order. 1 <= prefill <= n.
Expected<std::vector<float>> libtorch_logits_cached(const HParams& h, const std::vector<NamedTensor>& weights,
                                                    std::span<const int32_t> tokens, int64_t prefill);

}  // namespace pocket::train
