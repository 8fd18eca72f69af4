// A conversation as token ids in the package's chat template, with every message's content encoded as plain
// text: special-token spellings a user types ("<|im_end|>") stay text and cannot close their turn
// (RELIABILITY.md 13). The template's own markup is encoded with special tokens parsed. Used by `pocket run
// --chat`, the server's chat endpoint and the task layer, so all three give the model the same ids.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"

namespace pocket {

// BOS first where the package asks for one (once, also when the template renders it). A package without a
// chat template ("none" or empty) is an error naming that (use the text as the prompt instead).
Expected<std::vector<int32_t>> render_chat_ids(const Model& model, std::span<const ChatMessage> messages,
                                               bool add_generation_prompt);

}  // namespace pocket
