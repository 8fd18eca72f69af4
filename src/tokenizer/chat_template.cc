// Built-in chat templates; see chat_template.h.
#include "tokenizer/chat_template.h"

#include <algorithm>

namespace pocket {
namespace {

std::string_view strip(std::string_view s) {
  const char* ws = " \t\r\n";
  const size_t a = s.find_first_not_of(ws);
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(ws) - a + 1);
}

Status check_role(const ChatMessage& m, size_t i) {
  if (m.role == "system" || m.role == "user" || m.role == "assistant") return Status::ok();
  return invalid_argument("[chat] message " + std::to_string(i) + " has role '" + m.role +
                          "' (expected system, user or assistant)");
}

Expected<std::string> chatml(std::span<const ChatMessage> msgs, bool gen) {
  std::string out;
  for (size_t i = 0; i < msgs.size(); ++i) {
    POCKET_RETURN_IF_ERROR(check_role(msgs[i], i));
    out += "<|im_start|>" + msgs[i].role + "\n" + msgs[i].content + "<|im_end|>\n";
  }
  if (gen) out += "<|im_start|>assistant\n";
  return out;
}

Expected<std::string> llama3(std::span<const ChatMessage> msgs, bool gen) {
  std::string out = "<|begin_of_text|>";
  for (size_t i = 0; i < msgs.size(); ++i) {
    POCKET_RETURN_IF_ERROR(check_role(msgs[i], i));
    out += "<|start_header_id|>" + msgs[i].role + "<|end_header_id|>\n\n";
    out += strip(msgs[i].content);
    out += "<|eot_id|>";
  }
  if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Meta's Llama 2 chat format: the system prompt is folded into the first user turn.
Expected<std::string> llama2(std::span<const ChatMessage> msgs, bool gen) {
  std::string out, system;
  size_t first = 0;
  if (!msgs.empty() && msgs[0].role == "system") {
    system = std::string(strip(msgs[0].content));
    first = 1;
  }
  for (size_t i = first; i < msgs.size(); ++i) {
    POCKET_RETURN_IF_ERROR(check_role(msgs[i], i));
    const bool want_user = (i - first) % 2 == 0;
    if ((msgs[i].role == "user") != want_user || msgs[i].role == "system") {
      return invalid_argument("[chat] llama2 template: message " + std::to_string(i) + " is '" + msgs[i].role +
                              "', but roles must alternate user/assistant after an optional system message");
    }
    if (want_user) {
      std::string content(strip(msgs[i].content));
      if (i == first && !system.empty()) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
      out += "<s>[INST] " + content + " [/INST]";
    } else {
      out += ' ';
      out += strip(msgs[i].content);
      out += " </s>";
    }
  }
  (void)gen;  // the model answers after [/INST]; there is no separate generation prompt
  return out;
}

}  // namespace

bool is_known_chat_template(std::string_view name) { return name == "chatml" || name == "llama2" || name == "llama3"; }

Expected<std::string> apply_chat_template(std::string_view name, std::span<const ChatMessage> messages,
                                          bool add_generation_prompt) {
  if (name == "chatml") return chatml(messages, add_generation_prompt);
  if (name == "llama3") return llama3(messages, add_generation_prompt);
  if (name == "llama2") return llama2(messages, add_generation_prompt);
  if (name.empty()) return unsupported("[chat] the model names no chat template (built in: chatml, llama2, llama3)");
  return unsupported("[chat] unknown chat template '" + std::string(name) + "' (built in: chatml, llama2, llama3)");
}

std::string detect_chat_template(std::string_view jinja) {
  if (strip(jinja).empty()) return "";
  if (jinja.find("<|im_start|>") != std::string_view::npos) return "chatml";
  if (jinja.find("<|start_header_id|>") != std::string_view::npos) return "llama3";
  if (jinja.find("[INST]") != std::string_view::npos && jinja.find("<<SYS>>") != std::string_view::npos) {
    return "llama2";
  }
  std::string_view first = strip(jinja);
  first = first.substr(0, std::min(first.find('\n'), size_t{60}));
  return "unrecognised:" + std::string(first);
}

}  // namespace pocket
