// GrammarConstraint: token masks equal brute force (every token's bytes tried on a copy of the byte
// matcher) on random walks, for a handmade vocabulary with tokens crossing structural boundaries, Qwen3's
// 151k byte-level vocabulary, pocket-nano's byte-level BPE and llama2.c's SentencePiece vocabulary; the
// token limit always leaves room to finish; outputs parse as JSON; the cache is shared; no allocation per
// token once configurations are cached.
#include "constrain/grammar_constraint.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <thread>
#include <nlohmann/json.hpp>

#include "constrain/json_validate.h"
#include "constrain/random_generation.h"
#include "constrain/test_grammars.h"
#include "format/package.h"
#include "sampling/rng.h"
#include "test_util.h"
#include "tokenizer/hf_loader.h"
#include "tokenizer/tokenizer.h"

// Counts heap allocations (for the steady-state test); otherwise the ordinary allocator. GCC cannot see
// that these deletes pair with the replaced news, hence the pragma.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
static std::atomic<uint64_t> g_allocations{0};
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace pocket {
namespace {

using testing::json_copy_grammar;
using testing::json_object_grammar;

const std::string kSource = "Hello, 世界! She said \"hi\" to C:\\path/x\nand\ttab; 中文 text 123.";

// A small byte-level vocabulary: every printable ASCII byte, blanks, the UTF-8 bytes of the source, and
// multi-byte tokens that cross JSON's structure ("," "\"}" "\":\"" ...). Token 0 is a control token.
std::vector<std::string> small_vocab() {
  std::vector<std::string> v = {""};
  for (int c = 0x20; c < 0x7F; ++c) v.push_back(std::string(1, static_cast<char>(c)));
  v.insert(v.end(), {"\n", "\t", "a"});  // "a" twice: two ids, same bytes
  for (unsigned char c : kSource) {
    if (c >= 0x80) v.push_back(std::string(1, static_cast<char>(c)));
  }
  v.insert(v.end(), {"\",", "\"}", "\":\"", "{\"", "\":", "\", \"", "name", "\"name\"", "age", "\"age\":", "12", "345",
                     " \"", "\\\"", "\\n", "\\\\", "世", "界", "世界", "\xE4\xB8", "\x96\xE7", "ello", "Hello", "lo, 世",
                     "\"]", "[\"", "],", "\"]}", "quote", "\": \"", "\", \"n\": ", "}", "0}", "-", "\\u00e9", "tags",
                     "\u00e9", "123", "3.", " text", "said \\\"hi\\\""});
  return v;
}

// The allowed tokens by brute force: each token's bytes on a copy of `m`; the rest fits in n_left - 1.
std::vector<uint64_t> brute_force(const GrammarMatcher& m, const VocabIndex& vocab, int64_t n_left) {
  std::vector<uint64_t> bits((static_cast<size_t>(vocab.n_vocab()) + 63) / 64, 0);
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
    const std::string_view b = vocab.token_bytes(id);
    if (b.empty()) continue;
    GrammarMatcher c = m;
    if (!c.accept_bytes(b)) continue;
    if (n_left >= 0 && c.min_rest() > n_left - 1) continue;
    bits[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
  }
  return bits;
}

std::vector<int32_t> set_ids(const std::vector<uint64_t>& bits) {
  std::vector<int32_t> ids;
  for (size_t w = 0; w < bits.size(); ++w) {
    for (int k = 0; k < 64; ++k) {
      if ((bits[w] >> k) & 1u) ids.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(k)));
    }
  }
  return ids;
}

std::string describe_diff(const std::vector<uint64_t>& got, const std::vector<uint64_t>& want, const VocabIndex& vocab) {
  std::string s;
  int shown = 0;
  for (size_t w = 0; w < got.size() && shown < 8; ++w) {
    const uint64_t d = got[w] ^ want[w];
    for (int k = 0; k < 64 && shown < 8; ++k) {
      if ((d >> k) & 1u) {
        const auto id = static_cast<int32_t>(w * 64 + static_cast<size_t>(k));
        s += " [" + std::to_string(id) + " '" + std::string(vocab.token_bytes(id)) + "' " +
             ((got[w] >> k) & 1u ? "allowed, brute force says no" : "refused, brute force says yes") + "]";
        ++shown;
      }
    }
  }
  return s;
}

