// Block drafter package export and re-import (see drafter_exporter.h).
#include "run/drafter_exporter.h"

#include <map>

#include "convert/quantize_model.h"
#include "format/package_writer.h"
#include "model/matmul.h"
#include "model/model.h"
#include "quant/quantize.h"
#include "run/exporter.h"

namespace pocket::train {

Expected<BlockDrafterConfig> drafter_config_for_target(const std::string& target_path, int64_t n_layers,
                                                       const std::vector<int32_t>& target_layers, int32_t block_size) {
  POCKET_ASSIGN_OR_RETURN(auto target, Model::load(target_path));
  const HParams& th = target->hparams();
  BlockDrafterConfig c;
  c.blocks = th;
  c.blocks.n_layers = n_layers;
  c.blocks.name = th.name + "-block-drafter";
  c.blocks.tied_embeddings = true;
  c.block_size = block_size;
  c.target_layers = target_layers;
  c.target_name = th.name;
  c.target_fingerprint = package_fingerprint(target->package());
  c.target_n_layers = th.n_layers;
  c.target_n_vocab = th.n_vocab;
  c.target_n_embd = th.n_embd;
  if (th.qkv_bias || th.qk_norm) {
    return unsupported("[drafter] targets with q/k/v biases or q/k norms are not supported: " + target_path);
  }
  POCKET_RETURN_IF_ERROR(c.validate());
  return c;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> drafter_tensor_shapes(const BlockDrafterConfig& c) {
  const HParams& h = c.blocks;
  const int64_t d = h.n_embd, q = h.q_dim(), kv = h.kv_dim();
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  out.push_back({kDrafterFuse, {d, c.n_taps() * d}});
  out.push_back({kDrafterFuseNorm, {d}});
  out.push_back({kDrafterMaskEmbd, {d}});
  for (int64_t l = 0; l < h.n_layers; ++l) {
    auto n = [&](const char* s) { return layer_tensor_name(l, s); };
    out.push_back({n("attn_norm.weight"), {d}});
    out.push_back({n("attn_q.weight"), {q, d}});
    out.push_back({n("attn_k.weight"), {kv, d}});
    out.push_back({n("attn_v.weight"), {kv, d}});
    out.push_back({n("attn_output.weight"), {d, q}});
    out.push_back({n("ffn_norm.weight"), {d}});
    out.push_back({n("ffn_gate.weight"), {h.n_ff, d}});
    out.push_back({n("ffn_up.weight"), {h.n_ff, d}});
    out.push_back({n("ffn_down.weight"), {d, h.n_ff}});
  }
  out.push_back({kDrafterOutputNorm, {d}});
  return out;
}

Status export_block_drafter(const BlockDrafterConfig& c, const std::vector<NamedTensor>& weights,
                            const std::string& target_path, DType mt, const std::string& path) {
  POCKET_RETURN_IF_ERROR(c.validate());
  if (mt != DType::kF32 && mt != DType::kF16 && mt != DType::kBF16 && !quant::is_quantised(mt)) {
    return invalid_argument("[drafter export] matrix type " + std::string(dtype_name(mt)) + " is not supported");
  }
  POCKET_ASSIGN_OR_RETURN(auto target, Model::load(target_path));
  POCKET_RETURN_IF_ERROR(c.check_target(*target));
  PackageWriter w;
  w.set_descriptor(c.to_json());
  w.set_inference_config(std::string(target->package().config_json()));
  const auto tok = target->package().tokenizer_bytes();
  w.set_tokenizer(std::vector<uint8_t>(tok.begin(), tok.end()));
  POCKET_RETURN_IF_ERROR(add_checked_tensors(w, weights, drafter_tensor_shapes(c), mt, "[drafter export]"));
  return w.write(path);
}

Expected<ImportedDrafter> import_block_drafter(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(Package pkg, Package::open(path));
  ImportedDrafter out;
  POCKET_ASSIGN_OR_RETURN(out.config, BlockDrafterConfig::from_json(pkg.descriptor_json()));
  for (const auto& [name, shape] : drafter_tensor_shapes(out.config)) {
    const TensorInfo* ti = pkg.find(name);
    if (ti == nullptr) return corrupt_file("[drafter import] tensor '" + name + "' is missing: " + path);
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const int64_t rows = static_cast<int64_t>(ti->rows()), cols = static_cast<int64_t>(ti->cols());
    if (rows * cols != n) return corrupt_file("[drafter import] tensor '" + name + "' has the wrong size: " + path);
    WeightRef r{ti->data, ti->dtype, rows, cols, &ti->name};
    NamedTensor t{name, shape, std::vector<float>(static_cast<size_t>(n))};
    for (int64_t i = 0; i < rows; ++i) weight_row_to_f32(t.data.data() + i * cols, r, i);
    out.weights.push_back(std::move(t));
  }
  return out;
}

}  // namespace pocket::train
