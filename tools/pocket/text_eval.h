// Teacher-forced evaluation of a text through one or more models in lockstep (perplexity, KL divergence):
// the tokens are cut into windows of n_ctx, each run through Transformer with all_logits in chunks of
// n_batch rows, and every scored position's logits are handed to a callback.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/activation_observer.h"
#include "model/model.h"

namespace pocket::cli {

struct TextEvalOptions {
  int64_t n_ctx = 0;       // window; 0: min(the first model's context_length, 512)
  int64_t n_batch = 64;    // rows per forward pass
  int n_threads = 0;       // 0: hardware threads, at most 8
  int64_t max_tokens = 0;  // evaluate at most this many tokens of the text (0: all)
  ActivationObserver* observer = nullptr;  // set on the first model's session (pocket imatrix); not owned
};

// logits[i] is model i's row for the position whose next token is `target`. [n_vocab] f32 each.
using ScoredFn = std::function<void(std::span<const float* const> logits, int32_t target)>;

// Tokenises `text` with the first model's tokenizer (BOS at the start of each window when the model adds
// one) and runs every model over the same windows. Positions 1..n-1 of each window are scored.
Status evaluate_text(const std::vector<std::shared_ptr<const Model>>& models, const std::string& text,
                     const TextEvalOptions& opts, const ScoredFn& on_scored, int64_t* n_tokens_out);

// -log softmax(logits)[target], in double.
double token_nll(const float* logits, int64_t n_vocab, int32_t target);

Expected<std::string> read_text_file(const std::string& path);

}  // namespace pocket::cli
