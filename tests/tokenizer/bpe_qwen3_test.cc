// Byte-level BPE with the Qwen3 tokenizer.json: the 320 Hugging Face golden cases, llama.cpp's qwen2
// vectors, decode(encode(x)) == x, special tokens, the section round trip (plain and zstd-compressed), and
// bounded time on 1 MB of one character (roughly linear growth).
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "format/section_compression.h"
#include "test_util.h"
#include "tokenizer/golden_vectors.h"
#include "tokenizer/hf_loader.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer_io.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace pocket {
namespace {

// Loaded once for the whole suite (the JSON is 11 MB).
const Tokenizer* qwen3(const std::string& dir) {
  static std::unique_ptr<Tokenizer> tok = [&] {
    auto t = load_hf_tokenizer(dir + "/tokenizers/qwen3/tokenizer.json");
    EXPECT_TRUE(t.has_value()) << t.status().to_string();
    return t.has_value() ? std::move(t).value() : nullptr;
  }();
  return tok.get();
}

std::string show(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t x : v) s += " " + std::to_string(x);
  return s;
}

TEST(BpeQwen3, LoadsTokenizerJson) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3(dir);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 151669);
  EXPECT_EQ(tok->bos_id(), -1);
  EXPECT_EQ(tok->eos_id(), 151645);
  EXPECT_EQ(tok->piece_text(151644), "<|im_start|>");
  EXPECT_EQ(tok->token_type(151644), TokenType::kControl);
  EXPECT_EQ(tok->token_type(151667), TokenType::kUserDefined);  // <think>
  EXPECT_EQ(tok->chat_template_name(), "chatml");
}

TEST(BpeQwen3, MatchesHuggingFaceOn320Cases) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3(dir);
  ASSERT_NE(tok, nullptr);
  const auto cases = testing::read_golden(dir + "/tokenizers/qwen3/qwen3-zhen.inp", dir + "/tokenizers/qwen3/qwen3-zhen.out");
  ASSERT_EQ(cases.size(), 320u);
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<int32_t> ids;
    ASSERT_TRUE(tok->encode(cases[i].text, {.parse_special = true}, &ids).is_ok());  // produced with special text matched
    if (ids != cases[i].ids && ++failures <= 10) {
      ADD_FAILURE() << "case " << i << " '" << cases[i].text << "'\n want" << show(cases[i].ids) << "\n got " << show(ids);
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(BpeQwen3, MatchesLlamaCppQwen2Vectors) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3(dir);
  ASSERT_NE(tok, nullptr);
  const std::string base = dir + "/tokenizers/vectors/ggml-vocab-qwen2.gguf";
  const auto cases = testing::read_golden(base + ".inp", base + ".out");
  ASSERT_EQ(cases.size(), 46u);
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<int32_t> ids;
    ASSERT_TRUE(tok->encode(cases[i].text, {}, &ids).is_ok());
    EXPECT_EQ(ids, cases[i].ids) << "case " << i << " '" << cases[i].text << "'";
  }
}

TEST(BpeQwen3, DecodeInvertsEncode) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3(dir);
  ASSERT_NE(tok, nullptr);
  auto cases = testing::read_golden(dir + "/tokenizers/qwen3/qwen3-zhen.inp", dir + "/tokenizers/qwen3/qwen3-zhen.out");
  const auto more = testing::read_golden(dir + "/tokenizers/vectors/ggml-vocab-qwen2.gguf.inp",
                                         dir + "/tokenizers/vectors/ggml-vocab-qwen2.gguf.out");
  cases.insert(cases.end(), more.begin(), more.end());
  int checked = 0;
  for (const auto& c : cases) {
    if (!is_valid_utf8(c.text)) continue;
    std::vector<int32_t> ids;
    ASSERT_TRUE(tok->encode(c.text, {}, &ids).is_ok());
    // Qwen normalises to NFC, so text comes back as its NFC form (identical for text already in NFC).
    std::string want;
    ASSERT_TRUE(append_nfc(c.text, &want).is_ok());
    EXPECT_EQ(tok->decode(ids), want) << c.text;
    ++checked;
  }
  EXPECT_EQ(checked, 366);
  std::vector<int32_t> ids;
  const std::string decomposed = "e\xCC\x81";  // e + combining acute -> é
  ASSERT_TRUE(tok->encode(decomposed, {}, &ids).is_ok());
  EXPECT_EQ(tok->decode(ids), "\xC3\xA9");
}

TEST(BpeQwen3, SpecialTokenTextIsPlainUnlessAsked) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3(dir);
  ASSERT_NE(tok, nullptr);
  const std::string text = "<|im_start|>user\nhi<|im_end|>";
  std::vector<int32_t> plain, special;
  ASSERT_TRUE(tok->encode(text, {}, &plain).is_ok());
  ASSERT_TRUE(tok->encode(text, {.parse_special = true}, &special).is_ok());
  for (int32_t id : plain) EXPECT_LT(id, 151643) << "special token from plain text";
  EXPECT_EQ(tok->decode(plain), text);
  ASSERT_GE(special.size(), 3u);
  EXPECT_EQ(special.front(), 151644);
  EXPECT_EQ(special.back(), 151645);
  EXPECT_EQ(tok->decode(special), "user\nhi");  // control tokens print nothing
}

