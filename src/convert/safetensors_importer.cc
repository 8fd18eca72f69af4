// Hugging Face checkpoint import: config.json → descriptor, tokenizer.json → tokenizer section,
// generation_config.json → stop tokens and sampling defaults, safetensors shards → tensors. Every tensor is
// named, shape-checked against the config and dtype-checked before the package is written.
#include "convert/safetensors_importer.h"

#include <filesystem>
#include <map>
#include <set>

#include "convert/row_fill.h"
#include "convert/safetensors_reader.h"
#include "core/mapped_file.h"
#include "format/package_writer.h"
#include "model/model.h"
#include "tokenizer/hf_loader.h"
#include "tokenizer/json_guard.h"

namespace pocket {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Status bad_config(const std::string& what, const std::string& name) {
  return corrupt_file("[safetensors] config.json " + what + ": " + name);
}

// An integer field; `def` when absent and not required.
Status int_field(const json& j, const char* key, bool required, int64_t def, int64_t* out, const std::string& name) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) return bad_config(std::string("is missing '") + key + "'", name);
    *out = def;
    return Status::ok();
  }
  if (!it->is_number_integer()) return bad_config(std::string("field '") + key + "' is not an integer", name);
  *out = it->get<int64_t>();
  return Status::ok();
}

Status float_field(const json& j, const char* key, double def, float* out, const std::string& name) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    *out = static_cast<float>(def);
    return Status::ok();
  }
  if (!it->is_number()) return bad_config(std::string("field '") + key + "' is not a number", name);
  *out = it->get<float>();
  return Status::ok();
}

bool bool_field(const json& j, const char* key, bool def) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : def;
}

Expected<std::string> read_text_file(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(path));
  return std::string(reinterpret_cast<const char*>(f.data()), f.size());
}

// Ids from an int or an array of ints (generation_config's eos_token_id).
std::vector<int32_t> ids_of(const json& v) {
  std::vector<int32_t> out;
  if (v.is_number_integer()) out.push_back(static_cast<int32_t>(v.get<int64_t>()));
  if (v.is_array()) {
    for (const json& e : v) {
      if (e.is_number_integer()) out.push_back(static_cast<int32_t>(e.get<int64_t>()));
    }
  }
  return out;
}

// A shard name from the index must be a plain file name in the checkpoint folder.
bool is_plain_file_name(const std::string& s) {
  return !s.empty() && s.size() < 256 && s.find('/') == std::string::npos && s.find('\\') == std::string::npos &&
         s != "." && s != ".." && s.find('\0') == std::string::npos;
}

struct Source {
  const SafetensorsFile* file;
  const StTensor* tensor;
};

}  // namespace

