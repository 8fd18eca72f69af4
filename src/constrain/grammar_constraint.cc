// GrammarConstraint: token masks by a preorder trie walk carrying the matcher state, the mask cache of
// CompiledGrammar, the token budget (n_left), and accept/can_stop/done over MatchState.
#include "constrain/grammar_constraint.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace pocket {
namespace {

// A budget larger than any completion: "no limit". Completion lengths are capped below it.
constexpr int32_t kNoLimit = 1 << 30;

uint64_t cache_key(int32_t cid, int32_t budget) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(cid)) << 32) | static_cast<uint32_t>(budget);
}

}  // namespace

// ---- CompiledGrammar ----

CompiledGrammar::CompiledGrammar(std::shared_ptr<GrammarEngine> engine, std::shared_ptr<const VocabIndex> vocab,
                                 size_t cache_bytes)
    : engine_(std::move(engine)),
      vocab_(std::move(vocab)),
      cache_bytes_(cache_bytes),
      words_((static_cast<size_t>(vocab_->n_vocab()) + 63) / 64) {}

Expected<std::shared_ptr<CompiledGrammar>> CompiledGrammar::create(Grammar grammar, std::shared_ptr<const VocabIndex> vocab,
                                                                   size_t cache_bytes) {
  if (vocab == nullptr) return invalid_argument("[grammar] no vocabulary index given");
  POCKET_ASSIGN_OR_RETURN(std::shared_ptr<GrammarEngine> engine, GrammarEngine::create(std::move(grammar)));
  return std::shared_ptr<CompiledGrammar>(new CompiledGrammar(std::move(engine), std::move(vocab), cache_bytes));
}

Expected<std::unique_ptr<TokenConstraint>> CompiledGrammar::start(std::string_view source) const {
  std::unique_ptr<CopySource> src;
  if (grammar().uses_copy()) {
    POCKET_ASSIGN_OR_RETURN(src, CopySource::build(source));
  }
  std::unique_ptr<TokenConstraint> c(new GrammarConstraint(shared_from_this(), std::move(src)));
  return c;
}

Expected<GrammarMatcher> CompiledGrammar::matcher(std::string_view source) const {
  return GrammarMatcher::create(engine_, source);
}

CompiledGrammar::CacheStats CompiledGrammar::cache_stats() const {
  std::lock_guard<std::mutex> lock(engine_->mutex());
  CacheStats s;
  s.hits = hits_;
  s.misses = misses_;
  s.entries = cache_.size();
  s.bytes = used_bytes_;
  s.engine_bytes = engine_->memory_bytes();
  return s;
}

