// The block drafter's runtime: binding a drafter package, its KV cache of context features, and the one
// non-causal pass over the block rows that proposes B tokens (the math is in block_drafter_format.h).
#include "speculative/block_drafter.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"
#include "model/matmul.h"
#include "model/tensor_binder.h"

namespace pocket {

namespace {

// Context rows turned into features per pass of observe_hidden(): a prefill chunk of 128 rows runs as 4.
constexpr int64_t kObserveRows = 32;

// The lowest index of the largest value (NaNs never win; all NaN: 0). Two passes so the first, the
// maximum, has no data-dependent branch: 8 independent lanes the compiler vectorises (compare + blend). On
// pocket-nano the scalar one-pass loop over 8 rows x 8192 logits was ~15 % of a drafting pass.
int32_t argmax_lowest(const float* x, int64_t n) {
  constexpr int kLanes = 8;
  float lane[kLanes];
  for (float& l : lane) l = x[0];
  int64_t t = 0;
  for (; t + kLanes <= n; t += kLanes) {
    for (int k = 0; k < kLanes; ++k) lane[k] = x[t + k] > lane[k] ? x[t + k] : lane[k];
  }
  float m = lane[0];
  for (int k = 1; k < kLanes; ++k) m = lane[k] > m ? lane[k] : m;
  for (; t < n; ++t) m = x[t] > m ? x[t] : m;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] == m) return static_cast<int32_t>(i);
  }
  return 0;
}

// Every buffer a drafter session holds, in elements; create() allocates exactly these and session_bytes()
// counts them, so the memory plan is what is allocated.
struct DrafterSizes {
  int64_t cap = 0;         // KV positions per layer: n_ctx context positions + the block rows past them
  int64_t kv = 0;          // each of K and V: [n_layers][n_kv_heads][cap][head_dim] f16
  int64_t rows = 0;        // the most activation rows of one matmul: max(B + 1, kObserveRows)
  int64_t max_width = 0;   // the widest matrix input (the fuse's n_taps * n_embd, or n_ff, q_dim)
  int64_t hcat = 0;        // [kObserveRows][n_taps * n_embd] tapped hidden states, concatenated per row
  int64_t x = 0;           // [B + 1][n_embd] block residual stream
  int64_t xb = 0;          // [rows][max(n_embd, q_dim)] normed rows; the context features c_j
  int64_t xb2 = 0;         // [B + 1][q_dim] attention output
  int64_t q = 0;           // [B + 1][q_dim]
  int64_t k = 0, v = 0;    // [rows][kv_dim]
  int64_t hb = 0, hb2 = 0; // [B + 1][n_ff]
  int64_t rope = 0;        // [rows][head_dim / 2] cosines, then as many sines
  int64_t row_buf = 0;     // [n_threads][max_width] dequantised weight rows (matmul's reference path)
  int64_t tiles = 0;       // residual product tiles (Q8G32 matrices), floats
  int64_t act_blocks = 0;  // int8 activation blocks
  int64_t logits = 0;      // [B][n_vocab]

  int64_t floats() const { return hcat + x + xb + xb2 + q + k + v + hb + hb2 + rope + row_buf + tiles + logits; }
  uint64_t bytes() const {
    return sizeof(float) * static_cast<uint64_t>(floats()) + 2ull * sizeof(uint16_t) * static_cast<uint64_t>(kv) +
           sizeof(quant::ActBlock) * static_cast<uint64_t>(act_blocks);
  }
};

