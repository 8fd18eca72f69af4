// The .pocket tokenizer section: round trip and every kind of bad section (RELIABILITY.md items 1-3, 9).
#include <gtest/gtest.h>

#include <cstring>

#include "tokenizer/tokenizer_data.h"
#include "tokenizer/tokenizer_io.h"

namespace pocket {
namespace {

TokenizerData tiny_spm() {
  TokenizerData d;
  d.source = "tiny";
  d.model = TokenizerModel::kSentencePiece;
  d.pieces = {"<unk>", "<s>", "</s>", "<0x41>", "\xE2\x96\x81", "a", "\xE2\x96\x81" "a"};
  d.scores = {0, 0, 0, 0, -1, -2, -3};
  d.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl, TokenType::kByte,
             TokenType::kNormal,  TokenType::kNormal,  TokenType::kNormal};
  d.unk_id = 0;
  d.bos_id = 1;
  d.eos_id = 2;
  d.add_bos = true;
  d.add_dummy_prefix = true;
  d.chat_template = "llama2";
  return d;
}

void put_u32_at(std::vector<uint8_t>* b, size_t at, uint32_t v) { std::memcpy(b->data() + at, &v, 4); }

std::string load_error(const std::vector<uint8_t>& bytes) {
  auto t = load_tokenizer_section(bytes);
  return t.has_value() ? std::string() : t.status().message();
}

TEST(TokenizerSection, RoundTripKeepsEverything) {
  const std::vector<uint8_t> bytes = serialize_tokenizer_data(tiny_spm());
  auto d = parse_tokenizer_section(bytes, "s");
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->pieces, tiny_spm().pieces);
  EXPECT_EQ(d->scores, tiny_spm().scores);
  EXPECT_EQ(d->types, tiny_spm().types);
  EXPECT_EQ(d->chat_template, "llama2");
  EXPECT_TRUE(d->add_dummy_prefix);
  EXPECT_EQ(d->space_marker, "\xE2\x96\x81");
  auto tok = load_tokenizer_section(bytes);
  ASSERT_TRUE(tok.has_value());
  std::vector<int32_t> ids;
  ASSERT_TRUE((*tok)->encode("a a", {.add_bos = true}, &ids).is_ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 6, 6}));
  EXPECT_EQ((*tok)->decode(ids), "a a");
}

TEST(TokenizerSection, TruncatedAtEveryByte) {
  const std::vector<uint8_t> bytes = serialize_tokenizer_data(tiny_spm());
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(load_tokenizer_section(std::span(bytes.data(), n)).has_value()) << n;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_NE(load_error(longer).find("trailing"), std::string::npos);
}

TEST(TokenizerSection, RejectsBadHeaders) {
  const std::vector<uint8_t> good = serialize_tokenizer_data(tiny_spm());
  auto with = [&](size_t at, uint32_t v) {
    std::vector<uint8_t> b = good;
    put_u32_at(&b, at, v);
    return load_error(b);
  };
  EXPECT_NE(with(0, 0x12345678).find("magic"), std::string::npos);
  EXPECT_NE(with(4, 0).find("version 0"), std::string::npos);
  EXPECT_NE(with(4, 2).find("version 2"), std::string::npos);
  EXPECT_NE(with(8, 7).find("unknown model"), std::string::npos);
  EXPECT_NE(with(12, 0).find("n_vocab 0"), std::string::npos);
  // Huge counts are refused from the header alone, before anything is allocated.
  EXPECT_NE(with(12, 0xFFFFFFFFu).find("n_vocab"), std::string::npos);
  EXPECT_NE(with(12, 1u << 22).find("only"), std::string::npos);
  EXPECT_NE(with(16, 1u << 23).find("only"), std::string::npos);
  EXPECT_NE(with(16, 0xFFFFFFFFu).find("n_merges"), std::string::npos);
  EXPECT_NE(with(20, 0xFFFFFFFFu).find("metadata"), std::string::npos);
  EXPECT_FALSE(load_tokenizer_section({}).has_value());
}

