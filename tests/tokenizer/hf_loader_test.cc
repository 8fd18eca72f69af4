// tokenizer.json loading: a tiny byte-level vocabulary, and malformed files (RELIABILITY.md 7 and 9).
#include "tokenizer/hf_loader.h"

#include <gtest/gtest.h>

namespace pocket {
namespace {

std::string tiny_json(const std::string& vocab_extra = "", const std::string& merges = R"(["a b"])") {
  std::string vocab = R"({"a":0,"b":1,"ab":2)" + vocab_extra + "}";
  return R"({"normalizer":null,"pre_tokenizer":{"type":"ByteLevel","use_regex":true},
            "added_tokens":[{"id":3,"content":"<|end|>","special":true}],
            "model":{"type":"BPE","vocab":)" + vocab + R"(,"merges":)" + merges + "}}";
}

std::string error_of(const std::string& json, const std::string& config = "") {
  auto d = read_hf_tokenizer(json, config, "tok.json");
  return d.has_value() ? std::string() : d.status().message();
}

TEST(HfLoader, ReadsTinyVocabulary) {
  auto d = read_hf_tokenizer(tiny_json(), R"({"eos_token":"<|end|>"})", "tok.json");
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->pieces.size(), 4u);
  EXPECT_EQ(d->eos_id, 3);
  EXPECT_EQ(d->pre_tokenizer, "gpt2");
  EXPECT_EQ(d->merges.size(), 1u);
  EXPECT_EQ(d->types[3], TokenType::kControl);
  // Valid as data; building it fails because a byte-level vocabulary needs all 256 byte tokens.
  auto tok = build_tokenizer(std::move(d).value());
  ASSERT_FALSE(tok.has_value());
  EXPECT_NE(tok.status().message().find("no token for byte"), std::string::npos);
}

TEST(HfLoader, RejectsMalformedFiles) {
  EXPECT_NE(error_of("{").find("invalid JSON"), std::string::npos);
  EXPECT_NE(error_of("\xFF").find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(error_of(std::string(100000, '[')).find("deeper"), std::string::npos);
  EXPECT_NE(error_of("{}").find("no model"), std::string::npos);
  EXPECT_NE(error_of(tiny_json(R"(,"c":9)")).find("no token has id 4"), std::string::npos);
  EXPECT_NE(error_of(tiny_json(R"(,"c":-1)")).find("id -1"), std::string::npos);
  EXPECT_NE(error_of(tiny_json(R"(,"c":99999999999)")).find("outside"), std::string::npos);
  EXPECT_NE(error_of(tiny_json(R"(,"c":"x")")).find("non-integer"), std::string::npos);
  EXPECT_NE(error_of(tiny_json("", R"(["a zz"])")).find("unknown token 'zz'"), std::string::npos);
  EXPECT_NE(error_of(tiny_json("", R"(["ab"])")).find("not 'left right'"), std::string::npos);
  EXPECT_NE(error_of(tiny_json("", R"([5])")).find("neither"), std::string::npos);
  std::string wrong_type = tiny_json();
  wrong_type.replace(wrong_type.find("\"type\":\"BPE\""), 12, "\"type\":5");
  EXPECT_NE(error_of(wrong_type), "");  // a type error inside nlohmann becomes a Status, not an exception
  std::string regex = tiny_json();
  regex.replace(regex.find(R"({"type":"ByteLevel","use_regex":true})"), 37,
                R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\w+"}},{"type":"ByteLevel"}]})");
  EXPECT_NE(error_of(regex).find("is not one pocket knows"), std::string::npos);
  EXPECT_NE(error_of(tiny_json(), "[1]").find("not an object"), std::string::npos);
}

}  // namespace
}  // namespace pocket