// The activation scratch is sized for residual activations (Q8G32 matrices, kernels.h) whatever the dtypes:
// a few KiB more, and the figure depends on the drafter alone (the target's LM head runs on it too).
DrafterSizes drafter_sizes(const BlockDrafterConfig& c, int64_t n_ctx, int64_t n_threads) {
  constexpr bool residual = true;
  const HParams& h = c.blocks;
  const int64_t B = c.block_size, d = h.n_embd, qd = h.q_dim(), kvd = h.kv_dim();
  DrafterSizes z;
  z.cap = n_ctx + B;
  z.kv = h.n_layers * h.n_kv_heads * z.cap * h.head_dim;
  z.rows = std::max<int64_t>(B + 1, kObserveRows);
  z.max_width = std::max({c.n_taps() * d, d, qd, h.n_ff});
  z.hcat = kObserveRows * c.n_taps() * d;
  z.x = (B + 1) * d;
  z.xb = z.rows * std::max(d, qd);
  z.xb2 = (B + 1) * qd;
  z.q = (B + 1) * qd;
  z.k = z.rows * kvd;
  z.v = z.rows * kvd;
  z.hb = (B + 1) * h.n_ff;
  z.hb2 = (B + 1) * h.n_ff;
  z.rope = z.rows * (h.head_dim / 2) * 2;
  z.row_buf = n_threads * z.max_width;
  z.tiles = residual ? n_threads * kernels::residual_tile_floats(z.rows) : 0;
  z.act_blocks = kernels::act_scratch_blocks(residual, z.rows, z.max_width);
  z.logits = B * h.n_vocab;
  return z;
}

}  // namespace

// --- BlockDrafterModel -------------------------------------------------------------------------------------

Expected<std::shared_ptr<const BlockDrafterModel>> BlockDrafterModel::load(const std::string& path,
                                                                           const OpenOptions& opts) {
  POCKET_ASSIGN_OR_RETURN(Package pkg, Package::open(path, opts));
  return from_package(std::move(pkg));
}

Expected<std::shared_ptr<const BlockDrafterModel>> BlockDrafterModel::from_package(Package pkg) {
  std::shared_ptr<BlockDrafterModel> m(new BlockDrafterModel(std::move(pkg)));
  Status st = m->bind();
  if (!st.is_ok()) {
    return Status(st.code(), st.message() + (m->package_.path().empty() ? "" : ": " + m->package_.path()));
  }
  return std::shared_ptr<const BlockDrafterModel>(std::move(m));
}

Status BlockDrafterModel::bind() {
  if (!is_drafter_descriptor(package_.descriptor_json())) {
    return invalid_argument("[drafter] this package is not a drafter (its descriptor has no \"kind\": \"drafter\"); "
                            "a model goes to --spec draft, a block drafter is written by pocket-train drafter");
  }
  POCKET_ASSIGN_OR_RETURN(config_, BlockDrafterConfig::from_json(package_.descriptor_json()));
  const HParams& h = config_.blocks;
  if (h.head_dim > kernels::kMaxHeadDim || h.n_heads / h.n_kv_heads > kernels::kMaxGroup) {
    return unsupported("[drafter] head_dim " + std::to_string(h.head_dim) + " or group " +
                       std::to_string(h.n_heads / h.n_kv_heads) + " exceeds the attention kernel's limits (" +
                       std::to_string(kernels::kMaxHeadDim) + ", " + std::to_string(kernels::kMaxGroup) + ")");
  }
  TensorBinder tb(package_, "[drafter]", "the descriptor");
  auto bind_one = [&](const std::string& name, std::vector<int64_t> shape, bool matrix, WeightRef* out) {
    return tb.bind(name, shape, matrix, /*required=*/true, out);
  };
  const int64_t d = h.n_embd;
  POCKET_RETURN_IF_ERROR(bind_one(kDrafterFuse, {d, config_.n_taps() * d}, true, &fuse_));
  POCKET_RETURN_IF_ERROR(bind_one(kDrafterFuseNorm, {d}, false, &fuse_norm_));
  POCKET_RETURN_IF_ERROR(bind_one(kDrafterMaskEmbd, {d}, false, &mask_embd_));
  POCKET_RETURN_IF_ERROR(bind_one(kDrafterOutputNorm, {d}, false, &output_norm_));
  layers_.resize(static_cast<size_t>(h.n_layers));
  for (int64_t l = 0; l < h.n_layers; ++l) {
    POCKET_RETURN_IF_ERROR(tb.bind_layer(l, h, &layers_[static_cast<size_t>(l)]));  // h: no biases, no q/k norms
  }
  if (const TensorInfo* t = tb.first_unbound()) {
    return corrupt_file("[drafter] tensor '" + t->name + "' is not part of a block drafter (it shares the target's "
                        "embedding and LM head; see block_drafter_format.h)");
  }
  return Status::ok();
}

