// .pocket export through PackageWriter and the quantiser (see exporter.h).
#include "run/exporter.h"

#include <map>

#include "format/package_writer.h"
#include "model/model.h"
#include "convert/quantize_model.h"
#include "quant/quantize.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pocket::train {

std::vector<std::pair<std::string, std::vector<int64_t>>> runtime_tensor_shapes(const HParams& h) {
  const int64_t d = h.n_embd, q = h.q_dim(), kv = h.kv_dim();
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  out.push_back({"token_embd.weight", {h.n_vocab, d}});
  for (int64_t l = 0; l < h.n_layers; ++l) {
    auto n = [&](const char* s) { return layer_tensor_name(l, s); };
    out.push_back({n("attn_norm.weight"), {d}});
    out.push_back({n("attn_q.weight"), {q, d}});
    out.push_back({n("attn_k.weight"), {kv, d}});
    out.push_back({n("attn_v.weight"), {kv, d}});
    if (h.qkv_bias) {
      out.push_back({n("attn_q.bias"), {q}});
      out.push_back({n("attn_k.bias"), {kv}});
      out.push_back({n("attn_v.bias"), {kv}});
    }
    if (h.qk_norm) {
      out.push_back({n("attn_q_norm.weight"), {h.head_dim}});
      out.push_back({n("attn_k_norm.weight"), {h.head_dim}});
    }
    out.push_back({n("attn_output.weight"), {d, q}});
    out.push_back({n("ffn_norm.weight"), {d}});
    out.push_back({n("ffn_gate.weight"), {h.n_ff, d}});
    out.push_back({n("ffn_up.weight"), {h.n_ff, d}});
    out.push_back({n("ffn_down.weight"), {d, h.n_ff}});
  }
  out.push_back({"output_norm.weight", {d}});
  if (!h.tied_embeddings) out.push_back({"output.weight", {h.n_vocab, d}});
  return out;
}

Status add_checked_tensors(PackageWriter& w, const std::vector<NamedTensor>& weights,
                           const std::vector<std::pair<std::string, std::vector<int64_t>>>& want, DType mt,
                           const std::string& tag) {
  std::map<std::string, const NamedTensor*> by_name;
  for (const auto& t : weights) by_name[t.name] = &t;
  if (by_name.size() != weights.size() || by_name.size() != want.size()) {
    return invalid_argument(tag + " " + std::to_string(weights.size()) + " tensors given, " +
                            std::to_string(want.size()) + " expected (each once)");
  }
  for (const auto& [name, shape] : want) {
    auto it = by_name.find(name);
    if (it == by_name.end()) return invalid_argument(tag + " tensor '" + name + "' is missing");
    const NamedTensor& t = *it->second;
    if (t.shape != shape) return invalid_argument(tag + " tensor '" + name + "' has the wrong shape");
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    if (static_cast<int64_t>(t.data.size()) != n) return invalid_argument(tag + " tensor '" + name + "' has the wrong size");
    std::vector<uint64_t> ushape(shape.begin(), shape.end());
    const bool matrix = shape.size() == 2;
    // q4_g32 layer matrices go to the kernels' 8-row interleaved layout, as `pocket quantize` writes them.
    const DType dt = matrix ? storage_dtype(mt, name, static_cast<uint64_t>(shape[0]), true) : DType::kF32;
    const NamedTensor* src = &t;
    POCKET_RETURN_IF_ERROR(w.add_tensor(name, dt, ushape, [src, dt, matrix](std::span<uint8_t> out) -> Status {
      const int64_t rows = matrix ? src->shape[0] : 1;
      const int64_t cols = src->shape.back();
      return quant::quantize_tensor(dt, src->data.data(), rows, cols, out);
    }));
  }
  return Status::ok();
}

Status export_package(const HParams& h, const std::vector<NamedTensor>& weights, const std::vector<uint8_t>& tokenizer,
                      const ExportOptions& opts, const std::string& path) {
  POCKET_RETURN_IF_ERROR(h.validate());
  const DType mt = opts.matrix_type;
  if (mt != DType::kF32 && mt != DType::kF16 && mt != DType::kBF16 && !quant::is_quantised(mt)) {
    return invalid_argument("[export] matrix type " + std::string(dtype_name(mt)) + " is not supported");
  }
  POCKET_ASSIGN_OR_RETURN(auto tok, load_tokenizer_section(tokenizer));
  if (tok->n_vocab() > h.n_vocab) {
    return invalid_argument("[export] the tokenizer has " + std::to_string(tok->n_vocab()) +
                            " tokens, more than the model's n_vocab " + std::to_string(h.n_vocab));
  }
  PackageWriter w;
  w.set_descriptor(h.to_json());
  InferenceConfig cfg;
  cfg.context_length = opts.context_length > 0 ? std::min(opts.context_length, h.n_ctx_train) : h.n_ctx_train;
  cfg.chat_template = opts.chat_template.empty() ? "none" : opts.chat_template;
  if (cfg.chat_template != "none" && !is_known_chat_template(cfg.chat_template)) {
    return invalid_argument("[export] unknown chat template '" + cfg.chat_template + "'");
  }
  cfg.add_bos = tok->bos_id() >= 0;
  if (tok->eos_id() >= 0) cfg.stop_tokens.push_back(tok->eos_id());
  // The turn terminators of the chat templates stop generation too.
  for (const char* end : {"<|im_end|>", "<|eot_id|>"}) {
    for (int32_t id = 0; id < tok->n_vocab(); ++id) {
      if (tok->token_type(id) == TokenType::kControl && tok->piece_text(id) == end) cfg.stop_tokens.push_back(id);
    }
  }
  w.set_inference_config(cfg.to_json());
  w.set_tokenizer(tokenizer);
  POCKET_RETURN_IF_ERROR(add_checked_tensors(w, weights, runtime_tensor_shapes(h), mt, "[export]"));
  return w.write(path);
}

}  // namespace pocket::train
