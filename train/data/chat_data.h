// SFT data: conversations (JSON lines of {"messages": [{"role", "content"}, ...]}) rendered with a model's
// chat template and tokenised by pocket's tokenizer, with the loss mask set on assistant turns only.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pocket::train {

using Conversation = std::vector<ChatMessage>;

// Parses one conversation per non-empty line; errors name the line.
Expected<std::vector<Conversation>> parse_conversations_jsonl(const std::string& text, const std::string& source);
std::string conversation_to_json(const Conversation& c);

struct TokenisedChat {
  std::vector<int32_t> tokens;
  std::vector<uint8_t> mask;  // 1 on the tokens of assistant turns (content and the turn's end marker)
};

// Renders `c` with template `template_name`. Each assistant turn is the difference between the rendering
// with it and the rendering of the turns before it with the generation prompt; segments are tokenised
// separately (special tokens parsed) and concatenated, BOS first when `add_bos` and the vocabulary has one.
// The prompt part is therefore tokenised exactly as `pocket run --special` tokenises the rendered prompt.
Expected<TokenisedChat> tokenise_chat(const Tokenizer& tok, const std::string& template_name, const Conversation& c,
                                      bool add_bos);

// The prompt of `c` up to (not including) its last assistant turn, rendered with the generation prompt.
Expected<std::string> render_prompt(const std::string& template_name, const Conversation& c);

}  // namespace pocket::train
