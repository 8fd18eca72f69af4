// Descriptor and inference-config JSON (de)serialisation with validation, and architecture presets.
#include "model/hparams.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace pocket {

namespace {

using json = nlohmann::json;

constexpr int64_t kMaxVocab = 1 << 22;
constexpr int64_t kMaxWidth = 1 << 16;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxCtx = 1 << 24;
constexpr int kMaxJsonDepth = 16;

Status json_depth_ok(const json& j, int depth, const char* what) {
  if (depth > kMaxJsonDepth) return corrupt_file(std::string("[") + what + "] JSON nested deeper than 16 levels");
  if (j.is_object() || j.is_array()) {
    for (const auto& v : j) POCKET_RETURN_IF_ERROR(json_depth_ok(v, depth + 1, what));
  }
  return Status::ok();
}

// Parses untrusted JSON without exceptions; rejects deep nesting (RELIABILITY.md 7).
Expected<json> parse_object(std::string_view text, const char* what) {
  // Bound nesting before the recursive parser sees the text.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return corrupt_file(std::string("[") + what + "] JSON nested deeper than 16 levels");
    } else if (c == '}' || c == ']') --depth;
  }
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return corrupt_file(std::string("[") + what + "] not valid JSON (or not valid UTF-8)");
  if (!j.is_object()) return corrupt_file(std::string("[") + what + "] JSON is not an object");
  POCKET_RETURN_IF_ERROR(json_depth_ok(j, 0, what));
  return j;
}

template <typename T>
Status get_field(const json& j, const char* key, T* out, bool required, const char* what) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) return corrupt_file(std::string("[") + what + "] missing field '" + key + "'");
    return Status::ok();
  }
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return corrupt_file(std::string("[") + what + "] field '" + key + "' must be a boolean");
    *out = it->template get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) return corrupt_file(std::string("[") + what + "] field '" + key + "' must be an integer");
    *out = it->template get<T>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number()) return corrupt_file(std::string("[") + what + "] field '" + key + "' must be a number");
    *out = it->template get<T>();
  } else {
    if (!it->is_string()) return corrupt_file(std::string("[") + what + "] field '" + key + "' must be a string");
    *out = it->template get<std::string>();
  }
  return Status::ok();
}

Status range(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return corrupt_file(std::string("[descriptor] ") + field + " = " + std::to_string(v) + " is outside " +
                        std::to_string(lo) + ".." + std::to_string(hi));
  }
  return Status::ok();
}

}  // namespace

Status HParams::validate() const {
  if (family != "llama") return unsupported("[descriptor] architecture family '" + family + "' is not supported (known: llama)");
  POCKET_RETURN_IF_ERROR(range("n_vocab", n_vocab, 1, kMaxVocab));
  POCKET_RETURN_IF_ERROR(range("n_embd", n_embd, 1, kMaxWidth));
  POCKET_RETURN_IF_ERROR(range("n_layers", n_layers, 1, kMaxLayers));
  POCKET_RETURN_IF_ERROR(range("n_heads", n_heads, 1, kMaxHeads));
  POCKET_RETURN_IF_ERROR(range("n_kv_heads", n_kv_heads, 1, n_heads));
  POCKET_RETURN_IF_ERROR(range("head_dim", head_dim, 2, 1024));
  POCKET_RETURN_IF_ERROR(range("n_ff", n_ff, 1, 1 << 20));
  POCKET_RETURN_IF_ERROR(range("n_ctx_train", n_ctx_train, 1, kMaxCtx));
  if (n_heads % n_kv_heads != 0) {
    return corrupt_file("[descriptor] n_heads " + std::to_string(n_heads) + " is not a multiple of n_kv_heads " +
                        std::to_string(n_kv_heads));
  }
  if (head_dim % 2 != 0) return corrupt_file("[descriptor] head_dim " + std::to_string(head_dim) + " must be even for RoPE");
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta)) return corrupt_file("[descriptor] rope_theta must be positive");
  if (!(norm_eps > 0.0f) || !(norm_eps < 1.0f)) return corrupt_file("[descriptor] norm_eps must be in (0, 1)");
  return Status::ok();
}

std::string HParams::to_json() const {
  json j = {{"family", family},
            {"name", name},
            {"n_vocab", n_vocab},
            {"n_embd", n_embd},
            {"n_layers", n_layers},
            {"n_heads", n_heads},
            {"n_kv_heads", n_kv_heads},
            {"head_dim", head_dim},
            {"n_ff", n_ff},
            {"n_ctx_train", n_ctx_train},
            {"rope_theta", rope_theta},
            {"rope_style", rope_style == RopeStyle::kNeox ? "neox" : "interleaved"},
            {"norm_eps", norm_eps},
            {"activation", "swiglu"},
            {"norm", "rmsnorm"},
            {"tied_embeddings", tied_embeddings},
            {"qkv_bias", qkv_bias},
            {"qk_norm", qk_norm}};
  return j.dump(1);
}

