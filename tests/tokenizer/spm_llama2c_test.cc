// SentencePiece-style BPE on llama2.c's stories260K tokenizer: the reference prompts' ids (run.c), decoding
// as run.c prints it, the section round trip, and bad llama2.c files.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_data.h"
#include "tokenizer/tokenizer_io.h"

namespace pocket {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "PROMPT_TOKENS 5: 1 403 ..." -> ids; the same for "ALL_IDS(65): ...".
std::vector<int32_t> ids_after(const std::string& text, const std::string& key) {
  std::vector<int32_t> ids;
  const size_t at = text.find(key);
  if (at == std::string::npos) return ids;
  std::istringstream line(text.substr(text.find(':', at) + 1, text.find('\n', at) - text.find(':', at) - 1));
  int32_t v;
  while (line >> v) ids.push_back(v);
  return ids;
}

std::unique_ptr<Tokenizer> load_tok512(const std::string& dir) {
  auto tok = load_llama2c_tokenizer(dir + "/models/stories260K/tok512.bin", 512);
  EXPECT_TRUE(tok.has_value()) << tok.status().to_string();
  return tok.has_value() ? std::move(tok).value() : nullptr;
}

TEST(SpmLlama2c, EncodesReferencePrompts) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  auto tok = load_tok512(dir);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  for (int p = 1; p <= 3; ++p) {
    const std::string base = dir + "/reference/stories260K/p" + std::to_string(p);
    const std::string prompt = slurp(base + ".prompt");
    const std::vector<int32_t> want = ids_after(slurp(base + ".ids"), "PROMPT_TOKENS");
    ASSERT_FALSE(want.empty());
    std::vector<int32_t> got;
    ASSERT_TRUE(tok->encode(prompt, {.add_bos = true}, &got).is_ok());
    EXPECT_EQ(got, want) << "prompt " << p << ": " << prompt;
  }
}

TEST(SpmLlama2c, DecodesAsRunCPrints) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  auto tok = load_tok512(dir);
  ASSERT_NE(tok, nullptr);
  for (int p = 1; p <= 3; ++p) {
    const std::string base = dir + "/reference/stories260K/p" + std::to_string(p);
    const std::vector<int32_t> all = ids_after(slurp(base + ".ids"), "ALL_IDS");
    ASSERT_EQ(all.size(), 65u);
    std::string want = slurp(base + ".txt");
    ASSERT_FALSE(want.empty());
    want.pop_back();  // run.c ends with a newline
    EXPECT_EQ(tok->decode(all), want) << "p" << p;
    std::string streamed;
    for (size_t i = 1; i < all.size(); ++i) streamed += tok->decode_piece(all[i - 1], all[i]);
    EXPECT_EQ(streamed, want);
  }
}

TEST(SpmLlama2c, RoundTripsText) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  auto tok = load_tok512(dir);
  ASSERT_NE(tok, nullptr);
  for (const char* text : {"Once upon a time", "  two spaces", "héllo wörld 你好 🙂", "a\nb\tc", "x\0y"}) {
    const std::string s(text, std::strlen(text));
    std::vector<int32_t> ids;
    ASSERT_TRUE(tok->encode(s, {}, &ids).is_ok());
    EXPECT_EQ(tok->decode(ids), s);
  }
  std::string with_nul("a\0b", 3);  // NUL is a character like any other: nothing after it is lost
  std::vector<int32_t> ids;
  ASSERT_TRUE(tok->encode(with_nul, {}, &ids).is_ok());
  EXPECT_EQ(tok->decode(ids), with_nul);
}

TEST(SpmLlama2c, ByteFallbackForUnknownCharacters) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  auto tok = load_tok512(dir);
  ASSERT_NE(tok, nullptr);
  std::vector<int32_t> ids;
  ASSERT_TRUE(tok->encode("\xE4\xBD\xA0", {}, &ids).is_ok());  // 你: not in a 512-token vocabulary
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(std::vector<int32_t>(ids.end() - 3, ids.end()), (std::vector<int32_t>{0xE4 + 3, 0xBD + 3, 0xA0 + 3}));
  EXPECT_EQ(tok->token_type(0xE4 + 3), TokenType::kByte);
  EXPECT_EQ(tok->token_bytes(0xE4 + 3), "\xE4");
}

TEST(SpmLlama2c, InvalidUtf8BecomesReplacementCharacter) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  auto tok = load_tok512(dir);
  ASSERT_NE(tok, nullptr);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(tok->encode("a\xFF" "b\xED\xA0\x80", {}, &a).is_ok());  // stray byte, lone surrogate
  ASSERT_TRUE(tok->encode("a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD", {}, &b).is_ok());
  EXPECT_EQ(a, b);
}

