// Conversation parsing, chat-template rendering and assistant-only loss masks (see chat_data.h).
#include "data/chat_data.h"

#include <nlohmann/json.hpp>

namespace pocket::train {

Expected<std::vector<Conversation>> parse_conversations_jsonl(const std::string& text, const std::string& source) {
  std::vector<Conversation> out;
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto where = [&] { return source + ":" + std::to_string(line_no); };
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return corrupt_file("[sft] not a JSON object: " + where());
    auto it = j.find("messages");
    if (it == j.end() || !it->is_array() || it->empty()) {
      return corrupt_file("[sft] expected a non-empty \"messages\" array: " + where());
    }
    Conversation c;
    for (const auto& m : *it) {
      if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["role"].is_string() ||
          !m["content"].is_string()) {
        return corrupt_file("[sft] each message needs string \"role\" and \"content\": " + where());
      }
      c.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string conversation_to_json(const Conversation& c) {
  nlohmann::json msgs = nlohmann::json::array();
  for (const auto& m : c) msgs.push_back({{"role", m.role}, {"content", m.content}});
  return nlohmann::json{{"messages", msgs}}.dump();
}

Expected<TokenisedChat> tokenise_chat(const Tokenizer& tok, const std::string& tmpl, const Conversation& c,
                                      bool add_bos) {
  TokenisedChat out;
  if (add_bos && tok.bos_id() >= 0) {
    out.tokens.push_back(tok.bos_id());
    out.mask.push_back(0);
  }
  const EncodeOptions eo{.add_bos = false, .parse_special = true};
  auto add = [&](const std::string& text, uint8_t m) -> Status {
    const size_t before = out.tokens.size();
    POCKET_RETURN_IF_ERROR(tok.encode(text, eo, &out.tokens));
    out.mask.insert(out.mask.end(), out.tokens.size() - before, m);
    return Status::ok();
  };
  std::string done;  // the rendered text covered so far
  bool any_assistant = false;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].role != "assistant") continue;
    any_assistant = true;
    const std::span<const ChatMessage> before(c.data(), i), with(c.data(), i + 1);
    POCKET_ASSIGN_OR_RETURN(std::string prompt, apply_chat_template(tmpl, before, /*add_generation_prompt=*/true));
    POCKET_ASSIGN_OR_RETURN(std::string full, apply_chat_template(tmpl, with, /*add_generation_prompt=*/false));
    if (prompt.compare(0, done.size(), done) != 0 || full.compare(0, prompt.size(), prompt) != 0) {
      return unsupported("[sft] chat template '" + tmpl + "' does not render conversations as growing prefixes; "
                         "cannot isolate assistant turn " + std::to_string(i));
    }
    POCKET_RETURN_IF_ERROR(add(prompt.substr(done.size()), 0));
    POCKET_RETURN_IF_ERROR(add(full.substr(prompt.size()), 1));
    done = full;
  }
  if (!any_assistant) return invalid_argument("[sft] a conversation has no assistant turn to learn from");
  return out;
}

Expected<std::string> render_prompt(const std::string& tmpl, const Conversation& c) {
  size_t last = c.size();
  for (size_t i = c.size(); i-- > 0;) {
    if (c[i].role == "assistant") {
      last = i;
      break;
    }
  }
  return apply_chat_template(tmpl, std::span<const ChatMessage>(c.data(), last), true);
}

}  // namespace pocket::train