// Random walks: at every step the mask equals brute force; the next token is drawn from the mask.
// `limit` > 0 also checks masks under a shrinking token limit. Returns the number of compared masks.
int compare_walks(const std::shared_ptr<CompiledGrammar>& cg, std::string_view source, int walks, int steps,
                  int64_t limit, uint64_t seed) {
  int compared = 0;
  for (int w = 0; w < walks; ++w) {
    auto c = cg->start(source);
    EXPECT_TRUE(c.has_value()) << c.status().to_string();
    auto* gc = static_cast<GrammarConstraint*>(c->get());
    auto m = cg->matcher(source);
    EXPECT_TRUE(m.has_value());
    Rng rng(seed + static_cast<uint64_t>(w));
    for (int s = 0; s < steps; ++s) {
      if (gc->done()) break;
      const int64_t n_left = limit > 0 ? limit - s : -1;
      if (n_left == 0) break;
      std::vector<uint64_t> got;
      const Status st = gc->allowed(n_left, &got);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      const std::vector<uint64_t> want = brute_force(*m, cg->vocab(), n_left);
      EXPECT_EQ(got, want) << "walk " << w << " step " << s << " n_left " << n_left << ":"
                           << describe_diff(got, want, cg->vocab());
      ++compared;
      if (got != want) return compared;
      const std::vector<int32_t> ids = set_ids(got);
      if (ids.empty()) break;
      // Prefer multi-byte tokens half the time so that walks get somewhere.
      int32_t id = ids[rng.next() % ids.size()];
      for (int tries = 0; tries < 4 && rng.next() % 2 == 0 && cg->vocab().token_bytes(id).size() < 2; ++tries) {
        id = ids[rng.next() % ids.size()];
      }
      EXPECT_TRUE(gc->accept(id).is_ok());
      EXPECT_TRUE(m->accept_bytes(cg->vocab().token_bytes(id)));
      EXPECT_EQ(gc->can_stop(), m->can_end());
    }
  }
  return compared;
}

std::shared_ptr<CompiledGrammar> compile(Grammar g, std::shared_ptr<const VocabIndex> vocab, size_t cache = 64u << 20) {
  EXPECT_TRUE(g.finalized());
  auto cg = CompiledGrammar::create(std::move(g), std::move(vocab), cache);
  EXPECT_TRUE(cg.has_value()) << cg.status().to_string();
  return cg.has_value() ? *cg : nullptr;
}

TEST(GrammarConstraint, SmallVocabMasksEqualBruteForce) {
  auto vocab = VocabIndex::from_tokens(small_vocab());
  auto cg = compile(json_object_grammar(), vocab);
  EXPECT_GT(compare_walks(cg, {}, 40, 40, -1, 1), 500);
  EXPECT_GT(compare_walks(cg, {}, 20, 40, 30, 100), 200);
  EXPECT_GT(cg->cache_stats().hits, 0u);
}

TEST(GrammarConstraint, SmallVocabCopyMasksEqualBruteForce) {
  auto vocab = VocabIndex::from_tokens(small_vocab());
  auto cg = compile(json_copy_grammar(), vocab);
  EXPECT_GT(compare_walks(cg, kSource, 40, 30, -1, 2), 300);
  EXPECT_GT(compare_walks(cg, kSource, 20, 30, 25, 200), 100);
}

// A word-rich source and tokens that start or end inside its words (" 36", "U", "hin", "ilable", ...).
const std::string kWordSource = "Free returns within 30 days, size: EU 36, colour: available in blue (was 59.99). 墨绿色";
std::vector<std::string> word_vocab() {
  std::vector<std::string> v = small_vocab();
  for (unsigned char c : std::string("墨绿色")) v.push_back(std::string(1, static_cast<char>(c)));
  v.insert(v.end(), {"with", "within", "in", "hin", "it", " 30", "30", "EU", "U", " 36", "36", "ava", "ilable", "available",
                     "blue", "bl", "ble", "墨绿", "色", "Free", "ree", " days", "day", "s,", "59", ".99", "9.", " in",
                     "in blue", "EU 3", "\", \"n\": 3", "ue", "returns"});
  return v;
}