uint64_t BlockDrafterModel::session_bytes(int64_t n_ctx, int64_t n_threads) const {
  return session_plan(n_ctx, n_threads).session_total();
}

MemoryPlan BlockDrafterModel::session_plan(int64_t n_ctx, int64_t n_threads) const {
  const DrafterSizes z = drafter_sizes(config_, n_ctx, std::max<int64_t>(n_threads, 1));
  MemoryPlan p;
  p.weights = package_.file_size();
  p.kv_cache = 2ull * sizeof(uint16_t) * static_cast<uint64_t>(z.kv);
  p.logits = sizeof(float) * static_cast<uint64_t>(z.logits);
  p.activations = z.bytes() - p.kv_cache - p.logits;
  return p;
}

// --- PackagedBlockDrafter ----------------------------------------------------------------------------------

struct PackagedBlockDrafter::Impl {
  std::shared_ptr<const Model> target;
  std::shared_ptr<const BlockDrafterModel> drafter;
  std::unique_ptr<ThreadPool> own_pool;  // only when the caller passed none
  ThreadPool* pool = nullptr;
  DrafterSizes z;
  int64_t n_ctx = 0;
  int64_t n_observed = 0;  // context positions 0 .. n_observed - 1 hold features in the cache
  int64_t n_logit_rows = 0;  // rows of `logits` the last propose() computed
  // [n_layers][n_kv_heads][cap][head_dim] f16, head-major like the target's fast-path cache.
  std::vector<uint16_t> k_cache, v_cache;
  std::vector<float> hcat, x, xb, xb2, q, k, v, hb, hb2, rope, row_buf, tiles, logits;
  std::vector<quant::ActBlock> xq;

  MatmulScratch scratch() {
    MatmulScratch s;
    s.row_buf = row_buf.data();
    s.row_buf_stride = z.max_width;
    s.xq = xq.data();
    s.tiles = tiles.empty() ? nullptr : tiles.data();
    return s;
  }
  uint16_t* layer_k(int64_t l) { return k_cache.data() + l * layer_stride(); }
  uint16_t* layer_v(int64_t l) { return v_cache.data() + l * layer_stride(); }
  int64_t layer_stride() const {
    const HParams& h = drafter->config().blocks;
    return h.n_kv_heads * z.cap * h.head_dim;
  }
  int64_t head_stride() const { return z.cap * drafter->config().blocks.head_dim; }

  // Rotary angles of positions pos0 .. pos0 + m - 1 into rope (cosines, then sines at rope + rows * hd/2).
  void angles(int64_t pos0, int64_t m) {
    const HParams& h = drafter->config().blocks;
    const int64_t half = h.head_dim / 2;
    for (int64_t i = 0; i < m; ++i) {
      kernels::rope_angles(rope.data() + i * half, rope.data() + z.rows * half + i * half, h.head_dim, pos0 + i,
                           h.rope_theta);
    }
  }
  kernels::RopeStyle rope_style() const {
    return drafter->config().blocks.rope_style == RopeStyle::kNeox ? kernels::RopeStyle::kNeox
                                                                   : kernels::RopeStyle::kInterleaved;
  }
  // k/v rows 0 .. m-1 (already projected) roped and written to layer l's cache at positions pos0...
  void store_kv(int64_t l, int64_t pos0, int64_t m) {
    const HParams& h = drafter->config().blocks;
    const int64_t half = h.head_dim / 2;
    kernels::rope(*pool, k.data(), m, h.n_kv_heads, h.head_dim, rope.data(), rope.data() + z.rows * half, rope_style());
    kernels::to_f16_heads(*pool, layer_k(l) + pos0 * h.head_dim, head_stride(), k.data(), m, h.n_kv_heads, h.head_dim);
    kernels::to_f16_heads(*pool, layer_v(l) + pos0 * h.head_dim, head_stride(), v.data(), m, h.n_kv_heads, h.head_dim);
  }

