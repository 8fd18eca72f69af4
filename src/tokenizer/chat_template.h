// Built-in chat templates (ChatML as Qwen uses it, Llama 2, Llama 3), chosen by name from the model's
// metadata. The rendered text contains the special tokens literally (BOS included where the family puts
// it), so it is encoded with EncodeOptions{.add_bos = false, .parse_special = true}. An unknown name is an
// error naming it: there is no silent fallback to some other family.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace pocket {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

Expected<std::string> apply_chat_template(std::string_view name, std::span<const ChatMessage> messages,
                                          bool add_generation_prompt);

bool is_known_chat_template(std::string_view name);

// The built-in family a Jinja template (tokenizer_config.json / GGUF tokenizer.chat_template) renders, by
// its telltale tokens; for an unrecognised template "unrecognised:" + its first line, which
// apply_chat_template then rejects by that name. "" for an empty template.
std::string detect_chat_template(std::string_view jinja);

}  // namespace pocket