TEST(SpmLlama2c, SectionRoundTrip) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  auto tok = load_tok512(dir);
  ASSERT_NE(tok, nullptr);
  const std::vector<uint8_t> bytes = tok->serialize();
  auto again = load_tokenizer_section(bytes);
  ASSERT_TRUE(again.has_value()) << again.status().to_string();
  EXPECT_EQ((*again)->serialize(), bytes);
  std::vector<int32_t> x, y;
  ASSERT_TRUE(tok->encode("Lily and Ben went to the park.", {.add_bos = true}, &x).is_ok());
  ASSERT_TRUE((*again)->encode("Lily and Ben went to the park.", {.add_bos = true}, &y).is_ok());
  EXPECT_EQ(x, y);
  EXPECT_EQ((*again)->bos_id(), 1);
  EXPECT_EQ((*again)->decode(y), "Lily and Ben went to the park.");
}

TEST(SpmLlama2c, SpecialTextIsPlainUnlessAsked) {
  POCKET_REQUIRE_SHARED_DATA(dir);
  auto tok = load_tok512(dir);
  ASSERT_NE(tok, nullptr);
  const std::string text = "hi\n</s>\nyo";
  std::vector<int32_t> plain, special;
  ASSERT_TRUE(tok->encode(text, {}, &plain).is_ok());
  ASSERT_TRUE(tok->encode(text, {.parse_special = true}, &special).is_ok());
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(std::count(special.begin(), special.end(), 2), 1);
  EXPECT_EQ(tok->decode(plain), text);
}

// --- bad llama2.c files ---------------------------------------------------------------------------------

std::vector<uint8_t> llama2c_file(int32_t max_len, const std::vector<std::pair<float, std::string>>& toks) {
  std::vector<uint8_t> out(4);
  std::memcpy(out.data(), &max_len, 4);
  for (const auto& [score, text] : toks) {
    const size_t at = out.size();
    const auto len = static_cast<int32_t>(text.size());
    out.resize(at + 8);
    std::memcpy(out.data() + at, &score, 4);
    std::memcpy(out.data() + at + 4, &len, 4);
    out.insert(out.end(), text.begin(), text.end());
  }
  return out;
}

std::vector<std::pair<float, std::string>> tiny_vocab() {
  return {{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}, {0, "<0x41>"}, {-1, " "}, {-2, "a"}, {-3, " a"}};
}

TEST(SpmLlama2cBadInput, TinyVocabularyLoads) {
  auto d = read_llama2c_tokenizer(llama2c_file(8, tiny_vocab()), 7, "tiny.bin");
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  auto tok = build_tokenizer(std::move(d).value());
  ASSERT_TRUE(tok.has_value());
  std::vector<int32_t> ids;
  ASSERT_TRUE((*tok)->encode("aA", {}, &ids).is_ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{6, 3}));
}

TEST(SpmLlama2cBadInput, TruncatedAtEveryByte) {
  const std::vector<uint8_t> file = llama2c_file(8, tiny_vocab());
  for (size_t n = 0; n < file.size(); ++n) {
    auto d = read_llama2c_tokenizer(std::span(file.data(), n), 7, "tiny.bin");
    EXPECT_FALSE(d.has_value()) << "accepted a copy truncated to " << n << " bytes";
  }
}

TEST(SpmLlama2cBadInput, RejectsBadFiles) {
  auto expect_error = [](const std::vector<uint8_t>& file, int32_t n, const std::string& needle) {
    auto d = read_llama2c_tokenizer(file, n, "bad.bin");
    ASSERT_FALSE(d.has_value()) << needle;
    EXPECT_NE(d.status().message().find(needle), std::string::npos) << d.status().message();
    EXPECT_NE(d.status().message().find("bad.bin"), std::string::npos);
  };
  auto v = tiny_vocab();
  expect_error(llama2c_file(-1, v), 7, "max_token_length");
  expect_error(llama2c_file(8, v), 1 << 30, "outside");
  expect_error(llama2c_file(8, v), 1000, "cannot hold");
  expect_error(llama2c_file(8, v), 0, "outside");
  auto bad_utf8 = v;
  bad_utf8[5].second = "\xC3";
  expect_error(llama2c_file(8, bad_utf8), 7, "token 5 is not valid UTF-8");
  auto dup = v;
  dup[6].second = "a";
  expect_error(llama2c_file(8, dup), 7, "duplicate");
  auto bad_byte = v;
  bad_byte[3].second = "<0xZZ>";
  expect_error(llama2c_file(8, bad_byte), 7, "malformed byte token");
  auto nan_score = v;
  nan_score[4].first = std::numeric_limits<float>::quiet_NaN();
  expect_error(llama2c_file(8, nan_score), 7, "non-finite");
  auto too_long = llama2c_file(2, v);  // "<unk>" is longer than max_token_length
  expect_error(too_long, 7, "max_token_length");
  auto neg = llama2c_file(8, v);
  const int32_t minus = -5;
  std::memcpy(neg.data() + 8, &minus, 4);  // token 0's length
  expect_error(neg, 7, "length -5");
}

TEST(SpmLlama2cBadInput, MissingFileIsAnIoError) {
  auto tok = load_llama2c_tokenizer("/nonexistent/tok.bin", 512);
  ASSERT_FALSE(tok.has_value());
  EXPECT_EQ(tok.status().code(), ErrorCode::kIoError);
}

}  // namespace
}  // namespace pocket