  void features(const TargetHiddenStates& s, int64_t r0, int64_t m);
  void block_pass(int32_t anchor, int64_t n, int64_t n_out);
};

// c_j = rmsnorm(fuse · H_j) * fuse_norm for rows r0 .. r0 + m - 1 of the report, then every layer's K_j, V_j
// at their positions.
void PackagedBlockDrafter::Impl::features(const TargetHiddenStates& s, int64_t r0, int64_t m) {
  const BlockDrafterModel& D = *drafter;
  const HParams& h = D.config().blocks;
  const int64_t d = h.n_embd, taps = D.config().n_taps();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t t = 0; t < taps; ++t) {
      std::memcpy(hcat.data() + (i * taps + t) * d, s.data + t * s.layer_stride + (r0 + i) * s.n_embd,
                  sizeof(float) * static_cast<size_t>(d));
    }
  }
  const MatmulScratch ms = scratch();
  float* c = xb.data();  // [m][n_embd]
  matmul(*pool, c, hcat.data(), m, D.fuse(), ms);
  kernels::rmsnorm(*pool, c, c, D.fuse_norm().f32(), m, d, h.norm_eps);
  const int64_t pos0 = s.pos0 + r0;
  angles(pos0, m);
  for (int64_t l = 0; l < h.n_layers; ++l) {
    const LayerWeights& L = D.layers()[static_cast<size_t>(l)];
    matmul_shared(*pool, {{k.data(), &L.wk}, {v.data(), &L.wv}}, c, m, ms);
    store_kv(l, pos0, m);
  }
}

// The B + 1 block rows at positions n - 1 .. n - 1 + B through the drafter's blocks, each row attending to
// every context position and every block row; logits for rows 1 .. n_out (n_out <= B). Every block row goes
// through the blocks whatever n_out (each row reads all of them), but the LM head, the pass's largest
// matmul on small models (B rows x the vocabulary), runs only for the drafts wanted.
void PackagedBlockDrafter::Impl::block_pass(int32_t anchor, int64_t n, int64_t n_out) {
  const BlockDrafterModel& D = *drafter;
  const HParams& h = D.config().blocks;
  const int64_t B = D.config().block_size, rows = B + 1;
  const int64_t d = h.n_embd, qd = h.q_dim(), hd = h.head_dim;
  const int64_t pos0 = n - 1;
  ThreadPool& P = *pool;
  const MatmulScratch ms = scratch();
  weight_row_to_f32(x.data(), target->weights().token_embd, anchor);
  for (int64_t r = 1; r < rows; ++r) std::memcpy(x.data() + r * d, D.mask_embd().f32(), sizeof(float) * d);
  angles(pos0, rows);
  const int64_t half = hd / 2;
  const kernels::AttentionShape as{/*m=*/1,        pos0 + B, h.n_heads, h.n_kv_heads,
                                   hd,              1.0f / std::sqrt(static_cast<float>(hd)),
                                   /*pos_stride=*/hd, head_stride()};
  for (int64_t l = 0; l < h.n_layers; ++l) {
    const LayerWeights& L = D.layers()[static_cast<size_t>(l)];
    kernels::rmsnorm(P, xb.data(), x.data(), L.attn_norm.f32(), rows, d, h.norm_eps);
    matmul_shared(P, {{q.data(), &L.wq}, {k.data(), &L.wk}, {v.data(), &L.wv}}, xb.data(), rows, ms);
    kernels::rope(P, q.data(), rows, h.n_heads, hd, rope.data(), rope.data() + z.rows * half, rope_style());
    store_kv(l, pos0, rows);
    // Non-causal in the block: every row is a single query at the block's last position, so it sees the
    // whole cache 0 .. n - 1 + B (context features, then all block rows).
    for (int64_t r = 0; r < rows; ++r) {
      kernels::attention(P, xb2.data() + r * qd, q.data() + r * qd, layer_k(l), layer_v(l), as);
    }
    matmul(P, xb.data(), xb2.data(), rows, L.wo, ms);
    for (int64_t i = 0; i < rows * d; ++i) x[static_cast<size_t>(i)] += xb[static_cast<size_t>(i)];
    kernels::rmsnorm(P, xb.data(), x.data(), L.ffn_norm.f32(), rows, d, h.norm_eps);
    matmul_shared(P, {{hb.data(), &L.w_gate}, {hb2.data(), &L.w_up}}, xb.data(), rows, ms);
    kernels::swiglu(P, hb.data(), hb2.data(), rows, h.n_ff);
    matmul(P, xb.data(), hb.data(), rows, L.w_down, ms);
    for (int64_t i = 0; i < rows * d; ++i) x[static_cast<size_t>(i)] += xb[static_cast<size_t>(i)];
  }
  kernels::rmsnorm(P, xb.data(), x.data() + d, D.output_norm().f32(), n_out, d, h.norm_eps);
  matmul(P, logits.data(), xb.data(), n_out, target->weights().output, ms);
}

