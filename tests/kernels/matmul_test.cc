// Every table's matmuls against the scalar reference (and the reference against a double-precision dot of
// the dequantised operands), on random shapes with ragged tails: n not a multiple of 32 or 64, rows not a
// multiple of any register tile, m from 1 to beyond a tile.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "quant/quantize.h"

namespace pocket::kernels {
namespace {

std::vector<float> random_vec(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = dist(rng);
  return x;
}

struct Problem {
  DType t;
  int64_t rows, n, m;
  std::vector<uint8_t> w;
  std::vector<float> x;
  std::vector<ActBlock> xq;
  std::vector<double> exact;   // [m, rows] sum_k Wdeq[r, k] * Xdeq[i, k] in double
  std::vector<double> abs_sum;  // [m, rows] sum_k |Wdeq[r, k] * Xdeq[i, k]| (Q4G32A: (|d u| + |m|) |a|)
};

Problem make(DType t, int64_t rows, int64_t n, int64_t m, uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p{t, rows, n, m, {}, random_vec(m * n, rng), {}, {}, {}};
  const auto wf = random_vec(rows * n, rng);
  const uint64_t shape[2] = {static_cast<uint64_t>(rows), static_cast<uint64_t>(n)};
  p.w.resize(*tensor_bytes(t, shape));
  EXPECT_TRUE(quant::quantize_tensor(t, wf.data(), rows, n, p.w).is_ok());
  const bool quantised = quant::is_quantised(t);
  const int64_t nb = quant::act_blocks(n);
  p.xq.resize(static_cast<size_t>(m * nb));
  for (int64_t i = 0; i < m; ++i) quant::quantize_act_row_ref(p.xq.data() + i * nb, p.x.data() + i * n, n);
  std::vector<float> wd(static_cast<size_t>(n)), wa(static_cast<size_t>(n)), xd(static_cast<size_t>(n));
  p.exact.assign(static_cast<size_t>(m * rows), 0.0);
  p.abs_sum.assign(static_cast<size_t>(m * rows), 0.0);
  const uint64_t rb = *row_bytes(t, static_cast<uint64_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(quant::dequantize_row(t, p.w, rows, n, r, wd.data()).is_ok());
    for (int64_t k = 0; k < n; ++k) wa[k] = std::fabs(wd[k]);
    if (t == DType::kQ4G32R8) {
      // The R8 kernels form each block's sum as da * sum(u q) - 8 s (u = q_w + 8) before scaling by dw, so
      // their rounding is relative to |dw| (u + 8) |a|, which |w| + 16 |dw| bounds.
      std::vector<quant::BlockQ4G32> blocks(static_cast<size_t>((n + 31) / 32));
      quant::r8_row(blocks.data(), p.w.data(), n, r);
      for (int64_t k = 0; k < n; ++k) wa[k] = std::fabs(wd[k]) + 16.0f * std::fabs(f16_to_f32(blocks[k / 32].d));
    }
    if (t == DType::kQ4G32A) {
      const auto* b = reinterpret_cast<const quant::BlockQ4G32A*>(p.w.data() + r * rb);
      for (int64_t k = 0; k < n; ++k) {
        const float mn = f16_to_f32(b[k / 32].m);
        wa[k] = std::fabs(wd[k] - mn) + std::fabs(mn);
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t k = 0; k < n; ++k) {
        const ActBlock& a = p.xq[i * nb + k / 32];
        xd[k] = quantised ? a.d * a.q[k % 32] : p.x[i * n + k];
      }
      double s = 0.0, sa = 0.0;
      for (int64_t k = 0; k < n; ++k) {
        s += static_cast<double>(wd[k]) * xd[k];
        sa += std::fabs(static_cast<double>(wa[k]) * xd[k]);
      }
      p.exact[i * rows + r] = s;
      p.abs_sum[i * rows + r] = sa;
    }
  }
  return p;
}

std::vector<float> run_table(const KernelTable& k, const Problem& p, int64_t r0, int64_t r1) {
  std::vector<float> y(static_cast<size_t>(p.m * p.rows), NAN);
  switch (p.t) {
    case DType::kF32: k.matmul_f32(y.data(), p.rows, p.w.data(), p.x.data(), p.m, p.n, r0, r1); break;
    case DType::kF16: k.matmul_f16(y.data(), p.rows, p.w.data(), p.x.data(), p.m, p.n, r0, r1); break;
    case DType::kQ8G32: k.matmul_q8g32(y.data(), p.rows, p.w.data(), p.xq.data(), p.m, p.n, r0, r1); break;
    case DType::kQ4G32: k.matmul_q4g32(y.data(), p.rows, p.w.data(), p.xq.data(), p.m, p.n, r0, r1); break;
    case DType::kQ4G64: k.matmul_q4g64(y.data(), p.rows, p.w.data(), p.xq.data(), p.m, p.n, r0, r1); break;
    case DType::kQ4G32A: k.matmul_q4g32a(y.data(), p.rows, p.w.data(), p.xq.data(), p.m, p.n, r0, r1); break;
    case DType::kQ4G32R8: k.matmul_q4g32r8(y.data(), p.rows, p.w.data(), p.xq.data(), p.m, p.n, r0, r1); break;
    default: ADD_FAILURE();
  }
  return y;
}

// Tolerance. Integer block dot products are exact in every implementation, so implementations differ only
// in the order and grouping of float operations: per block a product of two scales and one multiply-add,
// then a sum over nb blocks (SIMD: 8 lane partial sums, then a horizontal sum; F32/F16: n / 8 lane terms).
// Each rounding is at most 2^-24 relative of a partial sum bounded by sum |terms| <= abs_sum, and a sum of
// N terms has at most N + O(1) roundings, so |difference| <= (N + 8) * 2^-23 * abs_sum covers both sides.
double tolerance(const Problem& p, int64_t idx) {
  const double terms = quant::is_quantised(p.t) ? static_cast<double>(quant::act_blocks(p.n)) : p.n / 8.0 + 8.0;
  return (terms + 8.0) * 0x1p-23 * p.abs_sum[idx] + 1e-30;
}

const DType kTypes[] = {DType::kQ8G32, DType::kQ4G32, DType::kQ4G64, DType::kQ4G32A, DType::kQ4G32R8,
                        DType::kF32,   DType::kF16};

struct Shape {
  int64_t rows, n, m;
};
const Shape kShapes[] = {{1, 32, 1},   {5, 172, 1},   {37, 64, 1},   {67, 172, 3},  {9, 1000, 5},
                         {16, 96, 8},   {13, 33, 13},  {40, 256, 2},  {7, 2816, 4},  {33, 1024, 17}};
// Q4G32R8 tensors hold whole 8-row groups: the same ragged n and m, rows multiples of 8 (1 to 9 groups).
const Shape kShapesR8[] = {{8, 32, 1},   {16, 172, 1},  {40, 64, 1},  {72, 172, 3},  {8, 1000, 5},
                           {16, 96, 8},   {8, 33, 13},   {40, 256, 2}, {8, 2816, 4},  {32, 1024, 17},
                           {24, 2816, 9}, {64, 160, 4}};
std::vector<Shape> shapes_for(DType t) {
  if (t == DType::kQ4G32R8) return {std::begin(kShapesR8), std::end(kShapesR8)};
  return {std::begin(kShapes), std::end(kShapes)};
}

TEST(Matmul, RefMatchesDoublePrecisionDot) {
  uint32_t seed = 1;
  for (DType t : kTypes) {
    for (const Shape& s : shapes_for(t)) {
      const Problem p = make(t, s.rows, s.n, s.m, seed++);
      const auto y = run_table(available(0), p, 0, p.rows);
      for (int64_t idx = 0; idx < p.m * p.rows; ++idx) {
        // the reference rounds each block's scale product and term (a few roundings), plus nb additions
        ASSERT_NEAR(y[idx], p.exact[idx], tolerance(p, idx) + 4 * 0x1p-23 * p.abs_sum[idx])
            << dtype_name(t) << " rows " << s.rows << " n " << s.n << " m " << s.m << " idx " << idx;
      }
    }
  }
}

TEST(Matmul, EveryTableMatchesRef) {
  uint32_t seed = 100;
  for (int ti = 1; ti < n_available(); ++ti) {
    const KernelTable& k = available(ti);
    for (DType t : kTypes) {
      for (const Shape& s : shapes_for(t)) {
        const Problem p = make(t, s.rows, s.n, s.m, seed++);
        const auto want = run_table(available(0), p, 0, p.rows);
        const auto got = run_table(k, p, 0, p.rows);
        for (int64_t idx = 0; idx < p.m * p.rows; ++idx) {
          ASSERT_NEAR(got[idx], want[idx], tolerance(p, idx))
              << k.name << " " << dtype_name(t) << " rows " << s.rows << " n " << s.n << " m " << s.m
              << " idx " << idx;
        }
      }
    }
  }
}

TEST(Matmul, RowRangeWritesOnlyItsRows) {
  for (int ti = 0; ti < n_available(); ++ti) {
    for (DType t : kTypes) {
      const bool r8 = t == DType::kQ4G32R8;  // ranges of whole 8-row groups
      const int64_t rows = r8 ? 32 : 23, lo = r8 ? 8 : 5, hi = r8 ? 24 : 18;
      const Problem p = make(t, rows, 172, 3, 7);
      const auto y = run_table(available(ti), p, lo, hi);
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t r = 0; r < p.rows; ++r) {
          EXPECT_EQ(std::isnan(y[i * p.rows + r]), r < lo || r >= hi) << available(ti).name << " " << r;
        }
      }
    }
  }
}