TEST(BpeQwen3, BadTextIsReplacedConsistently) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3(dir);
  ASSERT_NE(tok, nullptr);
  std::vector<int32_t> a, b, c;
  ASSERT_TRUE(tok->encode("x\xFFy\xED\xA0\x80z\xE4\xBD", {}, &a).is_ok());
  ASSERT_TRUE(tok->encode("x\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz\xEF\xBF\xBD", {}, &b).is_ok());
  EXPECT_EQ(a, b);
  ASSERT_TRUE(tok->encode(std::string("a\0b", 3), {}, &c).is_ok());
  EXPECT_EQ(tok->decode(c), std::string("a\0b", 3));
}

TEST(BpeQwen3, SectionRoundTrip) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3(dir);
  ASSERT_NE(tok, nullptr);
  const std::vector<uint8_t> bytes = tok->serialize();
  auto again = load_tokenizer_section(bytes);
  ASSERT_TRUE(again.has_value()) << again.status().to_string();
  const std::string text = "混合Mixed文本text123数字 <|im_end|> don't";
  for (bool special : {false, true}) {
    std::vector<int32_t> x, y;
    ASSERT_TRUE(tok->encode(text, {.parse_special = special}, &x).is_ok());
    ASSERT_TRUE((*again)->encode(text, {.parse_special = special}, &y).is_ok());
    EXPECT_EQ(x, y);
  }
  EXPECT_EQ((*again)->eos_id(), 151645);
}

// The section as a package stores it: zstd-compressed (docs/format.md, "Compressed sections"), decoded back
// byte for byte. Prints the sizes that docs/format.md quotes.
TEST(BpeQwen3, SectionCompresses) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3(dir);
  ASSERT_NE(tok, nullptr);
  const std::vector<uint8_t> bytes = tok->serialize();
  auto stored = encode_zstd_section(bytes, kDefaultZstdLevel);
  ASSERT_TRUE(stored.has_value()) << stored.status().to_string();
  auto back = decode_zstd_section(*stored, "section 2 (tokenizer)", "qwen3");
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  ASSERT_EQ(back->size(), bytes.size());
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), back->bytes().begin()));
  std::printf("qwen3 tokenizer section: %zu bytes, %zu stored with zstd level %d (%.1f%%)\n", bytes.size(),
              stored->size(), kDefaultZstdLevel, 100.0 * static_cast<double>(stored->size()) / static_cast<double>(bytes.size()));
  EXPECT_LT(stored->size(), bytes.size() / 2);
}

// CPU time of this thread: unlike wall time it does not grow when other jobs share the machine.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double seconds_to_encode(const Tokenizer& tok, const std::string& text, size_t* n_tokens) {
  std::vector<int32_t> ids;
  const double t0 = thread_cpu_seconds();
  EXPECT_TRUE(tok.encode(text, {}, &ids).is_ok());
  *n_tokens = ids.size();
  return thread_cpu_seconds() - t0;
}

std::string repeat(const std::string& unit, size_t bytes) {
  std::string s;
  s.reserve(bytes + unit.size());
  while (s.size() < bytes) s += unit;
  return s;
}

// RELIABILITY.md 12: BPE is O(n log n) per word (heap + linked list), the regex linear per match; so 1 MB of
// one character finishes in bounded time and 4x the text takes about 4x the time (allowed: < 10x).
TEST(BpeQwen3, OneMegabyteOfOneCharacterIsBoundedAndLinear) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  const Tokenizer* tok = qwen3(dir);
  ASSERT_NE(tok, nullptr);
#if defined(__SANITIZE_ADDRESS__)
  const double slack = 10.0;  // sanitiser builds run several times slower
#else
  const double slack = 1.0;
#endif
  for (const std::string unit : {"a", " ", "\xE4\xB8\xAD", "1"}) {
    size_t n_small = 0, n_big = 0, n_mb = 0;
    // Best of two runs each, to keep a busy machine from deciding the ratio.
    const std::string small = repeat(unit, 100'000), big = repeat(unit, 400'000);
    const double t_small = std::max(std::min(seconds_to_encode(*tok, small, &n_small), seconds_to_encode(*tok, small, &n_small)), 1e-4);
    const double t_big = std::min(seconds_to_encode(*tok, big, &n_big), seconds_to_encode(*tok, big, &n_big));
    const std::string mb = repeat(unit, 1'000'000);
    std::vector<int32_t> ids;
    const double t0 = thread_cpu_seconds();
    ASSERT_TRUE(tok->encode(mb, {}, &ids).is_ok());
    const double t_mb = thread_cpu_seconds() - t0;
    std::printf("  1 MB of '%s': %.3f s, %zu tokens (100 KB %.4f s, 400 KB %.4f s)\n", unit.c_str(), t_mb, ids.size(),
                t_small, t_big);
    EXPECT_LT(t_mb, 10.0 * slack) << "1 MB of '" << unit << "' took " << t_mb << " s";
    EXPECT_LT(t_big / t_small, 12.0) << "'" << unit << "': 100 KB " << t_small << " s, 400 KB " << t_big << " s";
    EXPECT_EQ(tok->decode(ids), mb);
  }
}

}  // namespace
}  // namespace pocket