PackagedBlockDrafter::PackagedBlockDrafter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PackagedBlockDrafter::~PackagedBlockDrafter() = default;

Expected<std::unique_ptr<PackagedBlockDrafter>> PackagedBlockDrafter::create(std::shared_ptr<const Model> target,
                                                                             std::shared_ptr<const BlockDrafterModel> drafter,
                                                                             int64_t n_ctx, ThreadPool* pool) {
  if (target == nullptr || drafter == nullptr) return invalid_argument("[drafter] target or drafter is null");
  POCKET_RETURN_IF_ERROR(drafter->config().check_target(*target));
  if (n_ctx < 1 || n_ctx > (int64_t{1} << 24)) {
    return invalid_argument("[drafter] a context of " + std::to_string(n_ctx) + " positions is out of range");
  }
  auto impl = std::make_unique<Impl>();
  if (pool == nullptr) {
    impl->own_pool = std::make_unique<ThreadPool>(1);
    pool = impl->own_pool.get();
  }
  impl->pool = pool;
  impl->n_ctx = n_ctx;
  impl->z = drafter_sizes(drafter->config(), n_ctx, pool->n_threads());
  const DrafterSizes& z = impl->z;
  auto sz = [](int64_t v) { return static_cast<size_t>(v); };
  // Zero-filled, so every page is resident from the start (the memory plan is what the process holds).
  impl->k_cache.assign(sz(z.kv), 0);
  impl->v_cache.assign(sz(z.kv), 0);
  impl->hcat.assign(sz(z.hcat), 0.0f);
  impl->x.assign(sz(z.x), 0.0f);
  impl->xb.assign(sz(z.xb), 0.0f);
  impl->xb2.assign(sz(z.xb2), 0.0f);
  impl->q.assign(sz(z.q), 0.0f);
  impl->k.assign(sz(z.k), 0.0f);
  impl->v.assign(sz(z.v), 0.0f);
  impl->hb.assign(sz(z.hb), 0.0f);
  impl->hb2.assign(sz(z.hb2), 0.0f);
  impl->rope.assign(sz(z.rope), 0.0f);
  impl->row_buf.assign(sz(z.row_buf), 0.0f);
  impl->tiles.assign(sz(z.tiles), 0.0f);
  impl->logits.assign(sz(z.logits), 0.0f);
  impl->xq.resize(sz(z.act_blocks));
  impl->target = std::move(target);
  impl->drafter = std::move(drafter);
  return std::unique_ptr<PackagedBlockDrafter>(new PackagedBlockDrafter(std::move(impl)));
}

