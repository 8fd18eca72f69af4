// GGUF → .pocket: hyper-parameters from {arch}.* keys, tokenizer from tokenizer.ggml.*, tensors carried or
// dequantised (ggml_dequant.h) and re-encoded. Every tensor is named and shape-checked before writing.
#include "convert/gguf_importer.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "convert/ggml_dequant.h"
#include "convert/gguf_reader.h"
#include "convert/gguf_tokenizer.h"
#include "convert/row_fill.h"
#include "format/package_writer.h"
#include "model/hparams.h"
#include "model/model.h"

namespace pocket {
namespace {

std::optional<DType> same_layout(uint32_t g) {
  switch (g) {
    case ggml::kF32: return DType::kF32;
    case ggml::kF16: return DType::kF16;
    case ggml::kBF16: return DType::kBF16;
    case ggml::kQ8_0: return DType::kQ8G32;
    case ggml::kQ4_0: return DType::kQ4G32;
    case ggml::kQ4_1: return DType::kQ4G32A;
    default: return std::nullopt;
  }
}

Status int_key(const GgufFile& g, const std::string& key, bool required, int64_t def, int64_t* out) {
  if (g.find(key) == nullptr) {
    if (required) return corrupt_file("[gguf] missing key '" + key + "': " + g.name());
    *out = def;
    return Status::ok();
  }
  POCKET_ASSIGN_OR_RETURN(*out, g.get_int(key));
  return Status::ok();
}

Status float_key(const GgufFile& g, const std::string& key, float def, float* out) {
  const GgufValue* v = g.find(key);
  if (v == nullptr) {
    *out = def;
    return Status::ok();
  }
  if (v->type != GgufType::kF32 && v->type != GgufType::kF64) {
    return corrupt_file("[gguf] key '" + key + "' is " + gguf_type_name(v->type) + ", expected a float: " + g.name());
  }
  *out = static_cast<float>(v->scalar.f);
  return Status::ok();
}

std::string shape_str(const std::vector<uint64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace

Status import_gguf(const std::string& path, const std::string& out_path, const GgufImportOptions& opts) {
  POCKET_ASSIGN_OR_RETURN(GgufFile g, GgufFile::open(path));
  POCKET_ASSIGN_OR_RETURN(std::string_view arch_v, g.get_string("general.architecture"));
  const std::string arch(arch_v);
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3") {
    return unsupported("[gguf] architecture '" + arch.substr(0, 64) + "' is not supported (llama, qwen2, qwen3): " + path);
  }
  std::map<std::string, const GgufTensorInfo*> by_name;
  for (const auto& t : g.tensors()) by_name[std::string(t.name)] = &t;
  const GgufTensorInfo* embd = by_name.count("token_embd.weight") ? by_name["token_embd.weight"] : nullptr;
  if (embd == nullptr || embd->dims.size() != 2) {
    return corrupt_file("[gguf] token_embd.weight is missing or not a matrix: " + path);
  }

  HParams h;
  const std::string a = arch + ".";
  h.n_vocab = static_cast<int64_t>(embd->dims[1]);
  POCKET_RETURN_IF_ERROR(int_key(g, a + "embedding_length", true, 0, &h.n_embd));
  POCKET_RETURN_IF_ERROR(int_key(g, a + "block_count", true, 0, &h.n_layers));
  POCKET_RETURN_IF_ERROR(int_key(g, a + "feed_forward_length", true, 0, &h.n_ff));
  POCKET_RETURN_IF_ERROR(int_key(g, a + "attention.head_count", true, 0, &h.n_heads));
  POCKET_RETURN_IF_ERROR(int_key(g, a + "attention.head_count_kv", false, h.n_heads, &h.n_kv_heads));
  POCKET_RETURN_IF_ERROR(int_key(g, a + "context_length", false, 2048, &h.n_ctx_train));
  if (h.n_heads <= 0) return corrupt_file("[gguf] " + a + "attention.head_count must be positive: " + path);
  POCKET_RETURN_IF_ERROR(int_key(g, a + "attention.key_length", false, h.n_embd / h.n_heads, &h.head_dim));
  int64_t v_len = 0, rot = 0;
  POCKET_RETURN_IF_ERROR(int_key(g, a + "attention.value_length", false, h.head_dim, &v_len));
  POCKET_RETURN_IF_ERROR(int_key(g, a + "rope.dimension_count", false, h.head_dim, &rot));
  if (v_len != h.head_dim) {
    return unsupported("[gguf] value_length " + std::to_string(v_len) + " differs from key_length " +
                       std::to_string(h.head_dim) + ": " + path);
  }
  if (rot != h.head_dim) {
    return unsupported("[gguf] partial rotary embedding (rope.dimension_count " + std::to_string(rot) +
                       " of head_dim " + std::to_string(h.head_dim) + ") is not supported: " + path);
  }
  POCKET_RETURN_IF_ERROR(float_key(g, a + "rope.freq_base", 10000.0f, &h.rope_theta));
  POCKET_RETURN_IF_ERROR(float_key(g, a + "attention.layer_norm_rms_epsilon", 1e-5f, &h.norm_eps));
  if (const GgufValue* rs = g.find(a + "rope.scaling.type"); rs != nullptr) {
    POCKET_ASSIGN_OR_RETURN(std::string_view type, g.get_string(a + "rope.scaling.type"));
    if (type != "none") return unsupported("[gguf] rope scaling '" + std::string(type.substr(0, 40)) + "' is not supported: " + path);
  }
  h.rope_style = arch == "llama" ? RopeStyle::kInterleaved : RopeStyle::kNeox;
  h.qkv_bias = by_name.count("blk.0.attn_q.bias") > 0;
  h.qk_norm = by_name.count("blk.0.attn_q_norm.weight") > 0;
  h.tied_embeddings = by_name.count("output.weight") == 0;
  if (!opts.name.empty()) h.name = opts.name;
  else if (g.find("general.name")) {
    POCKET_ASSIGN_OR_RETURN(std::string_view n, g.get_string("general.name"));
    h.name = std::string(n.substr(0, 256));
  } else {
    h.name = std::filesystem::path(path).stem().string();
  }
  if (Status v = h.validate(); !v.is_ok()) return Status(v.code(), v.message() + " (from GGUF metadata): " + path);

  // Expected tensors: [rows, cols] row-major (GGUF dims are {cols, rows}).
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
  for (const auto& [name, t] : by_name) {
    auto w = want.find(name);
    if (w == want.end()) {
      return unsupported("[gguf] tensor '" + name.substr(0, 200) + "' is not part of the " + arch +
                         " architecture pocket implements: " + path);
    }
    const std::vector<uint64_t> shape(t->dims.rbegin(), t->dims.rend());
    if (shape != w->second.shape) {
      return corrupt_file("[gguf] tensor '" + name + "' has shape " + shape_str(shape) + " but the metadata implies " +
                          shape_str(w->second.shape) + ": " + path);
    }
    if (!ggml_can_dequantize(t->ggml_type)) {
      uint64_t bb, be;
      const char* tn = "unknown";
      (void)ggml_type_size(t->ggml_type, &bb, &be, &tn);
      return unsupported("[gguf] tensor '" + name + "' has type " + tn +
                         " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K): " + path);
    }
  }
  for (const auto& [name, w] : want) {
    if (!by_name.count(name)) return corrupt_file("[gguf] required tensor '" + name + "' is missing: " + path);
  }

  POCKET_ASSIGN_OR_RETURN(TokenizerData td, tokenizer_data_from_gguf(g));
  int32_t eot = -1;
  if (g.find("tokenizer.ggml.eot_token_id")) {
    POCKET_ASSIGN_OR_RETURN(int64_t e, g.get_int("tokenizer.ggml.eot_token_id"));
    if (e >= 0 && e < h.n_vocab) eot = static_cast<int32_t>(e);
  }
  const bool add_bos = td.add_bos;
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, build_tokenizer(std::move(td)));
  if (tok->n_vocab() > h.n_vocab) {
    return corrupt_file("[gguf] the tokenizer has " + std::to_string(tok->n_vocab()) + " tokens but token_embd.weight has " +
                        std::to_string(h.n_vocab) + " rows: " + path);
  }
  InferenceConfig ic;
  ic.context_length = opts.context_length > 0 ? std::min(opts.context_length, h.n_ctx_train) : std::min<int64_t>(h.n_ctx_train, 4096);
  ic.add_bos = add_bos;
  const std::string tmpl(tok->chat_template_name());
  ic.chat_template = tmpl.empty() || tmpl.rfind("unrecognised", 0) == 0 ? "none" : tmpl;
  std::set<int32_t> stops;
  if (tok->eos_id() >= 0 && tok->eos_id() < h.n_vocab) stops.insert(tok->eos_id());
  if (eot >= 0) stops.insert(eot);
  ic.stop_tokens.assign(stops.begin(), stops.end());