// The scratch the pool wrappers need for m rows of width n (residual: some matrix is Q8G32).
struct WrapperScratch {
  std::vector<ActBlock> xq;
  std::vector<float> tiles;
  Scratch view() { return Scratch{xq.data(), tiles.data()}; }
};
WrapperScratch wrapper_scratch(ThreadPool& pool, bool residual, int64_t m, int64_t n) {
  WrapperScratch s;
  s.xq.resize(static_cast<size_t>(act_scratch_blocks(residual, m, n)));
  if (residual) s.tiles.resize(static_cast<size_t>(pool.n_threads() * residual_tile_floats(m)));
  return s;
}

// What the wrappers compute for a Q8G32 problem: the table's kernel on the 2m rows [int8 X; its residual],
// the two halves summed (an independent restatement of matmul_shared's residual path).
std::vector<float> residual_reference(const Problem& p) {
  Problem q = p;
  const int64_t nb = quant::act_blocks(p.n);
  q.m = 2 * p.m;
  q.xq.resize(static_cast<size_t>(q.m * nb));
  quantize_act_residual_rows(q.xq.data(), q.xq.data() + p.m * nb, p.x.data(), p.n, 0, p.m);
  const auto both = run_table(active(), q, 0, p.rows);
  std::vector<float> y(static_cast<size_t>(p.m * p.rows));
  for (size_t i = 0; i < y.size(); ++i) y[i] = both[i] + both[i + y.size()];
  return y;
}

