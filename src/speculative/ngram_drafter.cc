// Prompt-lookup drafting: a backwards scan for the context's suffix, longest n-gram first.
#include "speculative/ngram_drafter.h"

#include <algorithm>
#include <string>

namespace pocket {

Expected<std::unique_ptr<NgramDrafter>> NgramDrafter::create(const NgramOptions& o) {
  if (o.ngram_min < 1 || o.ngram_max < o.ngram_min || o.ngram_max > 8) {
    return invalid_argument("[speculative] n-gram sizes must satisfy 1 <= ngram_min <= ngram_max <= 8 (got " +
                            std::to_string(o.ngram_min) + ".." + std::to_string(o.ngram_max) + ")");
  }
  return std::unique_ptr<NgramDrafter>(new NgramDrafter(o));
}

Expected<int32_t> NgramDrafter::propose(std::span<const int32_t> ctx, std::span<int32_t> out) {
  const int64_t len = static_cast<int64_t>(ctx.size());
  const int64_t want = static_cast<int64_t>(out.size());
  if (want == 0) return 0;
  for (int64_t n = std::min<int64_t>(opts_.ngram_max, len - 1); n >= opts_.ngram_min; --n) {
    const int32_t* key = ctx.data() + (len - n);
    // Candidate starts j with j + n < len (the match is followed by at least one token), newest first.
    for (int64_t j = len - n - 1; j >= 0; --j) {
      if (ctx[static_cast<size_t>(j)] != key[0]) continue;
      if (!std::equal(key, key + n, ctx.data() + j)) continue;
      // Copy what followed the match, LZ77-style: where the copy runs past the end of the context it
      // continues from its own output, so a repeating pattern (a loop, a list) extends periodically.
      const int64_t from = j + n;
      for (int64_t i = 0; i < want; ++i) {
        const int64_t src = from + i;
        out[static_cast<size_t>(i)] = src < len ? ctx[static_cast<size_t>(src)] : out[static_cast<size_t>(src - len)];
      }
      return static_cast<int32_t>(want);
    }
  }
  return 0;
}

}  // namespace pocket