TEST(TokenizerSection, RejectsBadContent) {
  auto err = [](TokenizerData d) { return load_error(serialize_tokenizer_data(d)); };
  TokenizerData d = tiny_spm();
  d.pieces[5] = "\xFF";
  EXPECT_NE(err(d).find("token 5 is not valid UTF-8"), std::string::npos) << err(d);
  d = tiny_spm();
  d.pieces[6] = "a";
  EXPECT_NE(err(d).find("tokens 5 and 6 are both 'a' (duplicate token)"), std::string::npos) << err(d);
  d = tiny_spm();
  d.pieces[3] = "<0xZZ>";
  EXPECT_NE(err(d).find("token 3 is a malformed byte token '<0xZZ>'"), std::string::npos) << err(d);
  d = tiny_spm();
  d.pieces[4] = "<0x41>";  // a second token for byte 0x41 typed normal but spelled as a byte token
  d.types[4] = TokenType::kByte;
  EXPECT_NE(err(d).find("both stand for byte"), std::string::npos) << err(d);
  d = tiny_spm();
  d.bos_id = 7;
  EXPECT_NE(err(d).find("BOS id 7 is outside the vocabulary of 7 tokens"), std::string::npos) << err(d);
  d = tiny_spm();
  d.eos_id = -9;
  EXPECT_NE(err(d).find("'eos' = -9 is out of range"), std::string::npos) << err(d);
  d = tiny_spm();
  d.merges = {{5, 99}};
  EXPECT_NE(err(d).find("merge 0 names token 99"), std::string::npos) << err(d);
  d = tiny_spm();
  d.merges = {{5, 5}};  // "aa" is not a token
  EXPECT_NE(err(d).find("merge 0 ('a' + 'a') makes a token that is not in the vocabulary"), std::string::npos) << err(d);
  d = tiny_spm();
  d.normalizer = "nfkd";
  EXPECT_NE(err(d).find("unknown normalizer"), std::string::npos) << err(d);
  d = tiny_spm();
  d.model = TokenizerModel::kByteLevelBpe;
  d.pre_tokenizer = "perl6";
  EXPECT_NE(err(d).find("unknown pre-tokenizer 'perl6'"), std::string::npos) << err(d);
  d = tiny_spm();
  d.pieces[5] = "";
  EXPECT_NE(err(d).find("token 5 is empty"), std::string::npos) << err(d);
}

TEST(TokenizerSection, RejectsBadMetadata) {
  TokenizerData d = tiny_spm();
  std::vector<uint8_t> good = serialize_tokenizer_data(d);
  uint32_t meta_len;
  std::memcpy(&meta_len, good.data() + 20, 4);
  auto with_meta = [&](const std::string& meta) {
    std::vector<uint8_t> b(good.begin(), good.begin() + 24);
    put_u32_at(&b, 20, static_cast<uint32_t>(meta.size()));
    b.insert(b.end(), meta.begin(), meta.end());
    b.insert(b.end(), good.begin() + 24 + meta_len, good.end());
    return load_error(b);
  };
  EXPECT_EQ(with_meta("{\"bos\":1,\"future_key\":[1,2]}"), "");  // unknown keys are ignored
  EXPECT_NE(with_meta("{\"bos\":\"one\"}").find("'bos' is not an integer"), std::string::npos);
  EXPECT_NE(with_meta("{\"bos\":99999999999}").find("out of range"), std::string::npos);
  EXPECT_NE(with_meta("{\"add_bos\":1}").find("not a bool"), std::string::npos);
  EXPECT_NE(with_meta("[1,2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(with_meta("{\"bos\":").find("invalid JSON"), std::string::npos);
  EXPECT_NE(with_meta("{\"x\":\"\xFF\"}").find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(with_meta(std::string(10000, '[') + std::string(10000, ']')).find("deeper"), std::string::npos);
}

}  // namespace
}  // namespace pocket