TEST(Matmul, PoolWrapperMatchesSingleThread) {
  ThreadPool pool(3);
  for (DType t : kTypes) {
    for (int64_t m : {1, 6, 70}) {  // 70: 2m rows over several activation tiles
      const Problem p = make(t, t == DType::kQ4G32R8 ? 128 : 131, 172, m, 11);
      std::vector<float> y(static_cast<size_t>(p.m * p.rows));
      WrapperScratch scratch = wrapper_scratch(pool, residual_activations(t), p.m, p.n);
      matmul(pool, y.data(), MatrixView{p.w.data(), t, p.rows, p.n}, p.x.data(), scratch.view(), p.m);
      const auto want = residual_activations(t) ? residual_reference(p) : run_table(active(), p, 0, p.rows);
      for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], want[i]) << dtype_name(t) << " m " << m << " " << i;
    }
  }
}

// The residual split: hi is exactly quantize_act, lo exactly quantize_act of each group's remainder, and
// hi + lo reconstructs x to half a step of lo (plus the float rounding of forming the remainder).
TEST(ActQuant, ResidualRowsReconstructToSixteenBits) {
  std::mt19937 rng(5);
  for (int64_t n : {1, 31, 32, 172, 1024}) {
    const int64_t m = 3, nb = quant::act_blocks(n);
    auto x = random_vec(m * n, rng);
    std::vector<ActBlock> hi(static_cast<size_t>(m * nb)), lo(hi.size()), want(static_cast<size_t>(nb));
    quantize_act_residual_rows(hi.data(), lo.data(), x.data(), n, 0, m);
    for (int64_t i = 0; i < m; ++i) {
      quant::quantize_act_row_ref(want.data(), x.data() + i * n, n);
      for (int64_t b = 0; b < nb; ++b) {
        const ActBlock& h = hi[i * nb + b];
        const ActBlock& l = lo[i * nb + b];
        ASSERT_EQ(h.d, want[b].d);
        for (int k = 0; k < 32; ++k) ASSERT_EQ(h.q[k], want[b].q[k]);
        EXPECT_LE(l.d, h.d / 254.0f * 1.0001f) << "the remainder is at most half a step of hi";
        for (int64_t k = b * 32; k < std::min(n, b * 32 + 32); ++k) {
          const float xv = x[i * n + k];
          const double rec = static_cast<double>(h.d) * h.q[k % 32] + static_cast<double>(l.d) * l.q[k % 32];
          EXPECT_LE(std::fabs(rec - xv), 0.5 * l.d * 1.0001 + 0x1p-22 * (std::fabs(xv) + h.d)) << n << " " << k;
        }
        for (int64_t k = std::min<int64_t>(32, n - b * 32); k < 32; ++k) EXPECT_EQ(l.q[k], 0);
      }
    }
  }
}

