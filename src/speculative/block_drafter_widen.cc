// Widening a block drafter together with its target (block_drafter_widen.h).
#include "speculative/block_drafter_widen.h"

#include <algorithm>
#include <cmath>

#include "format/package_writer.h"
#include "model/model.h"
#include "speculative/block_drafter.h"
#include "speculative/block_drafter_format.h"

namespace pocket {

Status write_widened_block_drafter(const Model& small_target, const BlockDrafterModel& drafter,
                                   const Model& wide_target, const WidenOptions& o, const std::string& path) {
  const BlockDrafterConfig& sc = drafter.config();
  POCKET_RETURN_IF_ERROR(sc.check_target(small_target));
  POCKET_ASSIGN_OR_RETURN(Widening tw, Widening::create(small_target.hparams(), wide_target.hparams()));
  const HParams& wh = wide_target.hparams();
  const HParams& expect = tw.wide();
  if (expect.n_embd != wh.n_embd || expect.n_layers != wh.n_layers || expect.n_vocab != wh.n_vocab ||
      expect.n_heads != wh.n_heads || expect.n_kv_heads != wh.n_kv_heads || expect.head_dim != wh.head_dim ||
      std::fabs(expect.norm_eps - wh.norm_eps) > 1e-6f * std::max(1.0f, std::fabs(wh.norm_eps))) {
    return invalid_argument("[widen] " + wide_target.package().path() + " is not a widening of " +
                            small_target.package().path() +
                            " (its shape or norm eps differs from what widening gives)");
  }
  {  // The weights too: the first token rows of the embedding, over the small width, must be the small
     // model's (up to the wide package's quantisation).
    std::vector<float> es, ew;
    const auto V = static_cast<uint64_t>(small_target.hparams().n_vocab);
    const auto d = static_cast<uint64_t>(small_target.hparams().n_embd), D = static_cast<uint64_t>(wh.n_embd);
    const uint64_t rows = std::min<uint64_t>(V, 64);
    POCKET_RETURN_IF_ERROR(read_f32_tensor(small_target.package(), "token_embd.weight", {V, d}, &es,
                                           static_cast<int64_t>(rows)));
    POCKET_RETURN_IF_ERROR(read_f32_tensor(wide_target.package(), "token_embd.weight",
                                           {static_cast<uint64_t>(wh.n_vocab), D}, &ew,
                                           static_cast<int64_t>(rows)));
    double scale = 0.0, diff = 0.0;
    for (uint64_t r = 0; r < rows; ++r) {
      for (uint64_t c = 0; c < d; ++c) {
        scale = std::max(scale, std::fabs(static_cast<double>(es[r * d + c])));
        diff = std::max(diff, std::fabs(static_cast<double>(es[r * d + c]) - ew[r * D + c]));
      }
    }
    if (diff > 0.15 * scale) {
      return invalid_argument("[widen] " + wide_target.package().path() + " is not a widening of " +
                              small_target.package().path() + " (its token embedding differs)");
    }
  }
  HParams shape = wh;
  shape.n_layers = sc.blocks.n_layers;
  shape.n_ff = std::max(wh.n_ff, sc.blocks.n_ff);
  shape.name = "drafter";
  POCKET_ASSIGN_OR_RETURN(Widening bw, Widening::create(sc.blocks, shape));

  BlockDrafterConfig c = sc;
  c.blocks = bw.wide();
  c.blocks.name = wh.name + "-block-drafter";
  c.target_layers.clear();
  for (int32_t l : sc.target_layers) c.target_layers.push_back(tw.layer_map()[static_cast<size_t>(l)]);
  c.target_name = wh.name;
  c.target_fingerprint = package_fingerprint(wide_target.package());
  c.target_n_layers = wh.n_layers;
  c.target_n_vocab = wh.n_vocab;
  c.target_n_embd = wh.n_embd;
  if (Status st = c.validate(); !st.is_ok())
    return invalid_argument("[widen] the widened drafter: " + st.message());

  const Package& p = drafter.package();
  const HParams& s = sc.blocks;
  const auto d = static_cast<uint64_t>(s.n_embd), D = static_cast<uint64_t>(c.blocks.n_embd);
  const auto taps = static_cast<uint64_t>(sc.n_taps());
  PackageWriter pw;
  pw.set_descriptor(c.to_json());
  uint64_t seed = o.seed * 1000003ull + 7777;
  std::vector<float> t;
  POCKET_RETURN_IF_ERROR(read_f32_tensor(p, kDrafterFuse, {d, taps * d}, &t));
  POCKET_RETURN_IF_ERROR(add_f32_tensor(pw, kDrafterFuse, {D, taps * D},
                                        bw.fuse_matrix(t, static_cast<int64_t>(taps), ++seed), o.dtype));
  POCKET_RETURN_IF_ERROR(read_f32_tensor(p, kDrafterFuseNorm, {d}, &t));
  POCKET_RETURN_IF_ERROR(add_f32_tensor(pw, kDrafterFuseNorm, {D}, bw.norm(t), DType::kF32));
  POCKET_RETURN_IF_ERROR(read_f32_tensor(p, kDrafterMaskEmbd, {d}, &t));
  POCKET_RETURN_IF_ERROR(add_f32_tensor(pw, kDrafterMaskEmbd, {D}, bw.residual_vector(t), DType::kF32));
  for (int64_t l = 0; l < s.n_layers; ++l) {
    POCKET_ASSIGN_OR_RETURN(DenseLayer sl, read_dense_layer(p, s, l));
    POCKET_RETURN_IF_ERROR(add_dense_layer(pw, c.blocks, l, bw.layer(sl, ++seed), o.dtype));
  }
  POCKET_RETURN_IF_ERROR(read_f32_tensor(p, kDrafterOutputNorm, {d}, &t));
  POCKET_RETURN_IF_ERROR(add_f32_tensor(pw, kDrafterOutputNorm, {D}, bw.norm(t), DType::kF32));
  return pw.write(path);
}

}  // namespace pocket