Expected<int32_t> PackagedBlockDrafter::propose(std::span<const int32_t> context, std::span<int32_t> out) {
  Impl& I = *impl_;
  const BlockDrafterConfig& c = I.drafter->config();
  const int64_t n = static_cast<int64_t>(context.size());
  // Only with the features of every position before the anchor (a gap or a stale cache: no draft).
  if (n < 1 || I.n_observed != n - 1 || out.empty()) return 0;
  if (n - 1 + c.block_size >= I.z.cap) return 0;  // past the planned context (the session stops first)
  const int32_t anchor = context.back();
  if (anchor < 0 || anchor >= c.blocks.n_vocab) {
    return invalid_argument("[drafter] anchor token " + std::to_string(anchor) + " is outside the vocabulary");
  }
  const int64_t V = c.blocks.n_vocab;
  const int32_t nd = static_cast<int32_t>(std::min<int64_t>(static_cast<int64_t>(out.size()), c.block_size));
  I.block_pass(anchor, n, nd);
  I.n_logit_rows = nd;
  for (int32_t r = 0; r < nd; ++r) out[static_cast<size_t>(r)] = argmax_lowest(I.logits.data() + r * V, V);
  return nd;
}

std::span<const int32_t> PackagedBlockDrafter::hidden_layers() const { return impl_->drafter->config().target_layers; }

Status PackagedBlockDrafter::observe_hidden(const TargetHiddenStates& s) {
  Impl& I = *impl_;
  const BlockDrafterConfig& c = I.drafter->config();
  if (s.n_rows <= 0) return Status::ok();
  if (s.n_embd != c.blocks.n_embd || static_cast<int64_t>(s.layers.size()) != c.n_taps() ||
      !std::equal(s.layers.begin(), s.layers.end(), c.target_layers.begin())) {
    return invalid_argument("[drafter] hidden states of other layers or width than the drafter reads (" +
                            std::to_string(s.layers.size()) + " layers of width " + std::to_string(s.n_embd) + ")");
  }
  if (s.pos0 < 0 || s.pos0 + s.n_rows > I.n_ctx) {
    return invalid_argument("[drafter] hidden-state rows at positions " + std::to_string(s.pos0) + ".." +
                            std::to_string(s.pos0 + s.n_rows - 1) + " are outside the drafter's context of " +
                            std::to_string(I.n_ctx));
  }
  if (s.pos0 > I.n_observed) return Status::ok();  // a gap: n_observed stays short, so propose() drafts nothing
  for (int64_t r0 = 0; r0 < s.n_rows; r0 += kObserveRows) {
    I.features(s, r0, std::min(kObserveRows, s.n_rows - r0));
  }
  I.n_observed = s.pos0 + s.n_rows;
  return Status::ok();
}

void PackagedBlockDrafter::reset() {
  impl_->n_observed = 0;
  impl_->n_logit_rows = 0;
}

std::span<const float> PackagedBlockDrafter::last_logits() const {
  return std::span<const float>(impl_->logits).first(
      static_cast<size_t>(impl_->n_logit_rows * impl_->drafter->config().blocks.n_vocab));
}

int64_t PackagedBlockDrafter::n_observed() const { return impl_->n_observed; }

const BlockDrafterModel& PackagedBlockDrafter::model() const { return *impl_->drafter; }

Expected<std::unique_ptr<BlockDrafter>> load_block_drafter(const std::string& path, std::shared_ptr<const Model> target,
                                                           int64_t n_ctx, ThreadPool* pool) {
  POCKET_ASSIGN_OR_RETURN(auto model, BlockDrafterModel::load(path));
  POCKET_ASSIGN_OR_RETURN(auto d, PackagedBlockDrafter::create(std::move(target), std::move(model), n_ctx, pool));
  return std::unique_ptr<BlockDrafter>(std::move(d));
}

}  // namespace pocket