int32_t token_id(const std::vector<std::string>& v, std::string_view bytes) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == bytes) return static_cast<int32_t>(i);
  }
  ADD_FAILURE() << "no token '" << bytes << "'";
  return -1;
}

TEST(GrammarConstraint, TokensCrossingStructuralBoundaries) {
  const auto tokens = small_vocab();
  auto vocab = VocabIndex::from_tokens(tokens);
  auto cg = compile(json_object_grammar(), vocab);
  auto allowed_after = [&](const std::vector<std::string>& prefix, std::string_view token) {
    auto c = cg->start();
    for (const std::string& t : prefix) EXPECT_TRUE((*c)->accept(token_id(tokens, t)).is_ok()) << t;
    std::vector<uint64_t> bits;
    EXPECT_TRUE(static_cast<GrammarConstraint*>(c->get())->allowed(-1, &bits).is_ok());
    const int32_t id = token_id(tokens, token);
    return ((bits[static_cast<size_t>(id) / 64] >> (id % 64)) & 1u) != 0;
  };
  EXPECT_TRUE(allowed_after({}, "{\""));
  EXPECT_FALSE(allowed_after({}, "\","));
  EXPECT_TRUE(allowed_after({"{\"", "name"}, "\":\""));      // "name":"  — key closed, value opened
  EXPECT_FALSE(allowed_after({"{\""}, "age"));                // only "name" comes first
  EXPECT_TRUE(allowed_after({"{\"", "name", "\":\"", "Hello"}, "\","));  // the string closed, next field
  EXPECT_FALSE(allowed_after({"{\"", "name", "\":\"", "Hello"}, "\"}"));  // "age" is required
  EXPECT_TRUE(allowed_after({"{\"", "name", "\":\"", "Hello"}, "\\\""));  // an escaped quote stays inside
  EXPECT_TRUE(allowed_after({"{\"", "name", "\":\"", "Hello", "\",", "\"age\":", "12"}, "}"));
  EXPECT_TRUE(allowed_after({"{\"", "name", "\":\"", "Hello", "\",", "\"age\":", "12"}, "345"));
  EXPECT_FALSE(allowed_after({"{\"", "name", "\":\"", "Hello", "\",", "\"age\":", "0"}, "12"));  // no leading zero
  EXPECT_TRUE(allowed_after({"{\"", "name", "\":\"", "Hello", "\",", "\"age\":", "-"}, "0}"));
  EXPECT_FALSE(allowed_after({"{\"", "name", "\":\"", "Hello", "\",", "\"age\":"}, "}"));
  // A token ending inside a UTF-8 character is allowed in a string; its completion must follow.
  EXPECT_TRUE(allowed_after({"{\"", "name", "\":\""}, "\xE4\xB8"));
  EXPECT_TRUE(allowed_after({"{\"", "name", "\":\"", "\xE4\xB8"}, "\x96\xE7"));
  EXPECT_FALSE(allowed_after({"{\"", "name", "\":\"", "\xE4\xB8"}, "\""));
}

