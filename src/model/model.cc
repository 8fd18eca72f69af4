// Model loading: descriptor, config and tokenizer parsing, then binding every tensor by name with its
// expected shape and dtype checked against the hyper-parameters.
#include "model/model.h"

#include <map>
#include <nlohmann/json.hpp>

#include "model/tensor_binder.h"


namespace pocket {


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

  TensorBinder tb(package_, "[model]", "the hyper-parameters");
  auto bind_one = [&](const std::string& name, std::vector<int64_t> shape, bool matrix, bool required,
                      WeightRef* out) { return tb.bind(name, shape, matrix, required, out); };

  const int64_t d = h.n_embd;
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
    POCKET_RETURN_IF_ERROR(tb.bind_layer(l, h, &weights_.layers[static_cast<size_t>(l)]));
  }
  if (const TensorInfo* t = tb.first_unbound()) {
    return corrupt_file("[model] tensor '" + t->name + "' is not part of the " + h.family + " architecture described");
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
