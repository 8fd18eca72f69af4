// The task layer's prompts: instruction lines, chat rendering with the user's text kept as plain text.
#include "task/task_prompt.h"

#include <algorithm>

#include "generate/chat_prompt.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/utf8.h"

namespace pocket {

bool looks_chinese(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    uint32_t cp = 0;
    bool valid = false;
    const size_t n = utf8_decode(text.substr(i), &cp, &valid);
    i += n > 0 ? n : 1;
    if (!valid) continue;
    // CJK Unified Ideographs (+ Extension A), CJK symbols and punctuation, full-width forms.
    if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x3000 && cp <= 0x303F) ||
        (cp >= 0xFF00 && cp <= 0xFFEF)) {
      return true;
    }
  }
  return false;
}

std::string task_user_message(std::string_view task, std::string_view text, std::string_view instruction) {
  std::string out;
  if (!instruction.empty()) {
    out.assign(instruction);
    out += '\n';
    out += text;
    return out;
  }
  const bool zh = looks_chinese(text);
  // The instruction lines of docs/tasks.md: extract, route and tool put the text on the next line; intent and
  // rewrite on the same line.
  if (task == "extract") out = zh ? "提取JSON：\n" : "Extract JSON:\n";
  else if (task == "classify" || task == "intent") out = zh ? "判断意图：" : "Classify intent: ";
  else if (task == "route") out = zh ? "路由（local或cloud）：\n" : "Route (local or cloud):\n";
  else if (task == "rewrite") out = zh ? "改正句子：" : "Correct the sentence: ";
  else if (task == "tool") out = zh ? "调用工具（JSON）：\n" : "Call a tool (JSON):\n";
  out += text;
  return out;
}

Expected<std::vector<int32_t>> render_task_prompt(const Model& model, std::string_view user, std::string_view system,
                                                  bool chat) {
  const std::string& tmpl = model.config().chat_template;
  if (!chat || tmpl.empty() || tmpl == "none") {
    const Tokenizer& tok = model.tokenizer();
    std::vector<int32_t> ids;
    if (model.config().add_bos && tok.bos_id() >= 0) ids.push_back(tok.bos_id());
    POCKET_RETURN_IF_ERROR(tok.encode(user, EncodeOptions{}, &ids));
    return ids;
  }
  std::vector<ChatMessage> msgs;
  if (!system.empty()) msgs.push_back({"system", std::string(system)});
  msgs.push_back({"user", std::string(user)});
  return render_chat_ids(model, msgs, true);
}

std::vector<int32_t> stop_token_ids(const Model& model) {
  std::vector<int32_t> ids;
  if (model.tokenizer().eos_id() >= 0) ids.push_back(model.tokenizer().eos_id());
  for (int32_t id : model.config().stop_tokens) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

}  // namespace pocket
