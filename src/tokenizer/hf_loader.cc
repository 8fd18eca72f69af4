// tokenizer.json + tokenizer_config.json -> TokenizerData; see hf_loader.h.
#include "tokenizer/hf_loader.h"

#include <filesystem>
#include <unordered_map>

#include "core/mapped_file.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/json_guard.h"
#include "tokenizer/pretokenizer.h"

namespace pocket {
namespace {

using nlohmann::json;

// The pre-tokenizer name for a tokenizer.json "pre_tokenizer" object, or an error naming what is there.
Expected<std::string> pre_tokenizer_name(const json& pt, const std::string& name) {
  if (!pt.is_object()) return unsupported("[tokenizer] tokenizer.json has no pre_tokenizer: " + name);
  const std::string type = pt.value("type", "");
  if (type == "ByteLevel") {
    if (pt.value("use_regex", true)) return std::string("gpt2");
    return unsupported("[tokenizer] ByteLevel pre-tokenizer without a regex is not supported: " + name);
  }
  if (type == "Sequence" && pt.contains("pretokenizers") && pt["pretokenizers"].is_array()) {
    std::string found;
    bool byte_level = false;
    for (const json& p : pt["pretokenizers"]) {
      if (!p.is_object()) continue;
      const std::string t = p.value("type", "");
      if (t == "ByteLevel") {
        byte_level = true;
      } else if (t == "Split" && p.contains("pattern") && p["pattern"].is_object() &&
                 p["pattern"].contains("Regex") && p["pattern"]["Regex"].is_string()) {
        const std::string re = p["pattern"]["Regex"].get<std::string>();
        for (const char* cand : {"gpt2", "llama3", "qwen2"}) {
          if (pre_tokenizer_pattern(cand) == re) found = cand;
        }
        if (found.empty()) {
          return unsupported("[tokenizer] pre-tokenizer regex '" + re.substr(0, 120) + "' is not one pocket knows: " +
                             name);
        }
      } else {
        return unsupported("[tokenizer] pre-tokenizer step '" + t + "' is not supported: " + name);
      }
    }
    if (byte_level && !found.empty()) return found;
  }
  return unsupported("[tokenizer] pre-tokenizer '" + pt.dump().substr(0, 200) + "' is not supported: " + name);
}

Expected<std::string> normalizer_name(const json& n, const std::string& name) {
  if (n.is_null()) return std::string();
  if (n.is_object() && n.value("type", "") == "NFC") return std::string("nfc");
  return unsupported("[tokenizer] normalizer '" + n.dump().substr(0, 200) + "' is not supported: " + name);
}

// "bos_token": "<s>" or {"content": "<s>", ...}
std::string token_text(const json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return "";
}

Status fail(const std::string& what, const std::string& name) { return corrupt_file("[tokenizer] " + what + ": " + name); }

}  // namespace

Expected<TokenizerData> read_hf_tokenizer_unguarded(std::string_view tokenizer_json, std::string_view config_json,
                                                    const std::string& name) {
  POCKET_ASSIGN_OR_RETURN(json j, parse_json_guarded(tokenizer_json, name));
  json cfg = json::object();
  if (!config_json.empty()) {
    POCKET_ASSIGN_OR_RETURN(cfg, parse_json_guarded(config_json, "tokenizer_config.json beside " + name));
    if (!cfg.is_object()) return fail("tokenizer_config.json is not an object", name);
  }
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) return fail("tokenizer.json has no model", name);
  const json& model = j["model"];
  if (model.value("type", "") != "BPE") {
    return unsupported("[tokenizer] tokenizer.json model type '" + model.value("type", "?") +
                       "' is not supported (byte-level BPE only): " + name);
  }
  TokenizerData d;
  d.source = name;
  d.model = TokenizerModel::kByteLevelBpe;
  POCKET_ASSIGN_OR_RETURN(d.pre_tokenizer, pre_tokenizer_name(j.value("pre_tokenizer", json()), name));
  POCKET_ASSIGN_OR_RETURN(d.normalizer, normalizer_name(j.value("normalizer", json()), name));
  if (model.contains("ignore_merges") && model["ignore_merges"].is_boolean()) d.ignore_merges = model["ignore_merges"].get<bool>();

