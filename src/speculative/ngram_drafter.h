// Prompt lookup: proposes the tokens that followed the most recent earlier occurrence of the context's
// last n tokens (n from ngram_max down to ngram_min), in the prompt or the generated text. No model.
#pragma once

#include <memory>

#include "speculative/drafter.h"

namespace pocket {

struct NgramOptions {
  int32_t ngram_min = 1;  // shortest suffix to look up (1..ngram_max)
  int32_t ngram_max = 4;  // longest suffix to look up (ngram_min..8)
};

class NgramDrafter final : public Drafter {
 public:
  // kInvalidArgument unless 1 <= ngram_min <= ngram_max <= 8.
  static Expected<std::unique_ptr<NgramDrafter>> create(const NgramOptions& opts = {});

  const char* name() const override { return "ngram"; }
  // O(len(context) * ngram_max) per call, no allocation; longer suffix matches win, then the most recent.
  // Past the end of the context the copy continues periodically (a match inside a repeat extends it).
  Expected<int32_t> propose(std::span<const int32_t> context, std::span<int32_t> out) override;

 private:
  explicit NgramDrafter(const NgramOptions& o) : opts_(o) {}
  NgramOptions opts_;
};

}  // namespace pocket
