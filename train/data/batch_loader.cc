// BatchLoader: document split, per-epoch shuffle by seed, stream and example packing (see batch_loader.h).
#include "data/batch_loader.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

namespace pocket::train {

namespace {

uint64_t mix64(uint64_t x) {  // splitmix64 finaliser: a stable hash, independent of the standard library
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

int64_t Batch::n_loss_tokens() const {
  int64_t n = 0;
  for (uint8_t m : mask) n += m;
  return n;
}

bool is_heldout_doc(uint64_t shard, uint64_t index, double fraction) {
  if (fraction <= 0.0) return false;
  const uint64_t h = mix64(mix64(shard) ^ index) % 1000000;
  return static_cast<double>(h) < fraction * 1e6;
}

Expected<std::unique_ptr<BatchLoader>> BatchLoader::create(const std::vector<std::string>& paths,
                                                           const LoaderOptions& opts) {
  if (paths.empty()) return invalid_argument("[loader] no shards given");
  if (opts.seq_len < 1) return invalid_argument("[loader] seq_len must be >= 1");
  std::unique_ptr<BatchLoader> l(new BatchLoader());
  l->opts_ = opts;
  if (opts.split == Split::kHeldOut) l->opts_.shuffle = false;
  uint64_t total_docs = 0;
  for (const auto& p : paths) {
    POCKET_ASSIGN_OR_RETURN(TokenShard s, TokenShard::open(p));
    if (l->n_vocab_ != 0 && s.n_vocab() != l->n_vocab_) {
      return invalid_argument("[loader] shard " + p + " has n_vocab " + std::to_string(s.n_vocab()) + ", the first had " +
                              std::to_string(l->n_vocab_));
    }
    l->n_vocab_ = s.n_vocab();
    total_docs += s.n_docs();
    l->shards_.push_back(std::move(s));
  }
  // Split by hash; make sure both sides are non-empty when there are at least two documents.
  std::vector<DocRef> train, held;
  for (uint32_t si = 0; si < l->shards_.size(); ++si) {
    for (uint64_t i = 0; i < l->shards_[si].n_docs(); ++i) {
      (is_heldout_doc(si, i, opts.heldout_fraction) ? held : train).push_back({si, i});
    }
  }
  if (opts.heldout_fraction > 0 && held.empty() && train.size() >= 2) {
    held.push_back(train.back());
    train.pop_back();
  }
  if (held.size() == total_docs && total_docs >= 2) {
    train.push_back(held.front());
    held.erase(held.begin());
  }
  l->docs_ = opts.split == Split::kTrain ? std::move(train) : std::move(held);
  if (l->docs_.size() > UINT32_MAX) return invalid_argument("[loader] more than 2^32 documents in one split");
  for (const auto& d : l->docs_) l->n_tokens_ += l->shards_[d.shard].doc(d.index).size();
  l->plan_epoch(0);
  if (l->rows_per_epoch_ == 0) {
    return invalid_argument("[loader] the " + std::string(opts.split == Split::kTrain ? "train" : "held-out") +
                            " split has " + std::to_string(l->n_tokens_) + " tokens in " +
                            std::to_string(l->docs_.size()) + " documents: not enough for one row of " +
                            std::to_string(opts.seq_len) + " tokens");
  }
  return l;
}

void BatchLoader::plan_epoch(uint64_t epoch) {
  if (planned_epoch_ == epoch) return;
  planned_epoch_ = epoch;
  order_.resize(docs_.size());
  std::iota(order_.begin(), order_.end(), 0u);
  if (opts_.shuffle) {
    // Fisher-Yates with our own generator so the order is the same with every standard library.
    std::mt19937_64 rng(mix64(opts_.seed) ^ mix64(epoch + 0x51ull));
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng() % i]);
  }
  const auto T = static_cast<uint64_t>(opts_.seq_len);
  if (opts_.packing == Packing::kStream) {
    stream_start_.assign(order_.size() + 1, 0);
    for (size_t i = 0; i < order_.size(); ++i) {
      const DocRef& d = docs_[order_[i]];
      stream_start_[i + 1] = stream_start_[i] + shards_[d.shard].doc(d.index).size();
    }
    const uint64_t total = stream_start_.back();
    rows_per_epoch_ = total > T ? (total - 1) / T : 0;
    return;
  }
  // Examples: greedy first-fit in order; each example needs len tokens (len - 1 targets), at most T + 1.
  rows_.clear();
  uint64_t used = T + 1;  // forces a new row for the first example
  for (uint32_t i = 0; i < order_.size(); ++i) {
    const DocRef& d = docs_[order_[i]];
    const uint64_t len = std::min<uint64_t>(shards_[d.shard].doc(d.index).size(), T + 1);
    if (len < 2) continue;
    if (used + len > T + 1) {
      rows_.emplace_back();
      used = 0;
    }
    rows_.back().push_back({i, static_cast<uint32_t>(used)});
    used += len;
  }
  rows_per_epoch_ = rows_.size();
}

void BatchLoader::fill_row(uint64_t row, int32_t* in, int32_t* tgt, uint8_t* mask, int32_t* pos,
                           int32_t* seg) const {
  const auto T = static_cast<uint64_t>(opts_.seq_len);
  if (opts_.packing == Packing::kStream) {
    // Row tokens are stream[row*T .. row*T + T]; inputs are the first T, targets the last T.
    const uint64_t begin = row * T;
    size_t di = std::upper_bound(stream_start_.begin(), stream_start_.end(), begin) - stream_start_.begin() - 1;
    uint64_t pos = begin;
    for (uint64_t j = 0; j <= T; ++j, ++pos) {
      while (pos >= stream_start_[di + 1]) ++di;
      const DocRef& d = docs_[order_[di]];
      const uint64_t k = pos - stream_start_[di];
      const int32_t tok = shards_[d.shard].doc(d.index)[k];
      const auto m = shards_[d.shard].doc_mask(d.index);
      if (j < T) in[j] = tok;
      if (j > 0) {
        tgt[j - 1] = tok;
        mask[j - 1] = m.empty() ? 1 : m[k];
      }
    }
    return;
  }
  std::fill(in, in + T, 0);
  std::fill(tgt, tgt + T, 0);
  std::fill(mask, mask + T, 0);
  // Runs in column order: padding before an example (the column after each example is left empty), the
  // example, and the padding after the last one; each run is a new segment with positions from 0.
  int32_t n_runs = 0;
  uint64_t col = 0;
  auto run = [&](uint64_t begin, uint64_t end) {
    for (uint64_t c = begin; c < end; ++c) {
      seg[c] = n_runs;
      pos[c] = static_cast<int32_t>(c - begin);
    }
    n_runs += 1;
  };
  for (const Placement& p : rows_[row]) {  // placements are in column order
    const DocRef& d = docs_[order_[p.doc]];
    const auto toks = shards_[d.shard].doc(d.index);
    const auto m = shards_[d.shard].doc_mask(d.index);
    const uint64_t len = std::min<uint64_t>(toks.size(), T + 1);
    for (uint64_t k = 0; k + 1 < len; ++k) {
      in[p.offset + k] = toks[k];
      tgt[p.offset + k] = toks[k + 1];
      mask[p.offset + k] = m.empty() ? 1 : m[k + 1];
    }
    if (p.offset > col) run(col, p.offset);
    run(p.offset, p.offset + len - 1);
    col = p.offset + len - 1;
  }
  if (col < T) run(col, T);
}

Batch BatchLoader::next(int64_t n_rows, int64_t take_begin, int64_t take_n) {
  Batch b;
  b.rows = take_n;
  b.cols = opts_.seq_len;
  const size_t n = static_cast<size_t>(take_n * b.cols);
  b.inputs.resize(n);
  b.targets.resize(n);
  b.mask.resize(n);
  const bool examples = opts_.packing == Packing::kExamples;
  if (examples) {
    b.positions.resize(n);
    b.segments.resize(n);
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    plan_epoch(state_.epoch);
    if (state_.next_row >= rows_per_epoch_) {  // rows per epoch can differ between epochs when packing examples
      state_.epoch += 1;
      state_.next_row = 0;
      plan_epoch(state_.epoch);
    }
    if (r >= take_begin && r < take_begin + take_n) {
      const size_t at = static_cast<size_t>((r - take_begin) * b.cols);
      fill_row(state_.next_row, b.inputs.data() + at, b.targets.data() + at, b.mask.data() + at,
               examples ? b.positions.data() + at : nullptr, examples ? b.segments.data() + at : nullptr);
    }
    state_.next_row += 1;
  }
  return b;
}

void BatchLoader::set_state(const LoaderState& s) {
  state_ = s;
  plan_epoch(s.epoch);
}

}  // namespace pocket::train
