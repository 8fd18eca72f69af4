// Vocabularies from GGUF metadata against llama.cpp's golden vectors (llama-spm, gpt-2, phi-3), the
// round trip decode(encode(x)) == x, and the .pocket section round trip.
#include <gtest/gtest.h>

#include "convert/gguf_tokenizer.h"
#include "test_util.h"
#include "tokenizer/golden_vectors.h"
#include "tokenizer/tokenizer_io.h"
#include "tokenizer/utf8.h"

namespace pocket {
namespace {

std::string show(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t x : v) s += " " + std::to_string(x);
  return s;
}

void check_vectors(const std::string& dir, const std::string& vocab, bool expect_roundtrip) {
  const std::string base = dir + "/tokenizers/vectors/ggml-vocab-" + vocab + ".gguf";
  auto tok = load_gguf_tokenizer(base);
  ASSERT_TRUE(tok.has_value()) << tok.status().to_string();
  const auto cases = testing::read_golden(base + ".inp", base + ".out");
  ASSERT_FALSE(cases.empty());
  auto section = load_tokenizer_section((*tok)->serialize());
  ASSERT_TRUE(section.has_value()) << section.status().to_string();
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<int32_t> ids, again;
    ASSERT_TRUE((*tok)->encode(cases[i].text, {}, &ids).is_ok());
    if (ids != cases[i].ids && ++failures <= 10) {
      ADD_FAILURE() << vocab << " case " << i << " '" << cases[i].text << "'\n want" << show(cases[i].ids) << "\n got "
                    << show(ids);
    }
    ASSERT_TRUE((*section)->encode(cases[i].text, {}, &again).is_ok());
    EXPECT_EQ(again, ids) << "section round trip, case " << i;
    if (expect_roundtrip && is_valid_utf8(cases[i].text)) {
      EXPECT_EQ((*tok)->decode(ids), cases[i].text) << vocab << " case " << i;
    }
  }
  EXPECT_EQ(failures, 0) << vocab << ": " << failures << " of " << cases.size() << " cases differ";
}

TEST(GgufTokenizer, LlamaSpmMatchesLlamaCpp) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  check_vectors(dir, "llama-spm", true);
}

TEST(GgufTokenizer, Gpt2MatchesLlamaCpp) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  check_vectors(dir, "gpt-2", true);
}

TEST(GgufTokenizer, Phi3MatchesLlamaCpp) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  check_vectors(dir, "phi-3", true);
}

TEST(GgufTokenizer, LlamaSpmSpecialIds) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  auto tok = load_gguf_tokenizer(dir + "/tokenizers/vectors/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(tok.has_value());
  EXPECT_EQ((*tok)->n_vocab(), 32000);
  EXPECT_EQ((*tok)->bos_id(), 1);
  EXPECT_EQ((*tok)->eos_id(), 2);
  std::vector<int32_t> ids;
  ASSERT_TRUE((*tok)->encode("Hello world", {.add_bos = true}, &ids).is_ok());
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ((*tok)->decode(ids), "Hello world");
  std::string streamed;
  for (size_t i = 1; i < ids.size(); ++i) streamed += (*tok)->decode_piece(ids[i - 1], ids[i]);
  EXPECT_EQ(streamed, "Hello world");
}

}  // namespace
}  // namespace pocket