Expected<HfConfig> parse_hf_config(std::string_view text, const std::string& name) {
  POCKET_ASSIGN_OR_RETURN(json j, parse_json_guarded(text, name));
  if (!j.is_object()) return bad_config("is not a JSON object", name);
  try {
    HfConfig c;
    std::string arch_class;
    if (auto a = j.find("architectures"); a != j.end() && a->is_array() && !a->empty() && (*a)[0].is_string()) {
      arch_class = (*a)[0].get<std::string>();
    }
    const std::string model_type = j.value("model_type", std::string());
    if (arch_class == "LlamaForCausalLM" || (arch_class.empty() && model_type == "llama")) c.arch = "llama";
    else if (arch_class == "Qwen2ForCausalLM" || (arch_class.empty() && model_type == "qwen2")) c.arch = "qwen2";
    else if (arch_class == "Qwen3ForCausalLM" || (arch_class.empty() && model_type == "qwen3")) c.arch = "qwen3";
    else {
      return unsupported("[safetensors] architecture '" + (arch_class.empty() ? model_type : arch_class) +
                         "' is not supported (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM): " + name);
    }
    HParams& h = c.hparams;
    h.rope_style = RopeStyle::kNeox;
    POCKET_RETURN_IF_ERROR(int_field(j, "vocab_size", true, 0, &h.n_vocab, name));
    POCKET_RETURN_IF_ERROR(int_field(j, "hidden_size", true, 0, &h.n_embd, name));
    POCKET_RETURN_IF_ERROR(int_field(j, "num_hidden_layers", true, 0, &h.n_layers, name));
    POCKET_RETURN_IF_ERROR(int_field(j, "num_attention_heads", true, 0, &h.n_heads, name));
    POCKET_RETURN_IF_ERROR(int_field(j, "num_key_value_heads", false, h.n_heads, &h.n_kv_heads, name));
    POCKET_RETURN_IF_ERROR(int_field(j, "intermediate_size", true, 0, &h.n_ff, name));
    POCKET_RETURN_IF_ERROR(int_field(j, "max_position_embeddings", false, 2048, &h.n_ctx_train, name));
    if (h.n_heads <= 0) return bad_config("num_attention_heads must be positive", name);
    POCKET_RETURN_IF_ERROR(int_field(j, "head_dim", false, h.n_embd / h.n_heads, &h.head_dim, name));
    if (!j.contains("head_dim") && h.n_embd % h.n_heads != 0) {
      return bad_config("hidden_size " + std::to_string(h.n_embd) + " is not a multiple of num_attention_heads " +
                            std::to_string(h.n_heads) + " and no head_dim is given", name);
    }
    POCKET_RETURN_IF_ERROR(float_field(j, "rope_theta", 10000.0, &h.rope_theta, name));
    POCKET_RETURN_IF_ERROR(float_field(j, "rms_norm_eps", 1e-6, &h.norm_eps, name));
    c.tie_stated = j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean();
    h.tied_embeddings = bool_field(j, "tie_word_embeddings", false);
    h.qkv_bias = c.arch == "qwen2" || bool_field(j, "attention_bias", false);
    h.qk_norm = c.arch == "qwen3";
    const std::string act = j.value("hidden_act", std::string("silu"));
    if (act != "silu") return unsupported("[safetensors] hidden_act '" + act + "' is not supported (silu): " + name);
    if (auto rs = j.find("rope_scaling"); rs != j.end() && !rs->is_null()) {
      const std::string type = rs->is_object() ? rs->value("rope_type", rs->value("type", std::string("?"))) : "?";
      return unsupported("[safetensors] rope_scaling '" + type + "' is not supported: " + name);
    }
    if (bool_field(j, "use_sliding_window", false)) {
      return unsupported("[safetensors] use_sliding_window = true is not supported: " + name);
    }
    if (bool_field(j, "mlp_bias", false)) return unsupported("[safetensors] mlp_bias = true is not supported: " + name);
    if (c.arch == "llama" && bool_field(j, "attention_bias", false)) {
      return unsupported("[safetensors] llama attention_bias (which includes o_proj.bias) is not supported: " + name);
    }
    Status v = h.validate();
    if (!v.is_ok()) return Status(v.code(), v.message() + " (from config.json): " + name);
    return c;
  } catch (const std::exception& e) {
    return bad_config(std::string("has unexpected content (") + e.what() + ")", name);
  }
}