  PackageWriter pw;
  pw.set_descriptor(h.to_json());
  pw.set_inference_config(ic.to_json());
  pw.set_tokenizer(tok->serialize());
  const uint8_t* base = g.bytes().data() + g.data_offset();
  for (const auto& [name, w] : want) {
    const GgufTensorInfo* t = by_name.at(name);
    const auto carried = same_layout(t->ggml_type);
    DType dt = DType::kF32;
    if (w.matrix) dt = opts.dtype ? *opts.dtype : carried ? *carried : DType::kQ8G32;
    const int64_t cols = static_cast<int64_t>(w.shape.back());
    const int64_t rows = w.shape.size() == 2 ? static_cast<int64_t>(w.shape[0]) : 1;
    const uint8_t* src = base + t->offset;
    const uint64_t src_row_bytes = t->n_bytes / static_cast<uint64_t>(rows);
    const uint32_t gt = t->ggml_type;
    const bool copy = carried && *carried == dt;
    POCKET_RETURN_IF_ERROR(pw.add_tensor(name, dt, w.shape, [=](std::span<uint8_t> out) -> Status {
      if (copy) {  // identical layouts; the GGUF rows hold whole blocks, so row sizes agree too
        if (out.size() != t->n_bytes) return Status(ErrorCode::kInternal, "[gguf] size mismatch copying '" + name + "'");
        std::memcpy(out.data(), src, out.size());
        return Status::ok();
      }
      return fill_rows(dt, rows, cols, [&](int64_t first, int64_t n, float* o) -> Status {
        for (int64_t i = 0; i < n; ++i) {
          POCKET_RETURN_IF_ERROR(ggml_dequantize_row(gt, src + static_cast<uint64_t>(first + i) * src_row_bytes, cols, o + i * cols));
        }
        return Status::ok();
      }, out);
    }));
  }
  // `g` (and its mapping) lives until write() returns.
  return pw.write(out_path);
}

}  // namespace pocket