TEST(GrammarConstraint, WholeWordTokens) {
  const auto tokens = word_vocab();
  auto vocab = VocabIndex::from_tokens(tokens);
  auto cg = compile(json_copy_grammar(), vocab);
  auto allowed_after = [&](const std::vector<std::string>& prefix, std::string_view token) {
    auto c = cg->start(kWordSource);
    EXPECT_TRUE((*c)->accept(token_id(tokens, "{\"")).is_ok());
    EXPECT_TRUE((*c)->accept(token_id(tokens, "quote")).is_ok());
    EXPECT_TRUE((*c)->accept(token_id(tokens, "\": \"")).is_ok());
    for (const std::string& t : prefix) EXPECT_TRUE((*c)->accept(token_id(tokens, t)).is_ok()) << t;
    std::vector<uint64_t> bits;
    EXPECT_TRUE(static_cast<GrammarConstraint*>(c->get())->allowed(-1, &bits).is_ok());
    const int32_t id = token_id(tokens, token);
    return ((bits[static_cast<size_t>(id) / 64] >> (id % 64)) & 1u) != 0;
  };
  EXPECT_TRUE(allowed_after({}, "EU"));
  EXPECT_TRUE(allowed_after({}, " 36"));      // a span may start with a blank
  EXPECT_TRUE(allowed_after({}, "in blue"));
  EXPECT_FALSE(allowed_after({}, "U"));        // only inside "EU"
  EXPECT_FALSE(allowed_after({}, "hin"));
  EXPECT_FALSE(allowed_after({}, "ilable"));
  EXPECT_TRUE(allowed_after({}, "with"));      // "within" goes on
  EXPECT_TRUE(allowed_after({"with"}, "in"));
  EXPECT_FALSE(allowed_after({"with"}, "\", \"n\": "));  // "with" is not a word of the source
  EXPECT_TRUE(allowed_after({"within"}, "\", \"n\": "));
  EXPECT_TRUE(allowed_after({"EU"}, " 36"));
  EXPECT_TRUE(allowed_after({"EU", " 36"}, "\", \"n\": 3"));
  EXPECT_TRUE(allowed_after({"EU"}, "\", \"n\": 3"));
  EXPECT_TRUE(allowed_after({}, "EU 3"));     // a prefix of "EU 36"
  EXPECT_FALSE(allowed_after({"EU 3"}, "\", \"n\": "));
  EXPECT_TRUE(allowed_after({"EU 3"}, "6"));
  EXPECT_TRUE(allowed_after({"墨绿"}, "\", \"n\": "));  // every CJK character is a boundary
}

TEST(GrammarConstraint, CopyTokensCrossTheSpanEnd) {
  const auto tokens = small_vocab();
  auto vocab = VocabIndex::from_tokens(tokens);
  auto cg = compile(json_copy_grammar(), vocab);
  auto c = cg->start(kSource);
  auto* gc = static_cast<GrammarConstraint*>(c->get());
  for (const char* t : {"{\"", "quote", "\": \"", "said \\\"hi\\\""}) ASSERT_TRUE(gc->accept(token_id(tokens, t)).is_ok()) << t;
  std::vector<uint64_t> bits;
  ASSERT_TRUE(gc->allowed(-1, &bits).is_ok());
  auto allowed = [&](std::string_view t) {
    const int32_t id = token_id(tokens, t);
    return ((bits[static_cast<size_t>(id) / 64] >> (id % 64)) & 1u) != 0;
  };
  EXPECT_TRUE(allowed("\", \"n\": "));  // leaves the span and writes the next key
  EXPECT_TRUE(allowed(" "));           // "said \"hi\" to" continues the span
  EXPECT_TRUE(allowed("\","));   // the closing quote and the comma after it
  EXPECT_FALSE(allowed("\"}"));  // the "n" field is required
  EXPECT_FALSE(allowed("x"));
  EXPECT_FALSE(allowed("\\\""));
  ASSERT_TRUE(gc->accept(token_id(tokens, "\", \"n\": ")).is_ok());
  EXPECT_FALSE(gc->accept(token_id(tokens, "}")).is_ok());
  ASSERT_TRUE(gc->accept(token_id(tokens, "0}")).is_ok());
  EXPECT_TRUE(gc->done());
  EXPECT_TRUE(gc->can_stop());
}

