// The "pocket" pre-tokenizer (bilingual, docs/vocabulary.md): Han runs apart from other letters, one digit
// per word, punctuation (ASCII and full-width) apart from letters, GPT-2-style leading-space words, and no
// byte ever lost or reordered.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"

namespace pocket {
namespace {

std::vector<std::string> split(std::string_view text) {
  auto pt = PreTokenizer::create("pocket");
  EXPECT_TRUE(pt.has_value()) << pt.status().to_string();
  std::vector<std::string> words;
  Status st = (*pt)->split(text, [&](std::string_view w) { words.emplace_back(w); });
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return words;
}

using Words = std::vector<std::string>;

TEST(PocketPreTokenizer, IsKnownAndCompiles) {
  EXPECT_FALSE(pre_tokenizer_pattern("pocket").empty());
  EXPECT_TRUE(PreTokenizer::create("pocket").has_value());
}

TEST(PocketPreTokenizer, HanRunsSplitFromLatinLetters) {
  EXPECT_EQ(split("iPhone手机"), (Words{"iPhone", "手机"}));
  EXPECT_EQ(split("我用iPhone拍照"), (Words{"我用", "iPhone", "拍照"}));
  EXPECT_EQ(split("Hello 世界"), (Words{"Hello", " 世界"}));
}

TEST(PocketPreTokenizer, DigitsOneAtATime) {
  EXPECT_EQ(split("2024年"), (Words{"2", "0", "2", "4", "年"}));
  EXPECT_EQ(split("in 1999"), (Words{"in", " ", "1", "9", "9", "9"}));
  EXPECT_EQ(split("x86"), (Words{"x", "8", "6"}));
}

TEST(PocketPreTokenizer, PunctuationApartFromLetters) {
  // Full-width CJK punctuation and quotes are their own words, never glued to the Han run.
  EXPECT_EQ(split("你好，世界。"), (Words{"你好", "，", "世界", "。"}));
  EXPECT_EQ(split("他说：“好的！”"), (Words{"他说", "：“", "好的", "！”"}));
  EXPECT_EQ(split("Hello, world!"), (Words{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("a (b)"), (Words{"a", " (", "b", ")"}));
}

TEST(PocketPreTokenizer, LeadingSpaceWordsAndContractions) {
  EXPECT_EQ(split("the cat's hat"), (Words{"the", " cat", "'s", " hat"}));
  EXPECT_EQ(split("I'LL GO"), (Words{"I", "'LL", " GO"}));
  EXPECT_EQ(split("a  b"), (Words{"a", " ", " b"}));
  EXPECT_EQ(split("end.\n\nNext"), (Words{"end", ".\n\n", "Next"}));
  EXPECT_EQ(split("line\n  indented"), (Words{"line", "\n", " ", " indented"}));
}

TEST(PocketPreTokenizer, OtherScriptsStayLetters) {
  // Kana and Hangul are letters but not Han: they split from the Han run like Latin does.
  EXPECT_EQ(split("日本語のテキスト"), (Words{"日本語", "のテキスト"}));
  EXPECT_EQ(split("Привет мир"), (Words{"Привет", " мир"}));
  EXPECT_EQ(split("café"), (Words{"café"}));
}

TEST(PocketPreTokenizer, EveryByteKeptInOrder) {
  // Random mixes of the interesting classes: the words concatenate back to the text exactly.
  const std::vector<std::string> atoms = {"a",  "Z",  " ",  "  ", "\n", "\r\n",     "\t",          "1",
                                          "９", "中", "文", "，", "。", "“",        "!",           "...",
                                          "'s", "'",  "é",  "の", "😀",  "\xC2\xA0", "\xE3\x80\x80"};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) text += atoms[rng() % atoms.size()];
    std::string joined;
    for (const std::string& w : split(text)) {
      EXPECT_FALSE(w.empty());
      EXPECT_TRUE(is_valid_utf8(w)) << text;
      joined += w;
    }
    EXPECT_EQ(joined, text);
  }
}

}  // namespace
}  // namespace pocket
