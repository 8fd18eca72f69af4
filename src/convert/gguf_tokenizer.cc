// tokenizer.ggml.* -> TokenizerData; see gguf_tokenizer.h.
#include "convert/gguf_tokenizer.h"

#include <unordered_map>

#include "tokenizer/chat_template.h"

namespace pocket {
namespace {

// llama.cpp's token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
Expected<TokenType> token_type_from_gguf(int32_t t, size_t id, const std::string& name) {
  switch (t) {
    case 0: case 1: return TokenType::kNormal;
    case 2: return TokenType::kUnknown;
    case 3: return TokenType::kControl;
    case 4: return TokenType::kUserDefined;
    case 5: return TokenType::kUnused;
    case 6: return TokenType::kByte;
    default:
      return corrupt_file("[gguf] token " + std::to_string(id) + " has unknown token type " + std::to_string(t) + ": " + name);
  }
}

Status optional_id(const GgufFile& g, const char* key, int32_t* out) {
  if (g.find(key) == nullptr) return Status::ok();
  POCKET_ASSIGN_OR_RETURN(int64_t v, g.get_int(key));
  if (v < 0 || v >= kMaxVocab) {
    return corrupt_file("[gguf] " + std::string(key) + " = " + std::to_string(v) + " is out of range: " + g.name());
  }
  *out = static_cast<int32_t>(v);
  return Status::ok();
}

Status optional_bool(const GgufFile& g, const char* key, bool* out) {
  if (g.find(key) == nullptr) return Status::ok();
  POCKET_ASSIGN_OR_RETURN(*out, g.get_bool(key));
  return Status::ok();
}

}  // namespace

Expected<TokenizerData> tokenizer_data_from_gguf(const GgufFile& g) {
  TokenizerData d;
  d.source = g.name();
  POCKET_ASSIGN_OR_RETURN(std::string_view model, g.get_string("tokenizer.ggml.model"));
  std::string_view pre = "default";
  if (g.find("tokenizer.ggml.pre")) {
    POCKET_ASSIGN_OR_RETURN(pre, g.get_string("tokenizer.ggml.pre"));
  }
  if (model == "llama") {
    d.model = TokenizerModel::kSentencePiece;
    d.space_marker = "\xE2\x96\x81";
    d.add_dummy_prefix = true;
    POCKET_RETURN_IF_ERROR(optional_bool(g, "tokenizer.ggml.add_space_prefix", &d.add_dummy_prefix));
  } else if (model == "gpt2") {
    d.model = TokenizerModel::kByteLevelBpe;
    if (pre == "default" || pre == "gpt-2" || pre == "gpt2") {
      d.pre_tokenizer = "gpt2";
    } else if (pre == "llama3" || pre == "llama-bpe") {
      d.pre_tokenizer = "llama3";
      d.ignore_merges = true;
    } else if (pre == "qwen2") {
      d.pre_tokenizer = "qwen2";
    } else {
      return unsupported("[gguf] pre-tokenizer '" + std::string(pre) + "' is not supported: " + g.name());
    }
  } else {
    return unsupported("[gguf] tokenizer model '" + std::string(model) + "' is not supported (llama, gpt2): " + g.name());
  }

  POCKET_ASSIGN_OR_RETURN(std::vector<std::string_view> tokens, g.get_string_array("tokenizer.ggml.tokens"));
  if (tokens.empty() || tokens.size() > static_cast<size_t>(kMaxVocab)) {
    return corrupt_file("[gguf] tokenizer.ggml.tokens has " + std::to_string(tokens.size()) + " entries: " + g.name());
  }
  const size_t n = tokens.size();
  d.pieces.reserve(n);
  for (std::string_view t : tokens) d.pieces.emplace_back(t);
  if (g.find("tokenizer.ggml.scores")) {
    POCKET_ASSIGN_OR_RETURN(d.scores, g.get_f32_array("tokenizer.ggml.scores"));
    if (d.scores.size() != n) {
      return corrupt_file("[gguf] " + std::to_string(d.scores.size()) + " scores for " + std::to_string(n) +
                          " tokens: " + g.name());
    }
  }
  if (g.find("tokenizer.ggml.token_type")) {
    POCKET_ASSIGN_OR_RETURN(std::vector<int32_t> types, g.get_i32_array("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return corrupt_file("[gguf] " + std::to_string(types.size()) + " token types for " + std::to_string(n) +
                          " tokens: " + g.name());
    }
    d.types.resize(n);
    for (size_t i = 0; i < n; ++i) {
      POCKET_ASSIGN_OR_RETURN(d.types[i], token_type_from_gguf(types[i], i, g.name()));
    }
  }
  if (g.find("tokenizer.ggml.merges")) {
    POCKET_ASSIGN_OR_RETURN(std::vector<std::string_view> merges, g.get_string_array("tokenizer.ggml.merges"));
    std::unordered_map<std::string_view, int32_t> by_piece;
    by_piece.reserve(n);
    for (size_t i = 0; i < n; ++i) by_piece.emplace(d.pieces[i], static_cast<int32_t>(i));
    d.merges.reserve(merges.size());
    for (size_t m = 0; m < merges.size(); ++m) {
      const std::string_view s = merges[m];
      const size_t sp = s.find(' ', 1);
      if (sp == std::string_view::npos) {
        return corrupt_file("[gguf] merge " + std::to_string(m) + " is not 'left right': " + g.name());
      }
      auto a = by_piece.find(s.substr(0, sp)), b = by_piece.find(s.substr(sp + 1));
      if (a == by_piece.end() || b == by_piece.end()) {
        return corrupt_file("[gguf] merge " + std::to_string(m) + " '" + std::string(s.substr(0, 80)) +
                            "' names a token that is not in the vocabulary: " + g.name());
      }
      d.merges.emplace_back(a->second, b->second);
    }
  }
  POCKET_RETURN_IF_ERROR(optional_id(g, "tokenizer.ggml.bos_token_id", &d.bos_id));
  POCKET_RETURN_IF_ERROR(optional_id(g, "tokenizer.ggml.eos_token_id", &d.eos_id));
  POCKET_RETURN_IF_ERROR(optional_id(g, "tokenizer.ggml.unknown_token_id", &d.unk_id));
  POCKET_RETURN_IF_ERROR(optional_id(g, "tokenizer.ggml.padding_token_id", &d.pad_id));
  d.add_bos = d.model == TokenizerModel::kSentencePiece;
  POCKET_RETURN_IF_ERROR(optional_bool(g, "tokenizer.ggml.add_bos_token", &d.add_bos));
  POCKET_RETURN_IF_ERROR(optional_bool(g, "tokenizer.ggml.add_eos_token", &d.add_eos));
  if (g.find("tokenizer.chat_template")) {
    POCKET_ASSIGN_OR_RETURN(std::string_view tmpl, g.get_string("tokenizer.chat_template"));
    d.chat_template = detect_chat_template(tmpl);
  }
  return d;
}

Expected<std::unique_ptr<Tokenizer>> load_gguf_tokenizer(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(GgufFile g, GgufFile::open(path));
  POCKET_ASSIGN_OR_RETURN(TokenizerData d, tokenizer_data_from_gguf(g));
  return build_tokenizer(std::move(d));
}

}  // namespace pocket