// Q8G32 through the wrapper is within the residual's bound of the exact product of the dequantised weights
// and the float activations, and ~100x closer to it than int8 activations alone.
TEST(Matmul, Q8ResidualActivationsNearFloat) {
  ThreadPool pool(2);
  const Problem p = make(DType::kQ8G32, 67, 172, 5, 13);
  std::vector<float> y(static_cast<size_t>(p.m * p.rows));
  WrapperScratch scratch = wrapper_scratch(pool, true, p.m, p.n);
  matmul(pool, y.data(), MatrixView{p.w.data(), p.t, p.rows, p.n}, p.x.data(), scratch.view(), p.m);
  const auto int8_only = run_table(active(), p, 0, p.rows);
  const int64_t nb = quant::act_blocks(p.n);
  std::vector<ActBlock> hi(static_cast<size_t>(p.m * nb)), lo(hi.size());
  quantize_act_residual_rows(hi.data(), lo.data(), p.x.data(), p.n, 0, p.m);
  std::vector<float> wd(static_cast<size_t>(p.n));
  double err_res = 0, err_int8 = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    ASSERT_TRUE(quant::dequantize_row(p.t, p.w, p.rows, p.n, r, wd.data()).is_ok());
    for (int64_t i = 0; i < p.m; ++i) {
      double exact = 0, bound = 0, abs_sum = 0;
      for (int64_t k = 0; k < p.n; ++k) {
        const double xv = p.x[i * p.n + k], w = wd[k];
        exact += w * xv;
        abs_sum += std::fabs(w * xv);
        bound += std::fabs(w) * (0.5 * lo[i * nb + k / 32].d + 0x1p-22 * (std::fabs(xv) + hi[i * nb + k / 32].d));
      }
      const size_t idx = static_cast<size_t>(i * p.rows + r);
      bound += 2.0 * (nb + 8.0) * 0x1p-23 * abs_sum;  // the float sums of both halves (tolerance() above)
      EXPECT_LE(std::fabs(y[idx] - exact), bound) << "row " << r << " m " << i;
      err_res += std::fabs(y[idx] - exact);
      err_int8 += std::fabs(int8_only[idx] - exact);
    }
  }
  EXPECT_LT(err_res * 50, err_int8);
}

// matmul_shared over three matrices of width 172 sharing one X gives each matrix exactly what its own pool
// matmul gives (with its own scratch: a Q4 matrix alone has no residual rows).
void expect_shared_matches_separate(ThreadPool& pool, const DType (&types)[3], const int64_t (&rows)[3], int64_t m,
                                    uint32_t seed) {
  std::vector<Problem> ps;
  for (int j = 0; j < 3; ++j) ps.push_back(make(types[j], rows[j], 172, m, seed + j));
  for (int j = 1; j < 3; ++j) ps[j].x = ps[0].x;  // one input for all three
  std::vector<std::vector<float>> got(3), want(3);
  float* ys[3];
  MatrixView ws[3];
  bool residual = false;
  for (int j = 0; j < 3; ++j) {
    got[j].assign(static_cast<size_t>(m * rows[j]), NAN);
    want[j].assign(static_cast<size_t>(m * rows[j]), NAN);
    ys[j] = got[j].data();
    ws[j] = MatrixView{ps[j].w.data(), types[j], rows[j], 172};
    residual = residual || residual_activations(types[j]);
  }
  WrapperScratch scratch = wrapper_scratch(pool, residual, m, 172);
  matmul_shared(pool, ys, ws, 3, ps[0].x.data(), scratch.view(), m);
  for (int j = 0; j < 3; ++j) {
    WrapperScratch own = wrapper_scratch(pool, residual_activations(types[j]), m, 172);
    matmul(pool, want[j].data(), ws[j], ps[0].x.data(), own.view(), m);
    for (size_t i = 0; i < want[j].size(); ++i) {
      ASSERT_EQ(got[j][i], want[j][i]) << dtype_name(types[j]) << " m " << m << " matrix " << j << " " << i;
    }
  }
}