// Under a token limit, random generations always finish the grammar, and the result parses as JSON.
// With `check_quote`, the "quote" must pass validate_json's copy rule for `mode` (written apart from the
// automaton: an occurrence of the span whose ends are word boundaries, or any occurrence).
void check_limits(const std::shared_ptr<CompiledGrammar>& cg, std::string_view source, int32_t n_vocab, int32_t eos,
                  int32_t min_limit, int32_t max_limit, int seeds, bool check_quote, CopyMode mode = CopyMode::kWords) {
  const auto quote_schema = nlohmann::json::parse(std::string(R"({"type":"object","properties":{"quote":{"type":"string",
      "x-pocket-copy":)") + (mode == CopyMode::kWords ? "true" : "\"substring\"") + R"(},"n":{"type":"integer"}},
      "required":["quote","n"],"additionalProperties":false})");
  for (int32_t limit = min_limit; limit <= max_limit; limit += std::max(1, (max_limit - min_limit) / 6)) {
    for (int s = 0; s < seeds; ++s) {
      auto c = cg->start(source);
      ASSERT_TRUE(c.has_value());
      const testing::RandomGeneration r = testing::random_generation(
          **c, n_vocab, eos, static_cast<uint64_t>(limit * 1000 + s), limit,
          [&](int32_t id) { return cg->vocab().token_bytes(id); });
      ASSERT_TRUE(r.status.is_ok()) << r.status.to_string() << " limit " << limit << " seed " << s << " after '" << r.bytes << "'";
      ASSERT_LE(static_cast<int32_t>(r.ids.size()), limit);
      ASSERT_TRUE((*c)->can_stop()) << "limit " << limit << " seed " << s << ": '" << r.bytes << "'";
      const auto j = nlohmann::json::parse(r.bytes, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << r.bytes;
      if (check_quote) {
        ASSERT_TRUE(j.contains("quote")) << r.bytes;
        const std::string q = j["quote"].get<std::string>();
        EXPECT_FALSE(q.empty());
        EXPECT_NE(std::string(source).find(q), std::string::npos) << "'" << q << "' is not in the source";
        EXPECT_TRUE(j["n"].is_number_integer());
        const std::vector<std::string> errors = validate_json(quote_schema, j, source);
        EXPECT_TRUE(errors.empty()) << errors[0] << " in " << r.bytes;
      } else {
        ASSERT_TRUE(j.contains("name") && j.contains("age")) << r.bytes;
        EXPECT_TRUE(j["name"].is_string());
        EXPECT_TRUE(j["age"].is_number_integer());
      }
    }
  }
}

TEST(GrammarConstraint, TokenLimitAlwaysLeavesRoomToFinish) {
  auto vocab = VocabIndex::from_tokens(small_vocab());
  auto cg = compile(json_object_grammar(), vocab);
  // The shortest output {"name":"","age":0} is 20 bytes; every limit from there must succeed.
  check_limits(cg, {}, vocab->n_vocab(), 0, 20, 60, 8, false);
  auto cc = compile(json_copy_grammar(), vocab);
  check_limits(cc, kSource, vocab->n_vocab(), 0, 23, 50, 8, true);
  // A limit below the shortest output is refused clearly, never an empty mask.
  auto c = cg->start();
  std::vector<float> logits(static_cast<size_t>(vocab->n_vocab()), 0.0f);
  const Status st = (*c)->mask(logits.data(), vocab->n_vocab(), 5);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("[grammar]"), std::string::npos) << st.message();
  EXPECT_FALSE((*c)->mask(logits.data(), vocab->n_vocab(), 0).is_ok());
}

TEST(GrammarConstraint, SmallVocabSubstringCopyMasksEqualBruteForce) {
  auto vocab = VocabIndex::from_tokens(small_vocab());
  auto cg = compile(json_copy_grammar(CopyMode::kSubstring), vocab);
  EXPECT_GT(compare_walks(cg, kSource, 40, 30, -1, 3), 300);
  EXPECT_GT(compare_walks(cg, kSource, 20, 30, 25, 300), 100);
  check_limits(cg, kSource, vocab->n_vocab(), 0, 23, 50, 8, true, CopyMode::kSubstring);
}

TEST(GrammarConstraint, WholeWordMasksEqualBruteForce) {
  auto vocab = VocabIndex::from_tokens(word_vocab());
  auto cg = compile(json_copy_grammar(), vocab);
  EXPECT_GT(compare_walks(cg, kWordSource, 60, 30, -1, 4), 400);
  EXPECT_GT(compare_walks(cg, kWordSource, 30, 30, 24, 400), 150);
  check_limits(cg, kWordSource, vocab->n_vocab(), 0, 23, 50, 10, true);
}