  // Ids come from the vocab object and the added tokens; every id below the largest must be present.
  if (!model.contains("vocab") || !model["vocab"].is_object()) return fail("tokenizer.json has no model.vocab object", name);
  const json& vocab = model["vocab"];
  const json added = j.value("added_tokens", json::array());
  if (!added.is_array()) return fail("added_tokens is not an array", name);
  int64_t max_id = -1;
  auto check_id = [&](const json& v, const std::string& what) -> Expected<int32_t> {
    if (!v.is_number_integer()) return fail(what + " has a non-integer id", name);
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id >= kMaxVocab) return fail(what + " has id " + std::to_string(id) + ", outside 0.." + std::to_string(kMaxVocab - 1), name);
    max_id = std::max(max_id, id);
    return static_cast<int32_t>(id);
  };
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    POCKET_ASSIGN_OR_RETURN(int32_t id, check_id(it.value(), "token '" + it.key().substr(0, 40) + "'"));
    (void)id;
  }
  for (const json& a : added) {
    if (!a.is_object() || !a.contains("content") || !a["content"].is_string() || !a.contains("id")) {
      return fail("an added token lacks id or content", name);
    }
    POCKET_ASSIGN_OR_RETURN(int32_t id, check_id(a["id"], "added token"));
    (void)id;
  }
  if (max_id < 0) return fail("the vocabulary is empty", name);
  const auto n = static_cast<size_t>(max_id + 1);
  d.pieces.assign(n, std::string());
  d.types.assign(n, TokenType::kNormal);
  std::vector<bool> have(n, false);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const auto id = static_cast<size_t>(it.value().get<int64_t>());
    if (have[id]) return fail("id " + std::to_string(id) + " is given to two tokens", name);
    have[id] = true;
    d.pieces[id] = it.key();
  }
  for (const json& a : added) {
    const auto id = static_cast<size_t>(a["id"].get<int64_t>());
    const std::string content = a["content"].get<std::string>();
    if (have[id] && d.pieces[id] != content) {
      return fail("added token " + std::to_string(id) + " '" + content + "' clashes with vocabulary token '" +
                      d.pieces[id] + "'", name);
    }
    have[id] = true;
    d.pieces[id] = content;
    const bool special = a.contains("special") && a["special"].is_boolean() && a["special"].get<bool>();
    d.types[id] = special ? TokenType::kControl : TokenType::kUserDefined;
  }
  for (size_t id = 0; id < n; ++id) {
    if (!have[id]) return fail("no token has id " + std::to_string(id) + " (ids must be dense)", name);
  }

  std::unordered_map<std::string_view, int32_t> by_piece;
  by_piece.reserve(n);
  for (size_t id = 0; id < n; ++id) by_piece.emplace(d.pieces[id], static_cast<int32_t>(id));
  const json merges = model.value("merges", json::array());
  if (!merges.is_array()) return fail("model.merges is not an array", name);
  d.merges.reserve(merges.size());
  for (size_t m = 0; m < merges.size(); ++m) {
    std::string a, b;
    const json& e = merges[m];
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ', 1);
      if (sp == std::string::npos) return fail("merge " + std::to_string(m) + " '" + s + "' is not 'left right'", name);
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else {
      return fail("merge " + std::to_string(m) + " is neither 'left right' nor [left, right]", name);
    }
    auto ia = by_piece.find(a), ib = by_piece.find(b);
    if (ia == by_piece.end() || ib == by_piece.end()) {
      return fail("merge " + std::to_string(m) + " names unknown token '" + (ia == by_piece.end() ? a : b) + "'", name);
    }
    d.merges.emplace_back(ia->second, ib->second);
  }

  auto id_of = [&](const std::string& text) {
    auto it = by_piece.find(text);
    return it == by_piece.end() ? -1 : it->second;
  };
  d.bos_id = id_of(token_text(cfg, "bos_token"));
  d.eos_id = id_of(token_text(cfg, "eos_token"));
  d.pad_id = id_of(token_text(cfg, "pad_token"));
  d.unk_id = id_of(token_text(cfg, "unk_token"));
  if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) d.add_bos = cfg["add_bos_token"].get<bool>();
  else d.add_bos = d.bos_id >= 0 && d.pre_tokenizer == "llama3";
  if (cfg.contains("chat_template")) {
    const json& t = cfg["chat_template"];
    if (t.is_string()) {
      d.chat_template = detect_chat_template(t.get<std::string>());
    } else if (t.is_array()) {  // [{"name": "default", "template": "..."}, ...]
      for (const json& e : t) {
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string()) {
          d.chat_template = detect_chat_template(e["template"].get<std::string>());
        }
      }
    }
  }
  return d;
}

Expected<TokenizerData> read_hf_tokenizer(std::string_view tokenizer_json, std::string_view config_json,
                                          const std::string& name) {
  try {  // nlohmann's accessors throw on a value of the wrong type; nothing escapes this boundary
    return read_hf_tokenizer_unguarded(tokenizer_json, config_json, name);
  } catch (const std::exception& e) {
    return corrupt_file(std::string("[tokenizer] unexpected JSON content (") + e.what() + "): " + name);
  }
}

Expected<std::unique_ptr<Tokenizer>> load_hf_tokenizer(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  const std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
  const std::string cfg_path = (std::filesystem::path(path).parent_path() / "tokenizer_config.json").string();
  std::error_code ec;
  std::string_view cfg_text;
  MappedFile cfg_file;
  if (std::filesystem::exists(cfg_path, ec)) {
    POCKET_ASSIGN_OR_RETURN(cfg_file, MappedFile::open(cfg_path));
    cfg_text = std::string_view(reinterpret_cast<const char*>(cfg_file.data()), cfg_file.size());
  }
  POCKET_ASSIGN_OR_RETURN(TokenizerData data, read_hf_tokenizer(text, cfg_text, path));
  return build_tokenizer(std::move(data));
}

}  // namespace pocket