// matmul_shared (q/k/v, gate/up) gives each matrix exactly what its own pool matmul gives: the same kernels
// on the same quantised X, whatever rows a chunk spans (row counts not multiples of the grain included).
TEST(Matmul, SharedInputMatchesSeparateCalls) {
  ThreadPool pool(3);
  const DType quantised[] = {DType::kQ8G32, DType::kQ4G32, DType::kQ4G64, DType::kQ4G32A, DType::kQ4G32R8};
  for (DType t : quantised) {
    for (int64_t m : {1, 5}) {
      const bool r8 = t == DType::kQ4G32R8;
      const DType types[3] = {t, t, t};
      const int64_t rows[3] = {r8 ? 40 : 37, r8 ? 8 : 5, r8 ? 64 : 70};
      expect_shared_matches_separate(pool, types, rows, m, 20);
    }
  }
}

// Mixed kinds in one shared call (a Q8 matrix beside Q4 ones: `--head q8`-style policies put Q8 next to Q4
// only across calls today, but the wrapper allows it): the Q4 matrices read the int8 rows, the Q8 ones add
// the residual, each as in its own call.
TEST(Matmul, SharedInputMixedQ8AndQ4MatchesSeparateCalls) {
  ThreadPool pool(2);
  const DType types[3] = {DType::kQ8G32, DType::kQ4G32, DType::kQ8G32};
  const int64_t rows[3] = {37, 21, 80};
  expect_shared_matches_separate(pool, types, rows, 3, 40);
}

TEST(ActQuant, EveryTableBitIdenticalToRef) {
  std::mt19937 rng(3);
  for (int64_t n : {1, 31, 32, 33, 172, 1024, 2816}) {
    auto x = random_vec(n, rng);
    if (n > 4) x[3] = 0.0f, x[4] = -x[2];
    const int64_t nb = quant::act_blocks(n);
    std::vector<ActBlock> want(static_cast<size_t>(nb)), got(static_cast<size_t>(nb));
    quant::quantize_act_row_ref(want.data(), x.data(), n);
    for (int ti = 0; ti < n_available(); ++ti) {
      available(ti).quantize_act(got.data(), x.data(), n);
      for (int64_t b = 0; b < nb; ++b) {
        EXPECT_EQ(got[b].d, want[b].d) << available(ti).name << " n " << n << " b " << b;
        EXPECT_EQ(got[b].s, want[b].s) << available(ti).name << " n " << n << " b " << b;
        EXPECT_EQ(got[b].s8, want[b].s8) << available(ti).name << " n " << n << " b " << b;
        EXPECT_EQ(want[b].s8, -8.0f * want[b].s) << "n " << n << " b " << b;
        for (int i = 0; i < 32; ++i) ASSERT_EQ(got[b].q[i], want[b].q[i]) << available(ti).name << " " << i;
      }
    }
  }
  // An all-zero row quantises to d = 0 and q = 0 everywhere.
  std::vector<float> z(40, 0.0f);
  std::vector<ActBlock> a(2);
  for (int ti = 0; ti < n_available(); ++ti) {
    available(ti).quantize_act(a.data(), z.data(), 40);
    EXPECT_EQ(a[0].d, 0.0f);
    EXPECT_EQ(a[1].s, 0.0f);
  }
}

}  // namespace
}  // namespace pocket::kernels

namespace pocket::kernels {
namespace {

// A row's result does not depend on the rows computed with it: m rows at once equal each row alone, bit
// for bit (a decode step and a speculative verify pass must agree exactly for greedy output to be the same
// token for token). Checked for every table and type, over batch widths across the tile shapes.
TEST(Matmul, RowsBitwiseIndependentOfBatch) {
  for (int ti = 0; ti < n_available(); ++ti) {
    const KernelTable& k = available(ti);
    for (DType t : kTypes) {
      for (int64_t m : {2, 3, 5, 8, 9, 17}) {
        const Problem p = make(t, 40, 1000, m, 300 + static_cast<uint32_t>(m));
        const auto all = run_table(k, p, 0, p.rows);
        for (int64_t i = 0; i < m; ++i) {
          Problem one = p;
          const int64_t nb = quant::act_blocks(p.n);
          one.m = 1;
          one.x.assign(p.x.begin() + i * p.n, p.x.begin() + (i + 1) * p.n);
          one.xq.assign(p.xq.begin() + i * nb, p.xq.begin() + (i + 1) * nb);
          const auto alone = run_table(k, one, 0, p.rows);
          for (int64_t r = 0; r < p.rows; ++r) {
            ASSERT_EQ(std::bit_cast<uint32_t>(all[i * p.rows + r]), std::bit_cast<uint32_t>(alone[r]))
                << k.name << " " << dtype_name(t) << " m " << m << " row " << i << " out " << r;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace pocket::kernels
