// Shared by the speculative tests: small random models (cached per binary), plain-Session reference
// generation, and drafters that exercise every acceptance path on purpose.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "convert/synth.h"
#include "generate/session.h"
#include "sampling/rng.h"
#include "speculative/drafter.h"
#include "speculative/speculative_session.h"
#include "test_util.h"

namespace pocket::testing {

// A synthesized "tiny" model (2 layers, 64 wide, vocabulary 300, trained context 256); n_vocab overrides
// the preset's vocabulary size when > 0.
inline std::shared_ptr<const Model> tiny_model(uint64_t seed, DType dtype = DType::kF32, int64_t n_vocab = 0) {
  static TempDir dir;
  static std::map<std::string, std::shared_ptr<const Model>> cache;
  const std::string key = std::to_string(seed) + "-" + std::string(dtype_name(dtype)) + "-" + std::to_string(n_vocab);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto h = architecture_preset("tiny");
  EXPECT_TRUE(h);
  if (n_vocab > 0) h->n_vocab = n_vocab;
  const std::string path = dir.file("tiny-" + key + ".pocket");
  SynthOptions o;
  o.dtype = dtype;
  o.seed = seed;
  Status st = synthesize_model(*h, path, o);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  auto m = Model::load(path);
  EXPECT_TRUE(m) << m.status().to_string();
  cache[key] = *m;
  return *m;
}

// Prompts of random ids with repeated stretches, so prompt lookup finds matches.
inline std::vector<std::vector<int32_t>> repetitive_prompts(int n, int32_t n_vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<std::vector<int32_t>> out;
  for (int p = 0; p < n; ++p) {
    std::vector<int32_t> ids;
    const int len = 4 + static_cast<int>(rng.next() % 20);
    for (int i = 0; i < len; ++i) ids.push_back(3 + static_cast<int32_t>(rng.next() % static_cast<uint64_t>(n_vocab - 3)));
    if (p % 2 == 1) {  // repeat a stretch of itself
      const size_t from = rng.next() % ids.size();
      std::vector<int32_t> copy(ids.begin() + static_cast<ptrdiff_t>(from), ids.end());
      ids.insert(ids.end(), copy.begin(), copy.end());
    }
    out.push_back(ids);
  }
  return out;
}

inline std::vector<int32_t> plain_generate(const std::shared_ptr<const Model>& model, std::span<const int32_t> prompt,
                                           const GenerateOptions& go, int64_t n_ctx = 0) {
  SessionOptions so;
  so.n_threads = 1;
  so.n_ctx = n_ctx;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s) << s.status().to_string();
  std::vector<int32_t> ids;
  Status st = (*s)->generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
    if (id >= 0) ids.push_back(id);
    return true;
  });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return ids;
}

inline std::vector<int32_t> spec_generate(SpeculativeSession& s, std::span<const int32_t> prompt,
                                          const GenerateOptions& go) {
  std::vector<int32_t> ids;
  Status st = s.generate_tokens(prompt, go, [&](int32_t id, std::string_view) {
    if (id >= 0) ids.push_back(id);
    return true;
  });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return ids;
}

// Proposes a known continuation (the plain greedy output) with every `corrupt_every`-th token replaced, so
// drafts are accepted up to a chosen point and rejected there: every acceptance length 0..k occurs.
class ScriptedDrafter final : public Drafter {
 public:
  ScriptedDrafter(std::vector<int32_t> prompt, std::vector<int32_t> continuation, int corrupt_every, int32_t n_vocab)
      : prompt_len_(prompt.size()), cont_(std::move(continuation)), every_(corrupt_every), n_vocab_(n_vocab) {}
  const char* name() const override { return "scripted"; }
  Expected<int32_t> propose(std::span<const int32_t> ctx, std::span<int32_t> out) override {
    const size_t at = ctx.size() - prompt_len_;  // continuation tokens already in the context
    int32_t n = 0;
    for (size_t i = 0; i < out.size() && at + i < cont_.size(); ++i) {
      int32_t t = cont_[at + i];
      if (every_ > 0 && (++calls_ % every_) == 0) t = (t + 1) % n_vocab_;
      out[i] = t;
      ++n;
    }
    return n;
  }

 private:
  size_t prompt_len_;
  std::vector<int32_t> cont_;
  int every_;
  int32_t n_vocab_;
  uint64_t calls_ = 0;
};

// Proposes random tokens: nearly everything is rejected, so every pass rolls back.
class RandomDrafter final : public Drafter {
 public:
  RandomDrafter(int32_t n_vocab, uint64_t seed) : n_vocab_(n_vocab), rng_(seed) {}
  const char* name() const override { return "random"; }
  Expected<int32_t> propose(std::span<const int32_t>, std::span<int32_t> out) override {
    for (auto& t : out) t = static_cast<int32_t>(rng_.next() % static_cast<uint64_t>(n_vocab_));
    return static_cast<int32_t>(out.size());
  }

 private:
  int32_t n_vocab_;
  Rng rng_;
};

// Two-sample chi-square test that token counts a and b (equal sample sizes) come from one distribution, at
// alpha = 0.001: cells with fewer than 20 draws in both arms together are pooled into one, the statistic is
// sum (a - b)^2 / (a + b), the critical value the Wilson-Hilferty approximation of chi-square(df)'s quantile.
inline void expect_same_distribution(const std::map<int32_t, int64_t>& a_counts,
                                     const std::map<int32_t, int64_t>& b_counts) {
  std::map<int32_t, std::pair<int64_t, int64_t>> cells;
  for (auto [id, c] : a_counts) cells[id].first += c;
  for (auto [id, c] : b_counts) cells[id].second += c;
  int64_t rare_a = 0, rare_b = 0;
  double chi2 = 0.0;
  int df = -1;
  for (auto [id, ab] : cells) {
    if (ab.first + ab.second < 20) {
      rare_a += ab.first;
      rare_b += ab.second;
      continue;
    }
    const double d = static_cast<double>(ab.first - ab.second);
    chi2 += d * d / static_cast<double>(ab.first + ab.second);
    ++df;
  }
  if (rare_a + rare_b > 0) {
    const double d = static_cast<double>(rare_a - rare_b);
    chi2 += d * d / static_cast<double>(rare_a + rare_b);
    ++df;
  }
  ASSERT_GE(df, 2) << "too few cells for a meaningful test";
  const double z = 3.090232;  // the standard normal's upper 0.001 quantile
  const double h = 2.0 / (9.0 * df);
  const double crit = df * std::pow(1.0 - h + z * std::sqrt(h), 3.0);
  EXPECT_LT(chi2, crit) << "df " << df;
}

}  // namespace pocket::testing
