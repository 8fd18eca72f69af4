// Tensor binding with shape and dtype checks (tensor_binder.h).
#include "model/tensor_binder.h"

namespace pocket {

bool is_matrix_dtype(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kQ8G32 || t == DType::kQ4G32 ||
         t == DType::kQ4G64 || t == DType::kQ4G32A || t == DType::kQ4G32R8;
}

std::string shape_str(const std::vector<uint64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

Status TensorBinder::bind(const std::string& name, const std::vector<int64_t>& shape, bool matrix, bool required,
                          WeightRef* out) {
  const TensorInfo* t = pkg_.find(name);
  if (t == nullptr) {
    if (required) return corrupt_file(tag_ + " required tensor '" + name + "' is missing");
    return Status::ok();
  }
  const std::vector<uint64_t> want(shape.begin(), shape.end());
  if (t->shape != want) {
    return corrupt_file(tag_ + " tensor '" + name + "' has shape " + shape_str(t->shape) + " but " + shape_source_ +
                        " need " + shape_str(want));
  }
  if (matrix ? !is_matrix_dtype(t->dtype) : t->dtype != DType::kF32) {
    return unsupported(tag_ + " tensor '" + name + "' has dtype " + std::string(dtype_name(t->dtype)) +
                       (matrix ? ", not usable for a weight matrix" : "; norms, biases and vectors must be f32"));
  }
  out->data = t->data;
  out->dtype = t->dtype;
  out->rows = shape.size() == 2 ? shape[0] : 1;
  out->cols = shape.back();
  out->name = &t->name;
  used_.insert(name);
  return Status::ok();
}

Status TensorBinder::bind_layer(int64_t l, const HParams& h, LayerWeights* L) {
  const int64_t d = h.n_embd, q = h.q_dim(), kv = h.kv_dim();
  auto n = [&](const char* s) { return layer_tensor_name(l, s); };
  POCKET_RETURN_IF_ERROR(bind(n("attn_norm.weight"), {d}, false, true, &L->attn_norm));
  POCKET_RETURN_IF_ERROR(bind(n("attn_q.weight"), {q, d}, true, true, &L->wq));
  POCKET_RETURN_IF_ERROR(bind(n("attn_k.weight"), {kv, d}, true, true, &L->wk));
  POCKET_RETURN_IF_ERROR(bind(n("attn_v.weight"), {kv, d}, true, true, &L->wv));
  POCKET_RETURN_IF_ERROR(bind(n("attn_output.weight"), {d, q}, true, true, &L->wo));
  POCKET_RETURN_IF_ERROR(bind(n("attn_q.bias"), {q}, false, h.qkv_bias, &L->bq));
  POCKET_RETURN_IF_ERROR(bind(n("attn_k.bias"), {kv}, false, h.qkv_bias, &L->bk));
  POCKET_RETURN_IF_ERROR(bind(n("attn_v.bias"), {kv}, false, h.qkv_bias, &L->bv));
  POCKET_RETURN_IF_ERROR(bind(n("attn_q_norm.weight"), {h.head_dim}, false, h.qk_norm, &L->q_norm));
  POCKET_RETURN_IF_ERROR(bind(n("attn_k_norm.weight"), {h.head_dim}, false, h.qk_norm, &L->k_norm));
  POCKET_RETURN_IF_ERROR(bind(n("ffn_norm.weight"), {d}, false, true, &L->ffn_norm));
  POCKET_RETURN_IF_ERROR(bind(n("ffn_gate.weight"), {h.n_ff, d}, true, true, &L->w_gate));
  POCKET_RETURN_IF_ERROR(bind(n("ffn_up.weight"), {h.n_ff, d}, true, true, &L->w_up));
  POCKET_RETURN_IF_ERROR(bind(n("ffn_down.weight"), {d, h.n_ff}, true, true, &L->w_down));
  return Status::ok();
}

const TensorInfo* TensorBinder::first_unbound() const {
  for (const auto& t : pkg_.tensors()) {
    if (!used_.count(t.name)) return &t;
  }
  return nullptr;
}

}  // namespace pocket
