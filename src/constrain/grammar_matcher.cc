// GrammarMatcher internals: the suffix automaton of COPY sources, the hash-consed stack nodes and interned
// configurations of GrammarEngine (closure with tail calls, memoised byte transitions), and the
// per-generation MatchState steps.
#include "constrain/grammar_matcher.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace pocket {
namespace {

// Source bytes that a JSON string can hold: printable bytes raw (or escaped), five controls by escape.
bool copyable_source_byte(uint8_t b) { return b >= 0x20 || b == 0x08 || b == 0x09 || b == 0x0A || b == 0x0C || b == 0x0D; }

// CopyMode's word characters: ASCII letters and digits.
bool is_word_byte(uint8_t b) { return (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z'); }

// The source byte an escape `\c` stands for, or -1.
int escape_source_byte(uint8_t c) {
  switch (c) {
    case '"': return '"';
    case '\\': return '\\';
    case '/': return '/';
    case 'b': return 0x08;
    case 'f': return 0x0C;
    case 'n': return 0x0A;
    case 'r': return 0x0D;
    case 't': return 0x09;
    default: return -1;
  }
}

uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

template <typename T>
void sort_unique(std::vector<T>* v) {
  if (v->size() > 1) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
}

}  // namespace

// ---- CopySource ----

Expected<std::unique_ptr<CopySource>> CopySource::build(std::string_view source) {
  if (source.size() > kMaxBytes) {
    return invalid_argument("[grammar] copy source is " + std::to_string(source.size()) +
                            " bytes, more than the limit of " + std::to_string(kMaxBytes));
  }
  const size_t bad = first_invalid_utf8(source);
  if (bad != source.size()) {
    return invalid_argument("[grammar] copy source is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
  auto src = std::unique_ptr<CopySource>(new CopySource());
  src->size_ = source.size();
  // Online suffix-automaton construction; edges in per-state linked lists while building, the root's
  // in a direct table (it has the most).
  struct Edge {
    int32_t to, next;
    uint8_t byte;
  };
  std::vector<int32_t> len = {0}, link = {-1}, head = {-1};
  std::vector<Edge> edges;
  std::vector<int32_t> root(256, -1);
  auto get = [&](int32_t s, uint8_t b) -> int32_t {
    if (s == 0) return root[b];
    for (int32_t e = head[static_cast<size_t>(s)]; e >= 0; e = edges[static_cast<size_t>(e)].next) {
      if (edges[static_cast<size_t>(e)].byte == b) return edges[static_cast<size_t>(e)].to;
    }
    return -1;
  };
  auto set = [&](int32_t s, uint8_t b, int32_t to) {
    if (s == 0) {
      root[b] = to;
      return;
    }
    for (int32_t e = head[static_cast<size_t>(s)]; e >= 0; e = edges[static_cast<size_t>(e)].next) {
      if (edges[static_cast<size_t>(e)].byte == b) {
        edges[static_cast<size_t>(e)].to = to;
        return;
      }
    }
    edges.push_back({to, head[static_cast<size_t>(s)], b});
    head[static_cast<size_t>(s)] = static_cast<int32_t>(edges.size()) - 1;
  };
  auto new_state = [&](int32_t l, int32_t lk) {
    len.push_back(l);
    link.push_back(lk);
    head.push_back(-1);
    return static_cast<int32_t>(len.size()) - 1;
  };
  // The indexed text: the source with kWordStart before and kWordEnd after every word (CopySource).
  std::string text;
  text.reserve(source.size() + source.size() / 2 + 2);
  for (size_t i = 0; i < source.size(); ++i) {
    const auto b = static_cast<uint8_t>(source[i]);
    const bool word = is_word_byte(b);
    if (word && (i == 0 || !is_word_byte(static_cast<uint8_t>(source[i - 1])))) text.push_back(static_cast<char>(kWordStart));
    text.push_back(static_cast<char>(b));
    if (word && (i + 1 == source.size() || !is_word_byte(static_cast<uint8_t>(source[i + 1])))) {
      text.push_back(static_cast<char>(kWordEnd));
    }
  }
  int32_t last = 0;
  for (char ch : text) {
    const auto c = static_cast<uint8_t>(ch);
    const int32_t cur = new_state(len[static_cast<size_t>(last)] + 1, -1);
    int32_t p = last;
    while (p >= 0 && get(p, c) < 0) {
      set(p, c, cur);
      p = link[static_cast<size_t>(p)];
    }
    if (p < 0) {
      link[static_cast<size_t>(cur)] = 0;
    } else {
      const int32_t q = get(p, c);
      if (len[static_cast<size_t>(p)] + 1 == len[static_cast<size_t>(q)]) {
        link[static_cast<size_t>(cur)] = q;
      } else {
        const int32_t clone = new_state(len[static_cast<size_t>(p)] + 1, link[static_cast<size_t>(q)]);
        for (int32_t e = head[static_cast<size_t>(q)]; e >= 0; e = edges[static_cast<size_t>(e)].next) {
          const Edge ed = edges[static_cast<size_t>(e)];
          set(clone, ed.byte, ed.to);
        }
        while (p >= 0 && get(p, c) == q) {
          set(p, c, clone);
          p = link[static_cast<size_t>(p)];
        }
        link[static_cast<size_t>(q)] = clone;
        link[static_cast<size_t>(cur)] = clone;
      }
    }
    last = cur;
  }
  // CSR layout, each state's edges sorted by byte.
  const size_t n_states = len.size();
  src->root_next_ = root;
  src->edge_begin_.assign(n_states + 1, 0);
  src->flags_.assign(n_states, 0);
  std::vector<std::pair<uint8_t, int32_t>> tmp;
  for (size_t s = 0; s < n_states; ++s) {
    tmp.clear();
    if (s == 0) {
      for (int b = 0; b < 256; ++b) {
        if (root[static_cast<size_t>(b)] >= 0) tmp.emplace_back(static_cast<uint8_t>(b), root[static_cast<size_t>(b)]);
      }
    } else {
      for (int32_t e = head[s]; e >= 0; e = edges[static_cast<size_t>(e)].next) {
        tmp.emplace_back(edges[static_cast<size_t>(e)].byte, edges[static_cast<size_t>(e)].to);
      }
      std::sort(tmp.begin(), tmp.end());
    }
    for (auto [b, to] : tmp) {
      src->edge_byte_.push_back(b);
      src->edge_to_.push_back(to);
      // Every transition into a state carries the same byte, so this marks each state once.
      if (is_word_byte(b)) src->flags_[static_cast<size_t>(to)] |= kLastWord;
    }
    src->edge_begin_[s + 1] = static_cast<int32_t>(src->edge_byte_.size());
  }
  // Per state (the root excepted, which never ends or continues a span by these flags): whole-word exit,
  // extendability as step() sees it, and the distance to a word end. A transition goes to a state of
  // greater len, so states by decreasing len come after everything they lead to.
  std::vector<int32_t> order(n_states);
  {
    std::vector<int32_t> count(static_cast<size_t>(*std::max_element(len.begin(), len.end())) + 2, 0);
    for (int32_t l : len) ++count[static_cast<size_t>(l) + 1];
    for (size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
    for (size_t s = 0; s < n_states; ++s) order[static_cast<size_t>(count[static_cast<size_t>(len[s])]++)] = static_cast<int32_t>(s);
  }
  src->to_word_end_.assign(n_states, 0);
  constexpr int32_t kFar = 1 << 28;
  for (size_t k = n_states; k-- > 1;) {
    const auto s = static_cast<size_t>(order[k]);
    const bool last_word = (src->flags_[s] & kLastWord) != 0;
    bool extendable = false;
    int32_t dist = last_word ? kFar : 0;
    for (auto e = static_cast<size_t>(src->edge_begin_[s]); e < static_cast<size_t>(src->edge_begin_[s + 1]); ++e) {
      const uint8_t b = src->edge_byte_[e];
      const auto to = static_cast<size_t>(src->edge_to_[e]);
      if (last_word && b == kWordEnd) {
        dist = 0;
        src->flags_[s] |= kExitOk;
      }
      if (last_word && is_word_byte(b)) {
        extendable = true;
        dist = std::min(dist, src->to_word_end_[to] + 1);
      }
      if (!last_word && !is_word_byte(b) && copyable_source_byte(b)) extendable = true;
      // Behind the sentinel the byte classes call for: a byte of the other class.
      if ((last_word && b == kWordEnd) || (!last_word && b == kWordStart)) {
        for (auto f = static_cast<size_t>(src->edge_begin_[to]); f < static_cast<size_t>(src->edge_begin_[to + 1]); ++f) {
          const uint8_t c = src->edge_byte_[f];
          if (copyable_source_byte(c) && is_word_byte(c) != last_word) extendable = true;
        }
      }
    }
    if (!last_word) src->flags_[s] |= kExitOk;
    if (extendable) src->flags_[s] |= kExtendable;
    src->to_word_end_[s] = dist;
  }
  // The shortest character as JSON content (1 byte raw, 2 escaped, the UTF-8 length otherwise).
  for (size_t i = 0; i < source.size();) {
    const auto b = static_cast<uint8_t>(source[i]);
    const size_t n = std::max<size_t>(1, utf8_sequence_length(b));
    int32_t w = static_cast<int32_t>(n);
    if (b == '"' || b == '\\' || (b < 0x20 && copyable_source_byte(b))) w = 2;
    if (b < 0x20 && !copyable_source_byte(b)) w = 1 << 20;
    src->min_char_bytes_ = std::min(src->min_char_bytes_, w);
    if (!is_word_byte(b)) src->min_word_span_bytes_ = std::min(src->min_word_span_bytes_, w);
    i += n;
  }
  for (size_t i = 0; i < source.size();) {  // words: runs of word bytes, one JSON byte each
    size_t j = i;
    while (j < source.size() && is_word_byte(static_cast<uint8_t>(source[j]))) ++j;
    if (j > i) src->min_word_span_bytes_ = std::min(src->min_word_span_bytes_, static_cast<int32_t>(j - i));
    i = j + 1;
  }
  return src;
}

int32_t CopySource::next(int32_t s, uint8_t b) const {
  if (s == 0) return root_next_[b];
  const auto lo = static_cast<size_t>(edge_begin_[static_cast<size_t>(s)]);
  const auto hi = static_cast<size_t>(edge_begin_[static_cast<size_t>(s) + 1]);
  for (size_t e = lo; e < hi; ++e) {
    if (edge_byte_[e] >= b) return edge_byte_[e] == b ? edge_to_[e] : -1;
  }
  return -1;
}

int32_t CopySource::next_source(int32_t s, uint8_t b, CopyMode mode) const {
  const bool word = is_word_byte(b);
  if (s == 0) {
    if (word && mode == CopyMode::kWords) s = next(0, kWordStart);
  } else if (((flags_[static_cast<size_t>(s)] & kLastWord) != 0) != word) {
    s = next(s, word ? kWordStart : kWordEnd);
  }
  return s < 0 ? -1 : next(s, b);
}

bool CopySource::step(uint32_t* state, uint8_t byte, CopyMode mode) const {
  const auto sam = static_cast<int32_t>(*state >> 3);
  const uint32_t pending = (*state >> 1) & 3u;
  const bool escape = (*state & 1u) != 0;
  int32_t to = -1;
  uint32_t new_pending = 0;
  if (escape) {
    const int src = escape_source_byte(byte);
    if (src < 0) return false;
    to = next_source(sam, static_cast<uint8_t>(src), mode);
  } else if (pending > 0) {
    if (byte < 0x80 || byte > 0xBF) return false;
    to = next_source(sam, byte, mode);
    new_pending = pending - 1;
  } else if (byte == '\\') {
    // Start an escape only when some escaped source byte follows here.
    for (const uint8_t c : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'}) {
      if (next_source(sam, static_cast<uint8_t>(escape_source_byte(c)), mode) >= 0) {
        *state = (static_cast<uint32_t>(sam) << 3) | 1u;
        return true;
      }
    }
    return false;
  } else if (byte == '"' || byte < 0x20) {
    return false;  // a quote ends the JSON string; raw control bytes are not JSON
  } else {
    const size_t n = utf8_sequence_length(byte);
    if (n == 0) return false;  // a continuation byte cannot start a character
    to = next_source(sam, byte, mode);
    new_pending = static_cast<uint32_t>(n - 1);
  }
  if (to < 0) return false;
  *state = (static_cast<uint32_t>(to) << 3) | (new_pending << 1);
  return true;
}

bool CopySource::can_continue(uint32_t state) const {
  if ((state & 7u) != 0) return true;  // mid-character or mid-escape: step() only entered it when viable
  return (flags_[state >> 3] & kExtendable) != 0;
}

int32_t CopySource::bytes_to_exit(uint32_t state, int lo, CopyMode mode) const {
  // An escape or a multi-byte character ends on a non-word byte, where a whole-word span may end too.
  if ((state & 1u) != 0) return 1;
  const auto pending = static_cast<int32_t>((state >> 1) & 3u);
  if (pending > 0) return pending;
  if ((state >> 3) == 0) {
    if (lo == 0) return 0;
    return mode == CopyMode::kWords ? min_word_span_bytes_ : min_char_bytes_;
  }
  return mode == CopyMode::kWords ? to_word_end_[state >> 3] : 0;
}

// ---- GrammarEngine ----

GrammarEngine::GrammarEngine(Grammar grammar) : grammar_(std::move(grammar)) {}

Expected<std::shared_ptr<GrammarEngine>> GrammarEngine::create(Grammar grammar) {
  if (!grammar.finalized()) {
    return invalid_argument("[grammar] the grammar is not finalized (call finalize(root) first)");
  }
  auto engine = std::shared_ptr<GrammarEngine>(new GrammarEngine(std::move(grammar)));
  engine->nodes_.push_back({-1, -1, 0, kUnknown});  // the empty stack
  std::vector<int32_t> tops;
  engine->closure_seen_.clear();
  engine->closure(0, 0, &tops);
  engine->start_ = engine->intern_config(&tops);
  return engine;
}

int32_t GrammarEngine::intern_node(int32_t pos, int32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
  auto [it, inserted] = node_index_.try_emplace(key, static_cast<int32_t>(nodes_.size()));
  if (inserted) {
    const int32_t min_total = std::min(grammar_.min_rest(pos) + nodes_[static_cast<size_t>(parent)].min_total, 1 << 29);
    nodes_.push_back({pos, parent, min_total, kUnknown});
  }
  return it->second;
}

// Appends the tops of every stack that (pos, parent) expands to: rule references are expanded until a
// terminal is on top; a finished alternative pops to its parent frame (0: the empty stack, which accepts).
// A reference in tail position reuses the parent frame, so right recursion does not grow the stack.
// Terminates because finalize() refused left recursion; `closure_seen_` skips repeated (pos, parent).
void GrammarEngine::closure(int32_t pos, int32_t parent, std::vector<int32_t>* out) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
  if (!closure_seen_.emplace(key, 1).second) return;
  const GrammarElem& e = grammar_.flat()[static_cast<size_t>(pos)];
  switch (e.kind) {
    case ElemKind::kEnd:
      if (parent == 0) {
        out->push_back(0);
      } else {
        const Node p = nodes_[static_cast<size_t>(parent)];
        closure(p.pos, p.parent, out);
      }
      return;
    case ElemKind::kBytes:
      out->push_back(intern_node(pos, parent));
      return;
    case ElemKind::kCopy:
      out->push_back(intern_node(pos, parent));
      if (e.lo == 0) closure(pos + 1, parent, out);
      return;
    case ElemKind::kRule: {
      const bool tail = grammar_.flat()[static_cast<size_t>(pos) + 1].kind == ElemKind::kEnd;
      const int32_t cont = tail ? parent : intern_node(pos + 1, parent);
      for (int32_t start : grammar_.alt_starts(e.rule)) closure(start, cont, out);
      return;
    }
  }
}

int32_t GrammarEngine::intern_config(std::vector<int32_t>* nodes) {
  sort_unique(nodes);
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ nodes->size();
  for (int32_t n : *nodes) h = mix(h ^ static_cast<uint64_t>(n));
  auto range = config_index_.equal_range(h);
  for (auto it = range.first; it != range.second; ++it) {
    const Config& c = configs_[static_cast<size_t>(it->second)];
    if (static_cast<size_t>(c.count) == nodes->size() &&
        std::equal(nodes->begin(), nodes->end(), config_nodes_.begin() + c.begin)) {
      return it->second;
    }
  }
  Config c{};
  c.begin = static_cast<int32_t>(config_nodes_.size());
  c.count = static_cast<int32_t>(nodes->size());
  c.copy_begin = static_cast<int32_t>(copy_nodes_.size());
  c.min_plain = 1 << 29;
  c.can_end = false;
  c.only_end = true;
  for (int32_t n : *nodes) {
    config_nodes_.push_back(n);
    if (n == 0) {
      c.can_end = true;
      c.min_plain = 0;
      continue;
    }
    c.only_end = false;
    if (node_elem(n).kind == ElemKind::kCopy) {
      copy_nodes_.push_back(n);
    } else {
      c.min_plain = std::min(c.min_plain, nodes_[static_cast<size_t>(n)].min_total);
    }
  }
  c.copy_count = static_cast<int32_t>(copy_nodes_.size()) - c.copy_begin;
  const auto id = static_cast<int32_t>(configs_.size());
  configs_.push_back(c);
  config_index_.emplace(h, id);
  // A transition table (256 x int32 = 1 KiB) for every configuration while the tables stay under 64 MiB
  // (65,536 configurations); past that, transitions of newer configurations are recomputed (correct, slower).
  if (trans_.size() < (size_t{16} << 20)) {
    trans_base_.push_back(static_cast<int32_t>(trans_.size()));
    trans_.resize(trans_.size() + 256, kUnknown);
  } else {
    trans_base_.push_back(-1);
  }
  return id;
}

int32_t GrammarEngine::succ(int32_t node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  if (n.succ == kUnknown) {
    std::vector<int32_t> tops;
    closure_seen_.clear();
    const int32_t pos = n.pos, parent = n.parent;
    closure(pos + 1, parent, &tops);  // may grow nodes_: `n` is not used below
    const int32_t cid = intern_config(&tops);
    nodes_[static_cast<size_t>(node)].succ = cid;
  }
  return nodes_[static_cast<size_t>(node)].succ;
}

int32_t GrammarEngine::merge(std::span<const int32_t> cids) {
  if (cids.size() == 1) return cids[0];
  std::vector<int32_t>& all = scratch2_;
  all.clear();
  for (int32_t cid : cids) {
    const Config& c = configs_[static_cast<size_t>(cid)];
    all.insert(all.end(), config_nodes_.begin() + c.begin, config_nodes_.begin() + c.begin + c.count);
  }
  return intern_config(&all);
}

int32_t GrammarEngine::advance_slow(int32_t cid, uint8_t byte) {
  std::vector<int32_t> succs;
  {
    const Config c = configs_[static_cast<size_t>(cid)];
    for (int32_t i = 0; i < c.count; ++i) {
      const int32_t n = config_nodes_[static_cast<size_t>(c.begin + i)];
      if (n == 0) continue;
      const GrammarElem& e = node_elem(n);
      if (e.kind == ElemKind::kBytes && byte >= e.lo && byte <= e.hi) succs.push_back(n);
    }
  }
  for (int32_t& n : succs) n = succ(n);
  sort_unique(&succs);
  const int32_t result = succs.empty() ? -1 : merge(succs);
  if (trans_base_[static_cast<size_t>(cid)] >= 0) {
    trans_[static_cast<size_t>(trans_base_[static_cast<size_t>(cid)]) + byte] = result;
  }
  return result;
}

size_t GrammarEngine::memory_bytes() const {
  return nodes_.capacity() * sizeof(Node) + node_index_.size() * 32 + configs_.capacity() * sizeof(Config) +
         (config_nodes_.capacity() + copy_nodes_.capacity() + trans_base_.capacity() + trans_.capacity()) *
             sizeof(int32_t) +
         config_index_.size() * 32;
}

// ---- MatchState ----

bool advance_state(GrammarEngine& engine, const CopySource* src, const MatchState& from, uint8_t byte, MatchState* to) {
  to->cids.clear();
  to->copies.clear();
  auto step_copy = [&](int32_t node, uint32_t state) {
    if (src == nullptr) return;
    const CopyMode mode = copy_mode(engine.node_elem(node));
    if (!src->step(&state, byte, mode)) return;
    if (src->can_continue(state)) to->copies.push_back({node, state});
    if (src->can_exit(state, mode)) to->cids.push_back(engine.succ(node));
  };
  for (int32_t cid : from.cids) {
    const int32_t next = engine.advance(cid, byte);
    if (next >= 0) to->cids.push_back(next);
    // By index: step_copy may intern configurations and move the engine's arrays.
    for (size_t i = 0; i < engine.copy_nodes(cid).size(); ++i) step_copy(engine.copy_nodes(cid)[i], 0);
  }
  for (const CopyStack& c : from.copies) step_copy(c.node, c.state);
  sort_unique(&to->cids);
  sort_unique(&to->copies);
  return !to->empty();
}

bool state_can_end(const GrammarEngine& engine, const MatchState& s) {
  for (int32_t cid : s.cids) {
    if (engine.can_end(cid)) return true;
  }
  return false;
}

bool state_done(const GrammarEngine& engine, const MatchState& s) {
  if (!s.copies.empty() || s.cids.empty()) return false;
  for (int32_t cid : s.cids) {
    if (!engine.only_end(cid)) return false;
  }
  return true;
}

int32_t state_min_rest(const GrammarEngine& engine, const CopySource* src, const MatchState& s) {
  int32_t best = 1 << 29;
  auto copy_min = [&](int32_t node, uint32_t state) {
    if (src == nullptr) return;
    const GrammarElem& e = engine.node_elem(node);
    // node_min counts the copy element as e.lo bytes; replace that by what this state still needs.
    best = std::min(best, engine.node_min(node) - e.lo + src->bytes_to_exit(state, e.lo, copy_mode(e)));
  };
  for (int32_t cid : s.cids) {
    best = std::min(best, engine.min_plain(cid));
    for (int32_t node : engine.copy_nodes(cid)) copy_min(node, 0);
  }
  for (const CopyStack& c : s.copies) copy_min(c.node, c.state);
  return best;
}

void canonicalize_state(GrammarEngine& engine, MatchState* s) {
  if (s->cids.size() > 1) {
    const int32_t merged = engine.merge(s->cids);
    s->cids.assign(1, merged);
  }
}

// ---- GrammarMatcher ----

Expected<GrammarMatcher> GrammarMatcher::create(Grammar grammar, std::string_view source) {
  if (!grammar.finalized()) {
    return invalid_argument("[grammar] the grammar is not finalized (call finalize(root) first)");
  }
  POCKET_ASSIGN_OR_RETURN(auto engine, GrammarEngine::create(std::move(grammar)));
  return create(std::move(engine), source);
}

Expected<GrammarMatcher> GrammarMatcher::create(std::shared_ptr<GrammarEngine> engine, std::string_view source) {
  GrammarMatcher m;
  if (engine->grammar().uses_copy()) {
    POCKET_ASSIGN_OR_RETURN(auto src, CopySource::build(source));
    m.source_ = std::move(src);
  }
  m.state_.cids.assign(1, engine->start_config());
  m.engine_ = std::move(engine);
  return m;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  std::lock_guard<std::mutex> lock(engine_->mutex());
  tmp_ = state_;
  for (char c : bytes) {
    if (!advance_state(*engine_, source_.get(), tmp_, static_cast<uint8_t>(c), &tmp2_)) return false;
    std::swap(tmp_, tmp2_);
  }
  canonicalize_state(*engine_, &tmp_);
  std::swap(state_, tmp_);
  return true;
}

bool GrammarMatcher::can_end() const {
  std::lock_guard<std::mutex> lock(engine_->mutex());
  return state_can_end(*engine_, state_);
}

bool GrammarMatcher::done() const {
  std::lock_guard<std::mutex> lock(engine_->mutex());
  return state_done(*engine_, state_);
}

int32_t GrammarMatcher::min_rest() const {
  std::lock_guard<std::mutex> lock(engine_->mutex());
  return state_min_rest(*engine_, source_.get(), state_);
}

}  // namespace pocket
