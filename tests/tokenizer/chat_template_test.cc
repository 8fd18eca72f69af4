// Built-in chat templates: exact renderings, detection from Jinja sources, loud failure on unknown names.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <vector>

namespace pocket {
namespace {

const std::vector<ChatMessage> kChat = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "2+2?"}};

TEST(ChatTemplate, ChatmlAsQwenUsesIt) {
  auto s = apply_chat_template("chatml", kChat, true);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*s,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!"
            "<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, Llama3) {
  auto s = apply_chat_template("llama3", std::span(kChat).subspan(0, 2), true);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*s,
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user"
            "<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, Llama2) {
  auto s = apply_chat_template("llama2", kChat, true);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*s, "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] 2+2? [/INST]");
  const std::vector<ChatMessage> bad = {{"user", "a"}, {"user", "b"}};
  EXPECT_FALSE(apply_chat_template("llama2", bad, true).has_value());
}

TEST(ChatTemplate, UnknownNameFailsNamingIt) {
  auto s = apply_chat_template("vicuna", kChat, true);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.status().message().find("unknown chat template 'vicuna'"), std::string::npos);
  EXPECT_FALSE(apply_chat_template("", kChat, true).has_value());
  const std::vector<ChatMessage> tool = {{"tool", "x"}};
  EXPECT_NE(apply_chat_template("chatml", tool, true).status().message().find("role 'tool'"), std::string::npos);
}

TEST(ChatTemplate, DetectsFamilies) {
  EXPECT_EQ(detect_chat_template("{%- for m in messages %}{{ '<|im_start|>' + m.role }}"), "chatml");
  EXPECT_EQ(detect_chat_template("{{ '<|start_header_id|>' }}"), "llama3");
  EXPECT_EQ(detect_chat_template("[INST] <<SYS>>"), "llama2");
  EXPECT_EQ(detect_chat_template(""), "");
  const std::string other = detect_chat_template("{{ '<|user|>' }}\nmore");
  EXPECT_EQ(other, "unrecognised:{{ '<|user|>' }}");
  EXPECT_FALSE(apply_chat_template(other, kChat, true).has_value());
}

}  // namespace
}  // namespace pocket