TEST(GrammarConstraint, MaskSetsMinusInfinityAndKeepsTheRest) {
  auto vocab = VocabIndex::from_tokens(small_vocab());
  auto cg = compile(json_object_grammar(), vocab);
  auto c = cg->start();
  const int32_t n_model = vocab->n_vocab() + 7;  // the model may have padding rows past the tokenizer
  std::vector<float> logits(static_cast<size_t>(n_model));
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i) * 0.5f;
  ASSERT_TRUE((*c)->mask(logits.data(), n_model, -1).is_ok());
  std::vector<uint64_t> bits;
  ASSERT_TRUE(static_cast<GrammarConstraint*>(c->get())->allowed(-1, &bits).is_ok());
  int kept = 0;
  for (int32_t i = 0; i < n_model; ++i) {
    const bool allow = i < vocab->n_vocab() && ((bits[static_cast<size_t>(i) / 64] >> (i % 64)) & 1u);
    if (allow) {
      EXPECT_EQ(logits[static_cast<size_t>(i)], static_cast<float>(i) * 0.5f);
      ++kept;
    } else {
      EXPECT_TRUE(std::isinf(logits[static_cast<size_t>(i)]) && logits[static_cast<size_t>(i)] < 0) << i;
    }
  }
  EXPECT_EQ(kept, 2);  // "{" and "{\""
  EXPECT_FALSE((*c)->accept(0).is_ok());            // the control token
  EXPECT_FALSE((*c)->accept(-3).is_ok());
  EXPECT_FALSE((*c)->accept(vocab->n_vocab()).is_ok());
  EXPECT_FALSE((*c)->accept(token_id(small_vocab(), "}")).is_ok());
  EXPECT_FALSE((*c)->can_stop());
  EXPECT_FALSE((*c)->done());
}

TEST(GrammarConstraint, CacheIsSharedBetweenGenerationsAndBounded) {
  auto vocab = VocabIndex::from_tokens(small_vocab());
  auto cg = compile(json_object_grammar(), vocab);
  const auto run = [&](uint64_t seed) {
    auto c = cg->start();
    return testing::random_generation(**c, vocab->n_vocab(), 0, seed, 200, [&](int32_t id) { return vocab->token_bytes(id); },
                                      false);
  };
  const auto first = run(7);
  ASSERT_TRUE(first.status.is_ok()) << first.status.to_string();
  const auto stats1 = cg->cache_stats();
  const auto second = run(7);
  EXPECT_EQ(first.ids, second.ids);
  const auto stats2 = cg->cache_stats();
  EXPECT_EQ(stats2.entries, stats1.entries);  // nothing new to compute
  EXPECT_GT(stats2.hits, stats1.hits);
  EXPECT_GT(stats1.bytes, 0u);
  // A cache too small to hold one mask still gives the same masks.
  auto tiny = compile(json_object_grammar(), vocab, 16);
  auto c = tiny->start();
  const auto r = testing::random_generation(**c, vocab->n_vocab(), 0, 7, 200, [&](int32_t id) { return vocab->token_bytes(id); },
                                            false);
  EXPECT_EQ(r.ids, first.ids);
  EXPECT_EQ(tiny->cache_stats().entries, 0u);
}

TEST(GrammarConstraint, NoAllocationPerTokenOnceCached) {
  auto vocab = VocabIndex::from_tokens(small_vocab());
  auto cg = compile(json_copy_grammar(), vocab);
  auto gen = [&](uint64_t* allocations) {
    auto c = cg->start(kSource);
    std::vector<float> logits(static_cast<size_t>(vocab->n_vocab()));
    Rng rng(11);
    std::vector<int32_t> ids;
    uint64_t counted = 0;
    for (int step = 0; step < 60 && !(*c)->done(); ++step) {
      for (float& l : logits) l = static_cast<float>(rng.uniform());
      const uint64_t before = g_allocations.load();
      EXPECT_TRUE((*c)->mask(logits.data(), vocab->n_vocab(), 60 - step).is_ok());
      counted += g_allocations.load() - before;
      int32_t best = -1;
      for (int32_t i = 0; i < vocab->n_vocab(); ++i) {
        if (!std::isinf(logits[static_cast<size_t>(i)]) && (best < 0 || logits[static_cast<size_t>(i)] > logits[static_cast<size_t>(best)])) best = i;
      }
      const uint64_t before_accept = g_allocations.load();
      EXPECT_TRUE((*c)->accept(best).is_ok());
      counted += g_allocations.load() - before_accept;
      ids.push_back(best);
    }
    EXPECT_TRUE((*c)->can_stop());
    *allocations = counted;
    return ids;
  };
  uint64_t cold = 0, warm = 0;
  const auto a = gen(&cold);
  const auto b = gen(&warm);
  EXPECT_EQ(a, b);
  EXPECT_GT(cold, 0u);
  EXPECT_EQ(warm, 0u) << "allocations in mask/accept over " << b.size() << " tokens";
}

