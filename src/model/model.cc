// Model loading: descriptor, config and tokenizer parsing, then binding every tensor by name with its
// expected shape and dtype checked against the hyper-parameters.
#include "model/model.h"

#include <nlohmann/json.hpp>

#include <map>

namespace pocket {

namespace {

bool is_matrix_dtype(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kQ8G32 || t == DType::kQ4G32 ||
         t == DType::kQ4G64 || t == DType::kQ4G32A || t == DType::kQ4G32R8;
}

std::string shape_str(const std::vector<uint64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace

std::string layer_tensor_name(int64_t layer, const char* suffix) {
  return "blk." + std::to_string(layer) + "." + suffix;
}

Expected<std::shared_ptr<const Model>> Model::load(const std::string& path, const OpenOptions& opts) {
  POCKET_ASSIGN_OR_RETURN(Package pkg, Package::open(path, opts));
  return from_package(std::move(pkg));
}

Expected<std::shared_ptr<const Model>> Model::from_package(Package pkg) {
  std::shared_ptr<Model> m(new Model(std::move(pkg)));
  Status st = m->bind();
  if (!st.is_ok()) {
    return Status(st.code(), st.message() + (m->package_.path().empty() ? "" : ": " + m->package_.path()));
  }
  return std::shared_ptr<const Model>(std::move(m));
}

Status Model::bind() {
  {  // a drafter package (speculative/block_drafter_format.h) has no embedding or head of its own
    const auto j = nlohmann::json::parse(package_.descriptor_json(), nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("kind") && j["kind"] == "drafter") {
      return invalid_argument(
          "[model] this package is a drafter, not a model: it runs beside its target (pocket run -m TARGET "
          "--spec block --model-draft DRAFTER)");
    }
  }
  POCKET_ASSIGN_OR_RETURN(hparams_, HParams::from_json(package_.descriptor_json()));
  POCKET_ASSIGN_OR_RETURN(config_, InferenceConfig::from_json(package_.config_json()));
  POCKET_ASSIGN_OR_RETURN(tokenizer_, load_tokenizer_section(package_.tokenizer_bytes()));
  const HParams& h = hparams_;
  if (tokenizer_->n_vocab() > h.n_vocab) {
    return corrupt_file("[model] tokenizer has " + std::to_string(tokenizer_->n_vocab()) +
                        " tokens but the descriptor's n_vocab is " + std::to_string(h.n_vocab));
  }
  if (config_.context_length > h.n_ctx_train) {
    return corrupt_file("[model] inference config context_length " + std::to_string(config_.context_length) +
                        " exceeds the descriptor's n_ctx_train " + std::to_string(h.n_ctx_train));
  }
  for (int32_t id : config_.stop_tokens) {
    if (id < 0 || id >= h.n_vocab) return corrupt_file("[model] stop token " + std::to_string(id) + " is outside the vocabulary");
  }

  std::map<std::string, bool> used;
  auto bind_one = [&](const std::string& name, std::vector<int64_t> shape, bool matrix, bool required,
                      WeightRef* out) -> Status {
    const TensorInfo* t = package_.find(name);
    if (t == nullptr) {
      if (required) return corrupt_file("[model] required tensor '" + name + "' is missing");
      return Status::ok();
    }
    std::vector<uint64_t> want(shape.begin(), shape.end());
    if (t->shape != want) {
      return corrupt_file("[model] tensor '" + name + "' has shape " + shape_str(t->shape) +
                          " but the hyper-parameters need " + shape_str(want));
    }
    if (matrix ? !is_matrix_dtype(t->dtype) : t->dtype != DType::kF32) {
      return unsupported("[model] tensor '" + name + "' has dtype " + std::string(dtype_name(t->dtype)) +
                         (matrix ? ", not usable for a weight matrix" : "; norms and biases must be f32"));
    }
    out->data = t->data;
    out->dtype = t->dtype;
    out->rows = shape.size() == 2 ? shape[0] : 1;
    out->cols = shape.back();
    out->name = &t->name;
    used[name] = true;
    return Status::ok();
  };

  const int64_t d = h.n_embd, q = h.q_dim(), kv = h.kv_dim();
  POCKET_RETURN_IF_ERROR(bind_one("token_embd.weight", {h.n_vocab, d}, true, true, &weights_.token_embd));
  POCKET_RETURN_IF_ERROR(bind_one("output_norm.weight", {d}, false, true, &weights_.output_norm));
  if (h.tied_embeddings) {
    if (package_.find("output.weight") != nullptr) {
      return corrupt_file("[model] descriptor says tied_embeddings but the package has 'output.weight'");
    }
    weights_.output = weights_.token_embd;
  } else {
    POCKET_RETURN_IF_ERROR(bind_one("output.weight", {h.n_vocab, d}, true, true, &weights_.output));
  }
  weights_.layers.resize(static_cast<size_t>(h.n_layers));
  for (int64_t l = 0; l < h.n_layers; ++l) {
    LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
    auto n = [&](const char* s) { return layer_tensor_name(l, s); };
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_norm.weight"), {d}, false, true, &L.attn_norm));
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_q.weight"), {q, d}, true, true, &L.wq));
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_k.weight"), {kv, d}, true, true, &L.wk));
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_v.weight"), {kv, d}, true, true, &L.wv));
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_output.weight"), {d, q}, true, true, &L.wo));
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_q.bias"), {q}, false, h.qkv_bias, &L.bq));
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_k.bias"), {kv}, false, h.qkv_bias, &L.bk));
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_v.bias"), {kv}, false, h.qkv_bias, &L.bv));
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_q_norm.weight"), {h.head_dim}, false, h.qk_norm, &L.q_norm));
    POCKET_RETURN_IF_ERROR(bind_one(n("attn_k_norm.weight"), {h.head_dim}, false, h.qk_norm, &L.k_norm));
    POCKET_RETURN_IF_ERROR(bind_one(n("ffn_norm.weight"), {d}, false, true, &L.ffn_norm));
    POCKET_RETURN_IF_ERROR(bind_one(n("ffn_gate.weight"), {h.n_ff, d}, true, true, &L.w_gate));
    POCKET_RETURN_IF_ERROR(bind_one(n("ffn_up.weight"), {h.n_ff, d}, true, true, &L.w_up));
    POCKET_RETURN_IF_ERROR(bind_one(n("ffn_down.weight"), {d, h.n_ff}, true, true, &L.w_down));
  }
  for (const auto& t : package_.tensors()) {
    if (!used.count(t.name)) {
      return corrupt_file("[model] tensor '" + t.name + "' is not part of the " + h.family + " architecture described");
    }
  }
  return Status::ok();
}

uint64_t Model::weight_bytes_per_token() const {
  uint64_t total = 0;
  for (const auto& t : package_.tensors()) {
    if (t.name == "token_embd.weight") {
      if (hparams_.tied_embeddings) total += t.size;  // read whole as the output head
      continue;
    }
    total += t.size;
  }
  return total;
}

std::string Model::weight_type_label() const {
  std::map<DType, uint64_t> bytes;
  uint64_t total = 0;
  for (const auto& t : package_.tensors()) {
    // q4_g32r8 is q4_g32 in the kernels' layout: the same weights, counted as one type.
    bytes[t.dtype == DType::kQ4G32R8 ? DType::kQ4G32 : t.dtype] += t.size;
    total += t.size;
  }
  for (const auto& [dt, b] : bytes) {
    if (b * 10 >= total * 9) return std::string(dtype_name(dt));
  }
  return "mixed";
}

}  // namespace pocket