Expected<HParams> HParams::from_json(std::string_view text) {
  POCKET_ASSIGN_OR_RETURN(json j, parse_object(text, "descriptor"));
  HParams h;
  const char* w = "descriptor";
  POCKET_RETURN_IF_ERROR(get_field(j, "family", &h.family, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "name", &h.name, false, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "n_vocab", &h.n_vocab, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "n_embd", &h.n_embd, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "n_layers", &h.n_layers, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "n_heads", &h.n_heads, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "n_kv_heads", &h.n_kv_heads, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "head_dim", &h.head_dim, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "n_ff", &h.n_ff, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "n_ctx_train", &h.n_ctx_train, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "rope_theta", &h.rope_theta, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "norm_eps", &h.norm_eps, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "tied_embeddings", &h.tied_embeddings, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "qkv_bias", &h.qkv_bias, false, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "qk_norm", &h.qk_norm, false, w));
  std::string style = "interleaved", act = "swiglu", norm = "rmsnorm";
  POCKET_RETURN_IF_ERROR(get_field(j, "rope_style", &style, false, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "activation", &act, false, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "norm", &norm, false, w));
  if (style == "interleaved") h.rope_style = RopeStyle::kInterleaved;
  else if (style == "neox") h.rope_style = RopeStyle::kNeox;
  else return unsupported("[descriptor] rope_style '" + style + "' is not supported (interleaved, neox)");
  if (act != "swiglu") return unsupported("[descriptor] activation '" + act + "' is not supported (swiglu)");
  if (norm != "rmsnorm") return unsupported("[descriptor] norm '" + norm + "' is not supported (rmsnorm)");
  POCKET_RETURN_IF_ERROR(h.validate());
  return h;
}

uint64_t HParams::n_params() const {
  const uint64_t d = static_cast<uint64_t>(n_embd);
  uint64_t per_layer = d * q_dim() + 2 * d * kv_dim() + q_dim() * d + 3 * d * n_ff + 2 * d;
  if (qkv_bias) per_layer += q_dim() + 2 * kv_dim();
  if (qk_norm) per_layer += 2 * head_dim;
  uint64_t total = per_layer * n_layers + n_vocab * d + d;
  if (!tied_embeddings) total += n_vocab * d;
  return total;
}

std::string InferenceConfig::to_json() const {
  json j = {{"context_length", context_length},
            {"sampling",
             {{"temperature", sampling.temperature},
              {"top_k", sampling.top_k},
              {"top_p", sampling.top_p},
              {"min_p", sampling.min_p},
              {"repeat_penalty", sampling.repeat_penalty},
              {"repeat_last_n", sampling.repeat_last_n}}},
            {"stop_tokens", stop_tokens},
            {"chat_template", chat_template},
            {"add_bos", add_bos}};
  return j.dump(1);
}

Expected<InferenceConfig> InferenceConfig::from_json(std::string_view text) {
  POCKET_ASSIGN_OR_RETURN(json j, parse_object(text, "inference config"));
  InferenceConfig c;
  const char* w = "inference config";
  POCKET_RETURN_IF_ERROR(get_field(j, "context_length", &c.context_length, true, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "chat_template", &c.chat_template, false, w));
  POCKET_RETURN_IF_ERROR(get_field(j, "add_bos", &c.add_bos, false, w));
  if (c.context_length < 1 || c.context_length > kMaxCtx) {
    return corrupt_file("[inference config] context_length " + std::to_string(c.context_length) + " is out of range");
  }
  if (auto it = j.find("sampling"); it != j.end()) {
    if (!it->is_object()) return corrupt_file("[inference config] 'sampling' must be an object");
    auto& s = c.sampling;
    POCKET_RETURN_IF_ERROR(get_field(*it, "temperature", &s.temperature, false, w));
    POCKET_RETURN_IF_ERROR(get_field(*it, "top_k", &s.top_k, false, w));
    POCKET_RETURN_IF_ERROR(get_field(*it, "top_p", &s.top_p, false, w));
    POCKET_RETURN_IF_ERROR(get_field(*it, "min_p", &s.min_p, false, w));
    POCKET_RETURN_IF_ERROR(get_field(*it, "repeat_penalty", &s.repeat_penalty, false, w));
    POCKET_RETURN_IF_ERROR(get_field(*it, "repeat_last_n", &s.repeat_last_n, false, w));
  }
  if (auto it = j.find("stop_tokens"); it != j.end()) {
    if (!it->is_array() || it->size() > 64) return corrupt_file("[inference config] 'stop_tokens' must be an array of at most 64 ids");
    for (const auto& v : *it) {
      if (!v.is_number_integer()) return corrupt_file("[inference config] stop token ids must be integers");
      c.stop_tokens.push_back(v.get<int32_t>());
    }
  }
  return c;
}

Expected<HParams> architecture_preset(std::string_view name) {
  HParams h;
  h.name = std::string(name);
  if (name == "pocket-0.3b") {
    h.n_vocab = 65536; h.n_embd = 1024; h.n_layers = 20; h.n_heads = 16; h.n_kv_heads = 4; h.head_dim = 64;
    h.n_ff = 2816; h.n_ctx_train = 4096; h.rope_theta = 1e6f; h.norm_eps = 1e-6f; h.tied_embeddings = true;
    h.rope_style = RopeStyle::kNeox;
  } else if (name == "qwen3-0.6b") {
    h.n_vocab = 151936; h.n_embd = 1024; h.n_layers = 28; h.n_heads = 16; h.n_kv_heads = 8; h.head_dim = 128;
    h.n_ff = 3072; h.n_ctx_train = 40960; h.rope_theta = 1e6f; h.norm_eps = 1e-6f; h.tied_embeddings = true;
    h.qk_norm = true; h.rope_style = RopeStyle::kNeox;
  } else if (name == "tiny") {  // a few-hundred-KB model for tests
    h.n_vocab = 300; h.n_embd = 64; h.n_layers = 2; h.n_heads = 4; h.n_kv_heads = 2; h.head_dim = 16;
    h.n_ff = 96; h.n_ctx_train = 256; h.rope_theta = 10000.0f; h.norm_eps = 1e-5f; h.tied_embeddings = false;
  } else {
    std::string known;
    for (const auto& n : architecture_preset_names()) known += (known.empty() ? "" : ", ") + n;
    return invalid_argument("[synth] unknown architecture '" + std::string(name) + "' (known: " + known + ")");
  }
  return h;
}

std::vector<std::string> architecture_preset_names() { return {"pocket-0.3b", "qwen3-0.6b", "tiny"}; }

}  // namespace pocket
