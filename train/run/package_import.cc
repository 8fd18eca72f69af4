// Package -> f32 NamedTensors (see package_import.h).
#include "run/package_import.h"

#include <map>

#include "model/matmul.h"
#include "model/model.h"
#include "run/exporter.h"

namespace pocket::train {

namespace {

// Every bound weight of the model by its package name (a tied head appears once, as token_embd).
std::map<std::string, const WeightRef*> bound_weights(const ModelWeights& w) {
  std::map<std::string, const WeightRef*> out;
  auto add = [&](const WeightRef& r) {
    if (r.present() && r.name != nullptr) out.emplace(*r.name, &r);
  };
  add(w.token_embd);
  for (const LayerWeights& l : w.layers) {
    for (const WeightRef* r : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm,
                               &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down}) {
      add(*r);
    }
  }
  add(w.output_norm);
  add(w.output);
  return out;
}

}  // namespace

Expected<ImportedPackage> import_package(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(auto model, Model::load(path));
  ImportedPackage out;
  out.hparams = model->hparams();
  out.chat_template = model->config().chat_template;
  out.context_length = model->config().context_length;
  out.dominant_type = model->weight_type_label();
  const auto tok = model->package().tokenizer_bytes();
  out.tokenizer.assign(tok.begin(), tok.end());

  const auto refs = bound_weights(model->weights());
  for (const auto& [name, shape] : runtime_tensor_shapes(out.hparams)) {
    auto it = refs.find(name);
    if (it == refs.end()) return corrupt_file("[import] tensor '" + name + "' is not bound by the runtime: " + path);
    const WeightRef& r = *it->second;
    // Vectors are bound as [1, n] or [n, 1] depending on the loader; only the element count must agree.
    int64_t want = 1;
    for (int64_t d : shape) want *= d;
    const int64_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.back();
    if (r.rows * r.cols != want || (shape.size() == 2 && (r.rows != rows || r.cols != cols))) {
      return corrupt_file("[import] tensor '" + name + "' is [" + std::to_string(r.rows) + ", " +
                          std::to_string(r.cols) + "], the architecture needs " + std::to_string(want) +
                          " elements: " + path);
    }
    NamedTensor t{name, shape, std::vector<float>(static_cast<size_t>(want))};
    if (shape.size() == 2) {
      for (int64_t i = 0; i < rows; ++i) weight_row_to_f32(t.data.data() + i * cols, r, i);
    } else {
      for (int64_t i = 0; i < r.rows; ++i) weight_row_to_f32(t.data.data() + i * r.cols, r, i);
    }
    out.weights.push_back(std::move(t));
  }
  return out;
}

}  // namespace pocket::train