TEST(GrammarConstraint, SharedAcrossThreadsLikeOneAtATime) {
  auto vocab = VocabIndex::from_tokens(small_vocab());
  auto gen = [&](const std::shared_ptr<CompiledGrammar>& cg, uint64_t seed) {
    auto c = cg->start(kSource);
    EXPECT_TRUE(c.has_value());
    const auto r = testing::random_generation(**c, vocab->n_vocab(), 0, seed, 40 + static_cast<int32_t>(seed % 20),
                                              [&](int32_t id) { return vocab->token_bytes(id); });
    EXPECT_TRUE(r.status.is_ok()) << r.status.to_string();
    return r.ids;
  };
  constexpr int kThreads = 4, kPerThread = 6;
  std::vector<std::vector<int32_t>> want(kThreads * kPerThread), got(kThreads * kPerThread);
  for (bool copy : {false, true}) {
    auto make = [&] { return compile(copy ? json_copy_grammar() : json_object_grammar(), vocab); };
    for (int i = 0; i < kThreads * kPerThread; ++i) want[static_cast<size_t>(i)] = gen(make(), static_cast<uint64_t>(i));
    auto shared = make();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int k = 0; k < kPerThread; ++k) {
          const int i = k * kThreads + t;
          got[static_cast<size_t>(i)] = gen(shared, static_cast<uint64_t>(i));
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(got, want) << (copy ? "copy grammar" : "object grammar");
  }
}

// ---- real vocabularies ----

const Tokenizer* qwen3() {
  static std::unique_ptr<Tokenizer> tok = [] {
    const std::string dir = testing::shared_data_dir();
    if (dir.empty()) return std::unique_ptr<Tokenizer>();
    auto t = load_hf_tokenizer(dir + "/tokenizers/qwen3/tokenizer.json");
    EXPECT_TRUE(t.has_value()) << t.status().to_string();
    return t.has_value() ? std::move(t).value() : nullptr;
  }();
  return tok.get();
}

std::shared_ptr<const VocabIndex> qwen3_vocab() {
  static std::shared_ptr<const VocabIndex> v = qwen3() != nullptr ? VocabIndex::build(*qwen3()) : nullptr;
  return v;
}

std::unique_ptr<Tokenizer> nano_tokenizer() {
  const auto path = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "models" /
                    "pocket-nano-q4.pocket";
  if (!std::filesystem::exists(path)) return nullptr;
  auto pkg = Package::open(path.string());
  EXPECT_TRUE(pkg.has_value()) << pkg.status().to_string();
  if (!pkg.has_value()) return nullptr;
  auto tok = load_tokenizer_section(pkg->tokenizer_bytes());
  EXPECT_TRUE(tok.has_value()) << tok.status().to_string();
  return tok.has_value() ? std::move(tok).value() : nullptr;
}