const CompiledGrammar::Entry* CompiledGrammar::find(int32_t cid, int32_t budget) const {
  auto it = cache_.find(cache_key(cid, budget));
  if (it == cache_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return &it->second;
}

void CompiledGrammar::store(int32_t cid, int32_t budget, const uint64_t* bits, int32_t max_rest) const {
  const size_t bytes = words_ * sizeof(uint64_t) + 64;
  if (used_bytes_ + bytes > cache_bytes_) return;
  Entry e;
  e.bits.assign(bits, bits + words_);
  e.max_rest = max_rest;
  if (cache_.emplace(cache_key(cid, budget), std::move(e)).second) used_bytes_ += bytes;
}

// ---- GrammarConstraint ----

GrammarConstraint::GrammarConstraint(std::shared_ptr<const CompiledGrammar> grammar, std::unique_ptr<CopySource> source)
    : g_(std::move(grammar)), source_(std::move(source)) {
  state_.cids.assign(1, g_->engine_->start_config());
  // Reserve so that steady-state steps reuse memory (a handful of stacks per state is typical).
  for (MatchState* s : {&state_, &next_, &tmp_}) {
    s->cids.reserve(16);
    s->copies.reserve(16);
  }
  depth_.resize(static_cast<size_t>(g_->vocab_->max_depth()) + 1);
  plain_.assign(depth_.size(), -1);
  for (MatchState& s : depth_) {
    s.cids.reserve(8);
    s.copies.reserve(8);
  }
  bits_.assign(g_->words_, 0);
  scratch_.assign(g_->words_, 0);
}

int32_t GrammarConstraint::walk(const MatchState& start, int32_t budget, uint64_t* bits, bool* touched_copy) {
  GrammarEngine& engine = *g_->engine_;
  const VocabIndex& vocab = *g_->vocab_;
  const CopySource* src = source_.get();
  const uint8_t* labels = vocab.labels();
  const uint16_t* depths = vocab.depths();
  const int32_t* ends = vocab.subtree_ends();
  const int32_t* tok_begin = vocab.token_begins();
  const int32_t* ids = vocab.ids();
  const auto n = static_cast<int32_t>(vocab.n_nodes());
  int32_t max_rest = 0;
  if (!engine.grammar().uses_copy() && start.copies.empty() && start.cids.size() == 1) {
    // No COPY anywhere: one configuration per depth, advanced through the memoised transitions.
    int32_t* cid_at = plain_.data();
    cid_at[0] = start.cids[0];
    for (int32_t i = 0; i < n;) {
      const uint16_t d = depths[i];
      const int32_t next = engine.advance(cid_at[d - 1u], labels[i]);
      if (next < 0) {
        i = ends[i];
        continue;
      }
      cid_at[d] = next;
      if (tok_begin[i + 1] > tok_begin[i]) {
        const int32_t rest = engine.min_plain(next);
        if (rest <= budget) {
          max_rest = std::max(max_rest, rest);
          for (int32_t k = tok_begin[i]; k < tok_begin[i + 1]; ++k) {
            const auto id = static_cast<uint32_t>(ids[k]);
            bits[id >> 6] |= uint64_t{1} << (id & 63);
          }
        }
      }
      ++i;
    }
    *touched_copy = false;
    return max_rest;
  }
  bool touched = !start.copies.empty();
  for (int32_t cid : start.cids) touched |= engine.has_copy(cid);
  depth_[0].cids = start.cids;
  depth_[0].copies = start.copies;
  for (int32_t i = 0; i < n;) {
    const MatchState& from = depth_[depths[i] - 1u];
    MatchState& to = depth_[depths[i]];
    // Fast path: one configuration without COPY stacks, whose transitions are memoised.
    if (from.copies.empty() && from.cids.size() == 1 && !engine.has_copy(from.cids[0])) {
      const int32_t next = engine.advance(from.cids[0], labels[i]);
      if (next < 0) {
        i = ends[i];
        continue;
      }
      to.cids.resize(1);
      to.cids[0] = next;
      to.copies.clear();
    } else if (!advance_state(engine, src, from, labels[i], &to)) {
      i = ends[i];
      continue;
    }
    bool copy_here = !to.copies.empty();
    for (int32_t cid : to.cids) copy_here |= engine.has_copy(cid);
    touched |= copy_here;
    if (tok_begin[i + 1] > tok_begin[i]) {
      int32_t rest = 0;
      if (!copy_here && to.cids.size() == 1) {
        rest = engine.min_plain(to.cids[0]);
      } else {
        rest = state_min_rest(engine, src, to);
      }
      if (rest <= budget) {
        max_rest = std::max(max_rest, rest);
        for (int32_t k = tok_begin[i]; k < tok_begin[i + 1]; ++k) {
          const auto id = static_cast<uint32_t>(ids[k]);
          bits[id >> 6] |= uint64_t{1} << (id & 63);
        }
      }
    }
    ++i;
  }
  *touched_copy = touched;
  return max_rest;
}

void GrammarConstraint::or_config(int32_t cid, int32_t budget) {
  const CompiledGrammar& g = *g_;
  const size_t words = g.words_;
  auto or_into = [&](const uint64_t* src) {
    for (size_t w = 0; w < words; ++w) bits_[w] |= src[w];
  };
  // One walk from `cid` alone into scratch_; returns its max_rest.
  bool touched = false;
  auto walk_alone = [&](int32_t b) {
    std::fill(scratch_.begin(), scratch_.end(), 0);
    tmp_.cids.assign(1, cid);
    tmp_.copies.clear();
    return walk(tmp_, b, scratch_.data(), &touched);
  };
  if (static_cast<size_t>(cid) < g.uncacheable_.size() && g.uncacheable_[static_cast<size_t>(cid)]) {
    walk_alone(budget);
    or_into(scratch_.data());
    return;
  }
  // The unlimited mask first: its max_rest says whether the budget removes anything from it.
  int32_t full_max_rest = 0;
  if (const CompiledGrammar::Entry* full = g.find(cid, kNoLimit)) {
    if (budget >= full->max_rest) {
      or_into(full->bits.data());
      return;
    }
    full_max_rest = full->max_rest;
  } else {
    full_max_rest = walk_alone(kNoLimit);
    if (touched) {  // a COPY stack was met: the mask depends on this generation's source
      if (g.uncacheable_.size() <= static_cast<size_t>(cid)) g.uncacheable_.resize(static_cast<size_t>(cid) + 1, 0);
      g.uncacheable_[static_cast<size_t>(cid)] = 1;
    } else {
      g.store(cid, kNoLimit, scratch_.data(), full_max_rest);
    }
    if (budget >= full_max_rest) {
      or_into(scratch_.data());
      return;
    }
    if (touched) {
      walk_alone(budget);
      or_into(scratch_.data());
      return;
    }
  }
  if (const CompiledGrammar::Entry* limited = g.find(cid, budget)) {
    or_into(limited->bits.data());
    return;
  }
  const int32_t max_rest = walk_alone(budget);
  g.store(cid, budget, scratch_.data(), max_rest);
  or_into(scratch_.data());
}

Status GrammarConstraint::compute(int64_t n_left) {
  std::fill(bits_.begin(), bits_.end(), 0);
  if (n_left == 0 || n_left < -1) {
    return invalid_argument("[grammar] no token may be generated (n_left " + std::to_string(n_left) +
                            "), but the grammar is not complete");
  }
  // After this token n_left - 1 remain, and every byte still needed takes at most one token.
  const int32_t budget = n_left < 0 ? kNoLimit : static_cast<int32_t>(std::min<int64_t>(n_left - 1, kNoLimit - 1));
  for (int32_t cid : state_.cids) or_config(cid, budget);
  for (const CopyStack& c : state_.copies) {
    tmp_.cids.clear();
    tmp_.copies.assign(1, c);
    bool touched = false;
    walk(tmp_, budget, bits_.data(), &touched);
  }
  return Status::ok();
}

Status GrammarConstraint::allowed(int64_t n_left, std::vector<uint64_t>* bits) {
  std::lock_guard<std::mutex> lock(g_->engine_->mutex());
  POCKET_RETURN_IF_ERROR(compute(n_left));
  *bits = bits_;
  return Status::ok();
}

Status GrammarConstraint::mask(float* logits, int32_t n_vocab, int64_t n_left) {
  {
    std::lock_guard<std::mutex> lock(g_->engine_->mutex());
    if (state_done(*g_->engine_, state_)) {
      std::fill(bits_.begin(), bits_.end(), 0);
    } else {
      POCKET_RETURN_IF_ERROR(compute(n_left));
    }
  }
  uint64_t any = 0;
  for (uint64_t w : bits_) any |= w;
  if (any == 0 && !can_stop()) {
    return invalid_argument("[grammar] no token can continue the output here and the grammar is not complete (" +
                            std::to_string(n_left) + " tokens left; the vocabulary lacks the bytes the grammar needs, "
                            "or the token limit is too small)");
  }
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int32_t n_known = std::min(n_vocab, g_->vocab_->n_vocab());
  int32_t t = 0;
  for (size_t w = 0; t < n_known; ++w) {
    const uint64_t word = bits_[w];
    const int32_t end = std::min(t + 64, n_known);
    if (end - t == 64 && (word == ~uint64_t{0} || word == 0)) {  // whole words: nothing, or a plain fill
      if (word == 0) std::fill_n(logits + t, 64, kNegInf);
      t = end;
      continue;
    }
    // A mixed word: visit only its refused tokens.
    uint64_t refused = ~word;
    if (end - t < 64) refused &= (uint64_t{1} << (end - t)) - 1;
    while (refused != 0) {
      logits[t + std::countr_zero(refused)] = kNegInf;
      refused &= refused - 1;
    }
    t = end;
  }
  for (; t < n_vocab; ++t) logits[t] = kNegInf;  // ids past the tokenizer's vocabulary (padding rows)
  return Status::ok();
}

Status GrammarConstraint::accept(int32_t id) {
  const VocabIndex& vocab = *g_->vocab_;
  if (id < 0 || id >= vocab.n_vocab() || !vocab.in_trie(id)) {
    return invalid_argument("[grammar] token " + std::to_string(id) + " is not allowed by the grammar (a control, "
                            "unknown or out-of-range token)");
  }
  std::lock_guard<std::mutex> lock(g_->engine_->mutex());
  GrammarEngine& engine = *g_->engine_;
  const std::string_view bytes = vocab.token_bytes(id);
  MatchState* cur = &state_;
  MatchState* bufs[2] = {&next_, &tmp_};
  int which = 0;
  for (char c : bytes) {
    MatchState* out = bufs[which];
    if (!advance_state(engine, source_.get(), *cur, static_cast<uint8_t>(c), out)) {
      return invalid_argument("[grammar] token " + std::to_string(id) + " is not allowed here by the grammar");
    }
    cur = out;
    which ^= 1;
  }
  canonicalize_state(engine, cur);
  std::swap(state_, *cur);
  return Status::ok();
}

bool GrammarConstraint::can_stop() const {
  std::lock_guard<std::mutex> lock(g_->engine_->mutex());
  return state_can_end(*g_->engine_, state_);
}

bool GrammarConstraint::done() const {
  std::lock_guard<std::mutex> lock(g_->engine_->mutex());
  return state_done(*g_->engine_, state_);
}

}  // namespace pocket
