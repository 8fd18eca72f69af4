// render_chat_ids: the template rendered around markers, markup and contents encoded separately.
#include "generate/chat_prompt.h"

#include <string>

namespace pocket {

namespace {
// Byte sequences no template produces and no encoder sees: message i's content is rendered as
// "\x01pocket-msg-<i>\x01", then the rendered text is cut around them.
std::string marker(size_t i) { return "\x01pocket-msg-" + std::to_string(i) + "\x01"; }
}  // namespace

Expected<std::vector<int32_t>> render_chat_ids(const Model& model, std::span<const ChatMessage> messages,
                                               bool add_generation_prompt) {
  const std::string& tmpl = model.config().chat_template;
  if (tmpl.empty() || tmpl == "none") {
    return invalid_argument("[chat] the package has no chat template; give the prompt as plain text");
  }
  std::vector<ChatMessage> marked(messages.begin(), messages.end());
  for (size_t i = 0; i < marked.size(); ++i) marked[i].content = marker(i);
  POCKET_ASSIGN_OR_RETURN(std::string rendered, apply_chat_template(tmpl, marked, add_generation_prompt));
  const Tokenizer& tok = model.tokenizer();
  std::vector<int32_t> ids;
  if (model.config().add_bos && tok.bos_id() >= 0) ids.push_back(tok.bos_id());
  EncodeOptions markup;
  markup.parse_special = true;
  const EncodeOptions plain;  // no BOS, special-token text stays text
  size_t pos = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string m = marker(i);
    const size_t at = rendered.find(m, pos);
    if (at == std::string::npos) {
      return Status(ErrorCode::kInternal, "[chat] template '" + tmpl + "' dropped message " + std::to_string(i));
    }
    POCKET_RETURN_IF_ERROR(tok.encode(std::string_view(rendered).substr(pos, at - pos), markup, &ids));
    POCKET_RETURN_IF_ERROR(tok.encode(messages[i].content, plain, &ids));
    pos = at + m.size();
  }
  POCKET_RETURN_IF_ERROR(tok.encode(std::string_view(rendered).substr(pos), markup, &ids));
  // A template that renders BOS itself (Llama) would give it twice when the package also asks for one.
  if (ids.size() >= 2 && tok.bos_id() >= 0 && ids[0] == tok.bos_id() && ids[1] == tok.bos_id()) ids.erase(ids.begin());
  return ids;
}

}  // namespace pocket