TEST(GrammarConstraintQwen3, VocabIndexCoversTheVocabulary) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3();
  ASSERT_NE(tok, nullptr);
  auto v = qwen3_vocab();
  EXPECT_EQ(v->n_vocab(), tok->n_vocab());
  EXPECT_FALSE(v->in_trie(151644));  // <|im_start|>, a control token
  EXPECT_GT(v->n_indexed(), 151000);
  // Every indexed token is found in the trie by its bytes.
  for (int32_t id : {0, 220, 1000, 50000, 151642}) {
    const std::string_view b = v->token_bytes(id);
    ASSERT_FALSE(b.empty());
    size_t node = 0, depth = 0;
    const size_t n = v->n_nodes();
    bool found = false;
    for (size_t i = 0; i < n && depth < b.size();) {
      if (v->depths()[i] == depth + 1 && v->labels()[i] == static_cast<uint8_t>(b[depth])) {
        node = i;
        ++depth;
        if (depth == b.size()) {
          for (int32_t k = v->token_begins()[node]; k < v->token_begins()[node + 1]; ++k) found |= v->ids()[k] == id;
        }
        ++i;
      } else {
        i = static_cast<size_t>(v->subtree_ends()[i]);
      }
    }
    EXPECT_TRUE(found) << id;
  }
}

TEST(GrammarConstraintQwen3, JsonMasksEqualBruteForce) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  ASSERT_NE(qwen3(), nullptr);
  auto cg = compile(json_object_grammar(), qwen3_vocab());
  EXPECT_GE(compare_walks(cg, {}, 2, 5, -1, 3), 8);
  EXPECT_GE(compare_walks(cg, {}, 1, 4, 24, 4), 3);
}

TEST(GrammarConstraintQwen3, CopyMasksEqualBruteForce) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  ASSERT_NE(qwen3(), nullptr);
  auto cg = compile(json_copy_grammar(), qwen3_vocab());
  EXPECT_GE(compare_walks(cg, kSource, 2, 5, -1, 5), 8);
}

TEST(GrammarConstraintQwen3, RandomGenerationsFinishWithinTheLimit) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  ASSERT_NE(qwen3(), nullptr);
  auto vocab = qwen3_vocab();
  auto cg = compile(json_object_grammar(), vocab);
  check_limits(cg, {}, vocab->n_vocab(), qwen3()->eos_id(), 20, 40, 2, false);
  auto cc = compile(json_copy_grammar(), vocab);
  check_limits(cc, kSource, vocab->n_vocab(), qwen3()->eos_id(), 24, 40, 2, true);
}

TEST(GrammarConstraintNano, MasksEqualBruteForceAndOutputsParse) {
  auto tok = nano_tokenizer();
  if (tok == nullptr) GTEST_SKIP() << "models/pocket-nano-q4.pocket is absent";
  auto vocab = VocabIndex::build(*tok);
  auto cg = compile(json_object_grammar(), vocab);
  EXPECT_GE(compare_walks(cg, {}, 4, 20, -1, 6), 40);
  auto cc = compile(json_copy_grammar(), vocab);
  EXPECT_GE(compare_walks(cc, kSource, 4, 20, -1, 7), 40);
  check_limits(cg, {}, vocab->n_vocab(), tok->eos_id(), 20, 50, 3, false);
  check_limits(cc, kSource, vocab->n_vocab(), tok->eos_id(), 24, 50, 3, true);
}

TEST(GrammarConstraintLlama2c, SentencePieceVocabulary) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  auto tok = load_llama2c_tokenizer(dir + "/models/stories260K/tok512.bin", 512);
  ASSERT_TRUE(tok.has_value()) << tok.status().to_string();
  auto vocab = VocabIndex::build(**tok);
  // Pieces with the leading-space marker index as their bytes (" the"), byte tokens as their byte.
  int with_space = 0;
  for (int32_t id = 0; id < vocab->n_vocab(); ++id) with_space += vocab->token_bytes(id).starts_with(" ");
  EXPECT_GT(with_space, 50);
  auto cg = compile(json_object_grammar(), vocab);
  EXPECT_GE(compare_walks(cg, {}, 6, 25, -1, 8), 60);
  auto cc = compile(json_copy_grammar(), vocab);
  EXPECT_GE(compare_walks(cc, kSource, 4, 25, -1, 9), 40);
  check_limits(cg, {}, vocab->n_vocab(), (*tok)->eos_id(), 20, 50, 3, false);
  check_limits(cc, kSource, vocab->n_vocab(), (*tok)->eos_id(), 24, 50, 3, true);
}

}  // namespace
}  // namespace pocket
