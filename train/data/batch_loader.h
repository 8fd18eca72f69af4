// BatchLoader: turns token shards into [rows, seq_len] training rows. Documents are split into a train and a
// held-out set by a hash of their index; the train set is shuffled per epoch by (seed, epoch) and packed.
// Its whole position is LoaderState (epoch, next row), so a resumed run sees exactly the rows it would have.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/token_shard.h"

namespace pocket::train {

// Row-major [rows, cols] inputs and targets (targets[i][j] = the token after inputs[i][j]) and the loss mask
// over targets (1 = counts in the loss; 0 = padding or a prompt token in SFT).
//
// Packing::kExamples rows also carry segments and positions, [rows, cols] each: a row is cut into runs, each
// example and each stretch of padding one run; segments[i][j] numbers the runs of row i from 0, left to
// right, and positions[i][j] is column j's offset within its run (0 at every example start). The model lets
// a token attend only to earlier tokens of its own segment, so an example sees exactly what it would alone,
// and padding never shares a segment with an example. kStream rows leave both empty: each row is one
// causal sequence at positions 0..cols-1.
struct Batch {
  int64_t rows = 0, cols = 0;
  std::vector<int32_t> inputs, targets;
  std::vector<uint8_t> mask;
  std::vector<int32_t> positions, segments;  // kExamples only, else empty
  int64_t n_loss_tokens() const;
  bool has_segments() const { return !segments.empty(); }
};

enum class Split { kTrain, kHeldOut };

enum class Packing {
  kStream,    // pretraining: documents concatenated; row k = stream[k*T, k*T + T + 1)
  kExamples,  // SFT: whole examples placed greedily into rows, padded; an example never spans two rows;
              // rows carry segments and per-example positions (see Batch)
};

struct LoaderOptions {
  int64_t seq_len = 128;
  uint64_t seed = 1;
  double heldout_fraction = 0.05;  // share of documents held out (at least one when there are >= 2)
  Split split = Split::kTrain;
  Packing packing = Packing::kStream;
  bool shuffle = true;  // the held-out split is never shuffled
};

struct LoaderState {
  uint64_t epoch = 0;
  uint64_t next_row = 0;  // within the epoch
};

class BatchLoader {
 public:
  // Opens every shard (validated); all must share n_vocab, and with kExamples should carry masks.
  static Expected<std::unique_ptr<BatchLoader>> create(const std::vector<std::string>& shard_paths,
                                                       const LoaderOptions& opts);

  // Takes the next `n_rows` rows of the global stream (wrapping to the next epoch as needed) and returns
  // rows [take_begin, take_begin + take_n) of them: data-parallel ranks each take their slice of one
  // global micro-batch and stay in step.
  Batch next(int64_t n_rows, int64_t take_begin, int64_t take_n);
  Batch next(int64_t n_rows) { return next(n_rows, 0, n_rows); }

  // Rows in one epoch (>= 1 when the split has enough tokens for a row, else 0).
  uint64_t rows_per_epoch() const { return rows_per_epoch_; }
  uint64_t n_docs() const { return docs_.size(); }
  uint64_t n_tokens() const { return n_tokens_; }
  uint32_t n_vocab() const { return n_vocab_; }
  const LoaderState& state() const { return state_; }
  void set_state(const LoaderState& s);

 private:
  struct DocRef {
    uint32_t shard;
    uint64_t index;
  };
  struct Placement {  // kExamples: one example's place in a row
    uint32_t doc;       // index into order_
    uint32_t offset;    // column where it starts
  };
  BatchLoader() = default;
  void plan_epoch(uint64_t epoch);
  // pos and seg: kExamples only (nullptr for kStream).
  void fill_row(uint64_t row, int32_t* in, int32_t* tgt, uint8_t* mask, int32_t* pos, int32_t* seg) const;

  LoaderOptions opts_;
  std::vector<TokenShard> shards_;
  std::vector<DocRef> docs_;   // this split's documents, in shard order
  uint64_t n_tokens_ = 0;
  uint32_t n_vocab_ = 0;
  uint64_t rows_per_epoch_ = 0;
  LoaderState state_;
  uint64_t planned_epoch_ = UINT64_MAX;
  std::vector<uint32_t> order_;          // the epoch's document order
  std::vector<uint64_t> stream_start_;   // kStream: prefix sums of document lengths in order_
  std::vector<std::vector<Placement>> rows_;  // kExamples: the packing plan of the epoch
};

// True when document `index` belongs to the held-out split (a hash, stable across runs and machines).
bool is_heldout_doc(uint64_t shard, uint64_t index, double fraction);

}  // namespace pocket::train