std::optional<std::string> hf_to_pocket_tensor_name(std::string_view n) {
  if (n == "model.embed_tokens.weight") return std::string("token_embd.weight");
  if (n == "model.norm.weight") return std::string("output_norm.weight");
  if (n == "lm_head.weight") return std::string("output.weight");
  constexpr std::string_view kLayers = "model.layers.";
  if (n.substr(0, kLayers.size()) != kLayers) return std::nullopt;
  n.remove_prefix(kLayers.size());
  size_t i = 0;
  while (i < n.size() && i < 5 && n[i] >= '0' && n[i] <= '9') ++i;
  if (i == 0 || i >= n.size() || n[i] != '.' || (i > 1 && n[0] == '0')) return std::nullopt;
  const std::string layer(n.substr(0, i));
  const std::string_view rest = n.substr(i + 1);
  static const std::pair<std::string_view, std::string_view> kMap[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  for (const auto& [hf, ours] : kMap) {
    if (rest == hf) return "blk." + layer + "." + std::string(ours);
  }
  if (rest == "self_attn.rotary_emb.inv_freq") return std::string();
  return std::nullopt;
}

Status import_safetensors(const std::string& path, const std::string& out_path, const SafetensorsImportOptions& opts) {
  std::error_code ec;
  const bool is_dir = fs::is_directory(path, ec);
  const fs::path dir = is_dir ? fs::path(path) : fs::path(path).parent_path();
  std::vector<std::string> shard_names;
  std::map<std::string, std::string> weight_map;  // tensor -> shard, from the index
  fs::path index = dir / "model.safetensors.index.json";
  if (!is_dir && fs::path(path).filename() != "model.safetensors.index.json") {
    index.clear();
    shard_names.push_back(fs::path(path).filename().string());
  } else if (!fs::exists(index, ec)) {
    if (!fs::exists(dir / "model.safetensors", ec)) {
      return io_error("[safetensors] neither model.safetensors nor model.safetensors.index.json in " + dir.string());
    }
    index.clear();
    shard_names.push_back("model.safetensors");
  }
  if (!index.empty()) {
    POCKET_ASSIGN_OR_RETURN(std::string text, read_text_file(index.string()));
    POCKET_ASSIGN_OR_RETURN(json j, parse_json_guarded(text, index.string()));
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return corrupt_file("[safetensors] index has no weight_map object: " + index.string());
    }
    std::set<std::string> seen;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it->is_string() || !is_plain_file_name(it->get<std::string>())) {
        return corrupt_file("[safetensors] index maps '" + it.key().substr(0, 200) +
                            "' to something that is not a file name in the checkpoint folder: " + index.string());
      }
      weight_map[it.key()] = it->get<std::string>();
      if (seen.insert(it->get<std::string>()).second) shard_names.push_back(it->get<std::string>());
    }
    if (shard_names.empty()) return corrupt_file("[safetensors] index lists no tensors: " + index.string());
  }

  const std::string config_path = (dir / "config.json").string();
  POCKET_ASSIGN_OR_RETURN(std::string config_text, read_text_file(config_path));
  POCKET_ASSIGN_OR_RETURN(HfConfig cfg, parse_hf_config(config_text, config_path));
  HParams h = cfg.hparams;
  h.name = opts.name.empty() ? fs::absolute(dir).filename().string() : opts.name;

  // Open every shard and map HF names to package names.
  std::vector<SafetensorsFile> files;
  files.reserve(shard_names.size());
  std::map<std::string, Source> sources;  // package name -> source tensor
  bool have_lm_head = false;
  for (const std::string& shard : shard_names) {
    POCKET_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open((dir / shard).string()));
    files.push_back(std::move(f));
  }
  for (const SafetensorsFile& f : files) {
    for (const StTensor& t : f.tensors()) {
      if (!index.empty()) {
        auto w = weight_map.find(t.name);
        if (w == weight_map.end() || (dir / w->second).string() != f.name()) {
          return corrupt_file("[safetensors] tensor '" + t.name + "' is in " + f.name() +
                              " but the index places it elsewhere (or not at all): " + index.string());
        }
      }
      const auto ours = hf_to_pocket_tensor_name(t.name);
      if (!ours) return unsupported("[safetensors] tensor '" + t.name + "' is not part of the " + cfg.arch + " architecture: " + f.name());
      if (ours->empty()) continue;
      if (*ours == "output.weight") have_lm_head = true;
      if (t.dtype != StDType::kF32 && t.dtype != StDType::kF16 && t.dtype != StDType::kBF16) {
        return unsupported("[safetensors] tensor '" + t.name + "' has dtype " + t.dtype_text +
                           " (supported: F32, F16, BF16): " + f.name());
      }
      if (!sources.emplace(*ours, Source{&f, &t}).second) {
        return corrupt_file("[safetensors] tensor '" + t.name + "' appears in more than one shard: " + f.name());
      }
    }
  }
  if (!index.empty()) {
    for (const auto& [tensor, shard] : weight_map) {
      const SafetensorsFile* f = nullptr;
      for (const auto& x : files) {
        if (x.name() == (dir / shard).string()) f = &x;
      }
      if (f == nullptr || f->find(tensor) == nullptr) {
        return corrupt_file("[safetensors] index lists '" + tensor + "' in " + shard + ", which does not hold it: " + index.string());
      }
    }
  }
  if (!cfg.tie_stated) h.tied_embeddings = !have_lm_head;
  if (h.tied_embeddings) sources.erase("output.weight");  // identical to the embedding when tied

  // Expected tensors with their shapes; everything present must be expected and vice versa.
  struct Want {
    std::vector<uint64_t> shape;
    bool matrix;
  };
  std::map<std::string, Want> want;
  const uint64_t d = h.n_embd, q = h.q_dim(), kv = h.kv_dim(), ff = h.n_ff, V = h.n_vocab, hd = h.head_dim;
  want["token_embd.weight"] = {{V, d}, true};
  want["output_norm.weight"] = {{d}, false};
  if (!h.tied_embeddings) want["output.weight"] = {{V, d}, true};
  for (int64_t l = 0; l < h.n_layers; ++l) {
    auto n = [&](const char* s) { return layer_tensor_name(l, s); };
    want[n("attn_norm.weight")] = {{d}, false};
    want[n("attn_q.weight")] = {{q, d}, true};
    want[n("attn_k.weight")] = {{kv, d}, true};
    want[n("attn_v.weight")] = {{kv, d}, true};
    want[n("attn_output.weight")] = {{d, q}, true};
    if (h.qkv_bias) {
      want[n("attn_q.bias")] = {{q}, false};
      want[n("attn_k.bias")] = {{kv}, false};
      want[n("attn_v.bias")] = {{kv}, false};
    }
    if (h.qk_norm) {
      want[n("attn_q_norm.weight")] = {{hd}, false};
      want[n("attn_k_norm.weight")] = {{hd}, false};
    }
    want[n("ffn_norm.weight")] = {{d}, false};
    want[n("ffn_gate.weight")] = {{ff, d}, true};
    want[n("ffn_up.weight")] = {{ff, d}, true};
    want[n("ffn_down.weight")] = {{d, ff}, true};
  }
  auto shape_str = [](const std::vector<uint64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
  };
  for (const auto& [name, src] : sources) {
    auto w = want.find(name);
    if (w == want.end()) {
      return unsupported("[safetensors] tensor '" + src.tensor->name + "' does not belong to this " + cfg.arch +
                         " configuration (config.json): " + src.file->name());
    }
    if (src.tensor->shape != w->second.shape) {
      return corrupt_file("[safetensors] tensor '" + src.tensor->name + "' has shape " + shape_str(src.tensor->shape) +
                          " but config.json implies " + shape_str(w->second.shape) + ": " + src.file->name());
    }
  }
  for (const auto& [name, w] : want) {
    if (!sources.count(name)) {
      return corrupt_file("[safetensors] required tensor for '" + name + "' is missing from the checkpoint in " + dir.string());
    }
  }

  // Tokenizer and inference config.
  const std::string tok_path = (dir / "tokenizer.json").string();
  if (!fs::exists(tok_path, ec)) return io_error("[safetensors] tokenizer.json is missing from " + dir.string());
  POCKET_ASSIGN_OR_RETURN(std::string tok_text, read_text_file(tok_path));
  std::string tok_cfg_text;
  if (fs::exists(dir / "tokenizer_config.json", ec)) {
    POCKET_ASSIGN_OR_RETURN(tok_cfg_text, read_text_file((dir / "tokenizer_config.json").string()));
  }
  POCKET_ASSIGN_OR_RETURN(TokenizerData td, read_hf_tokenizer(tok_text, tok_cfg_text, tok_path));
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, build_tokenizer(std::move(td)));
  if (tok->n_vocab() > h.n_vocab) {
    return corrupt_file("[safetensors] tokenizer.json has " + std::to_string(tok->n_vocab()) +
                        " tokens but config.json's vocab_size is " + std::to_string(h.n_vocab) + ": " + tok_path);
  }
  InferenceConfig ic;
  ic.context_length = opts.context_length > 0 ? std::min(opts.context_length, h.n_ctx_train) : std::min<int64_t>(h.n_ctx_train, 4096);
  if (const auto* dt = dynamic_cast<const DataTokenizer*>(tok.get())) ic.add_bos = dt->data().add_bos;
  const std::string tmpl(tok->chat_template_name());
  ic.chat_template = tmpl.empty() || tmpl.rfind("unrecognised", 0) == 0 ? "none" : tmpl;
  std::set<int32_t> stops;
  if (tok->eos_id() >= 0) stops.insert(tok->eos_id());
  const fs::path gen_path = dir / "generation_config.json";
  if (fs::exists(gen_path, ec)) {
    POCKET_ASSIGN_OR_RETURN(std::string gen_text, read_text_file(gen_path.string()));
    POCKET_ASSIGN_OR_RETURN(json g, parse_json_guarded(gen_text, gen_path.string()));
    if (!g.is_object()) return corrupt_file("[safetensors] generation_config.json is not an object: " + gen_path.string());
    for (int32_t id : ids_of(g.value("eos_token_id", json()))) stops.insert(id);
    auto num = [&](const char* k, float* out) {
      if (g.contains(k) && g[k].is_number()) *out = g[k].get<float>();
    };
    num("temperature", &ic.sampling.temperature);
    num("top_p", &ic.sampling.top_p);
    num("repetition_penalty", &ic.sampling.repeat_penalty);
    if (g.contains("top_k") && g["top_k"].is_number_integer()) ic.sampling.top_k = static_cast<int32_t>(g["top_k"].get<int64_t>());
  }
  for (int32_t id : stops) {
    if (id < 0 || id >= h.n_vocab) {
      return corrupt_file("[safetensors] stop token " + std::to_string(id) + " is outside the vocabulary of " +
                          std::to_string(h.n_vocab) + " in " + dir.string());
    }
    ic.stop_tokens.push_back(id);
  }

  PackageWriter pw;
  pw.set_descriptor(h.to_json());
  pw.set_inference_config(ic.to_json());
  pw.set_tokenizer(tok->serialize());
  for (const auto& [name, w] : want) {
    const StTensor* t = sources.at(name).tensor;
    const DType dt = w.matrix ? opts.dtype : DType::kF32;
    const int64_t cols = static_cast<int64_t>(w.shape.back());
    const int64_t rows = static_cast<int64_t>(t->n_elements) / cols;
    POCKET_RETURN_IF_ERROR(pw.add_tensor(name, dt, w.shape, [t, dt, rows, cols](std::span<uint8_t> out) {
      return fill_rows(dt, rows, cols, [t, cols](int64_t first, int64_t n, float* o) {
        st_read_f32(*t, static_cast<uint64_t>(first * cols), static_cast<uint64_t>(n * cols), o);
        return Status::ok();
      }, out);
    }));
  }
  return pw.write(out_path);
}

}  // namespace pocket
