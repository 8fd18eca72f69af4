// The SFT loop engine: gate, failure counts, targeted data, rounds and loop.json (sft_loop.h).
#include "loop/sft_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "data/chat_data.h"
#include "data/token_shard.h"
#include "nn/trainer.h"
#include "run/checkpoint.h"

namespace pocket::train {

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::pair<int, int> cell_key(TaskKind t, Lang l) { return {static_cast<int>(t), static_cast<int>(l)}; }

// A generator for one purpose of one round, from the loop seed (seed_seq and mt19937_64 are specified bit for
// bit by the standard, so the same seed gives the same data everywhere).
std::mt19937_64 rng_for(uint64_t seed, std::initializer_list<uint32_t> where) {
  std::vector<uint32_t> v = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  v.insert(v.end(), where.begin(), where.end());
  std::seed_seq seq(v.begin(), v.end());
  return std::mt19937_64(seq);
}

Expected<std::vector<TaskExample>> read_tasks(const std::string& path) {
  POCKET_ASSIGN_OR_RETURN(auto bytes, read_binary_file(path));
  return parse_task_examples_jsonl(std::string(bytes.begin(), bytes.end()), path);
}

Status write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) return io_error("[loop] cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return io_error("[loop] cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::ok();
}

ojson cells_json(const std::vector<CellScore>& cells) {
  ojson a = ojson::array();
  for (const auto& c : cells) {
    a.push_back({{"task", task_name(c.task)}, {"lang", lang_name(c.lang)}, {"n", c.n}, {"score", c.score()},
                 {"exact", c.exact()}});
  }
  return a;
}

ojson failures_json(const std::vector<FailureCount>& f) {
  ojson a = ojson::array();
  for (const auto& c : f) {
    a.push_back({{"task", task_name(c.task)}, {"lang", lang_name(c.lang)}, {"class", failure_class_name(c.cls)},
                 {"n", c.n}});
  }
  return a;
}

ojson round_json(const LoopRound& r, double seconds) {
  ojson targets = ojson::array();
  for (const auto& t : r.targets) {
    targets.push_back({{"task", task_name(t.task)}, {"lang", lang_name(t.lang)}, {"class", failure_class_name(t.cls)},
                       {"n", t.n}, {"hints", t.hints}});
  }
  ojson cells = ojson::array();
  for (const auto& c : r.gate.cells) {
    cells.push_back({{"task", task_name(c.task)}, {"lang", lang_name(c.lang)}, {"n", c.n}, {"before", c.before},
                     {"after", c.after}, {"delta", c.after - c.before}, {"se", c.se}, {"allowed_drop", c.allowed}});
  }
  double before = 0, after = 0;
  for (const auto& c : r.gate.cells) {
    before += c.before;
    after += c.after;
  }
  const double n = std::max<double>(1, static_cast<double>(r.gate.cells.size()));
  return {{"round", r.round},
          {"started_from", r.started_from},
          {"candidate", r.candidate},
          {"failures", failures_json(r.failures)},
          {"targets", targets},
          {"examples", {{"targeted", r.n_targeted}, {"replay", r.n_replay}}},
          {"cells", cells},
          {"macro_before", before / n},
          {"macro_after", after / n},
          {"margin", r.gate.margin},
          {"gate_z", r.gate.z},
          {"worst_drop", r.gate.worst_drop},
          {"accepted", r.gate.accepted},
          {"reason", r.gate.reason},
          {"checkpoint", r.checkpoint},
          {"seconds", seconds}};
}

std::string cell_label(TaskKind t, Lang l) { return std::string(task_name(t)) + "/" + std::string(lang_name(l)); }

}  // namespace

namespace {

// The gate over cells whose allowed drops are given (margin + z * se per cell).
GateDecision gate_cells(std::vector<CellChange> cells, double margin, double z) {
  GateDecision d;
  d.margin = margin;
  d.z = z;
  d.accepted = true;
  d.worst_drop = -std::numeric_limits<double>::infinity();
  std::string broken, worst;
  for (CellChange& ch : cells) {
    const double drop = ch.before - ch.after;
    char buf[200];
    if (z > 0) {
      std::snprintf(buf, sizeof buf, "%s %.4f -> %.4f (%+.4f, allowed -%.4f)", cell_label(ch.task, ch.lang).c_str(),
                    ch.before, ch.after, ch.after - ch.before, ch.allowed);
    } else {
      std::snprintf(buf, sizeof buf, "%s %.4f -> %.4f (%+.4f)", cell_label(ch.task, ch.lang).c_str(), ch.before,
                    ch.after, ch.after - ch.before);
    }
    // A drop past the allowance, with a little room for the float sums of the scores.
    if (!(drop <= ch.allowed + 1e-12)) {
      d.accepted = false;
      broken += (broken.empty() ? "" : "; ") + std::string(buf);
    }
    if (drop > d.worst_drop) {
      d.worst_drop = drop;
      worst = buf;
    }
    d.cells.push_back(ch);
  }
  const std::string rule = z > 0 ? "margin " + std::to_string(margin) + " + " + std::to_string(z) + " x se"
                                 : std::to_string(margin);
  if (d.cells.empty()) {
    d.worst_drop = 0;
    d.reason = "no cells scored";
  } else if (d.accepted) {
    d.reason = "no cell dropped more than " + rule + "; worst: " + worst;
  } else {
    d.reason = "dropped more than " + rule + ": " + broken;
  }
  return d;
}

}  // namespace

GateDecision paired_gate(const std::vector<PairedScore>& examples, double margin, double z) {
  std::map<std::pair<int, int>, std::vector<const PairedScore*>> by_cell;
  for (const auto& e : examples) by_cell[cell_key(e.task, e.lang)].push_back(&e);
  std::vector<CellChange> cells;
  for (const auto& [key, xs] : by_cell) {
    CellChange ch;
    ch.task = xs.front()->task;
    ch.lang = xs.front()->lang;
    ch.n = static_cast<int64_t>(xs.size());
    double sum_b = 0, sum_a = 0;
    for (const PairedScore* x : xs) {
      sum_b += x->before;
      sum_a += x->after;
    }
    const double n = static_cast<double>(xs.size());
    ch.before = sum_b / n;
    ch.after = sum_a / n;
    if (xs.size() >= 2) {
      const double mean_d = ch.after - ch.before;
      double ss = 0;
      for (const PairedScore* x : xs) ss += (x->after - x->before - mean_d) * (x->after - x->before - mean_d);
      ch.se = std::sqrt(ss / (n - 1.0) / n);
    }
    ch.allowed = margin + std::max(0.0, z) * ch.se;
    cells.push_back(ch);
  }
  return gate_cells(std::move(cells), margin, std::max(0.0, z));
}

GateDecision regression_gate(const std::vector<CellScore>& before, const std::vector<CellScore>& after, double margin) {
  std::map<std::pair<int, int>, const CellScore*> by_cell;
  for (const auto& c : after) by_cell[cell_key(c.task, c.lang)] = &c;
  std::vector<CellChange> cells;
  for (const auto& b : before) {
    CellChange ch;
    ch.task = b.task;
    ch.lang = b.lang;
    ch.n = b.n;
    ch.before = b.score();
    auto it = by_cell.find(cell_key(b.task, b.lang));
    ch.after = it == by_cell.end() ? 0.0 : it->second->score();  // a cell missing after counts as 0
    ch.allowed = margin;
    cells.push_back(ch);
  }
  return gate_cells(std::move(cells), margin, 0.0);
}

std::vector<FailureCount> count_failures(const std::vector<TaskExample>& eval, const std::vector<std::string>& preds) {
  std::map<std::tuple<int, int, int>, FailureCount> by;
  for (size_t i = 0; i < eval.size() && i < preds.size(); ++i) {
    const FailureReport r = classify_failure(eval[i], preds[i]);
    for (FailureClass c : r.classes) {
      FailureCount& f = by[{static_cast<int>(eval[i].task), static_cast<int>(eval[i].lang), static_cast<int>(c)}];
      f.task = eval[i].task;
      f.lang = eval[i].lang;
      f.cls = c;
      ++f.n;
      if (!r.hint.empty() && std::find(f.hints.begin(), f.hints.end(), r.hint) == f.hints.end()) f.hints.push_back(r.hint);
    }
  }
  std::vector<FailureCount> out;
  for (auto& [k, v] : by) out.push_back(std::move(v));
  return out;
}

std::vector<TargetQuota> plan_targets(const std::vector<FailureCount>& counts, int64_t top_k, int64_t n_examples) {
  // Rank the (task, class) pairs by failures over both languages; ties go to the earlier task and class.
  std::map<std::pair<int, int>, int64_t> pair_total;
  for (const auto& f : counts) pair_total[{static_cast<int>(f.task), static_cast<int>(f.cls)}] += f.n;
  std::vector<std::pair<std::pair<int, int>, int64_t>> ranked(pair_total.begin(), pair_total.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (static_cast<int64_t>(ranked.size()) > top_k) ranked.resize(static_cast<size_t>(std::max<int64_t>(0, top_k)));
  int64_t total = 0;
  for (const auto& r : ranked) total += r.second;
  std::vector<TargetQuota> plan;
  if (total == 0 || n_examples <= 0) return plan;
  // Largest-remainder shares, so the quotas add up to n_examples exactly.
  std::vector<std::pair<const FailureCount*, double>> want;
  for (const auto& r : ranked) {
    for (const auto& f : counts) {
      if (static_cast<int>(f.task) == r.first.first && static_cast<int>(f.cls) == r.first.second && f.n > 0) {
        want.push_back({&f, static_cast<double>(n_examples) * static_cast<double>(f.n) / static_cast<double>(total)});
      }
    }
  }
  int64_t given = 0;
  std::vector<size_t> by_remainder(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    by_remainder[i] = i;
    given += static_cast<int64_t>(std::floor(want[i].second));
  }
  std::stable_sort(by_remainder.begin(), by_remainder.end(), [&](size_t a, size_t b) {
    return want[a].second - std::floor(want[a].second) > want[b].second - std::floor(want[b].second);
  });
  std::vector<int64_t> n(want.size());
  for (size_t i = 0; i < want.size(); ++i) n[i] = static_cast<int64_t>(std::floor(want[i].second));
  for (size_t k = 0; given < n_examples && k < by_remainder.size(); ++k, ++given) ++n[by_remainder[k]];
  for (size_t i = 0; i < want.size(); ++i) {
    if (n[i] == 0) continue;
    const FailureCount& f = *want[i].first;
    plan.push_back({f.task, f.lang, f.cls, n[i], f.hints});
  }
  return plan;
}

std::vector<TaskExample> targeted_examples(const std::vector<TargetQuota>& plan, uint64_t seed,
                                           const std::unordered_set<std::string>& exclude) {
  std::vector<TaskExample> out;
  std::unordered_set<std::string> seen = exclude;
  for (const auto& q : plan) {
    auto g = rng_for(seed, {static_cast<uint32_t>(q.task), static_cast<uint32_t>(q.lang),
                            static_cast<uint32_t>(q.cls), 0x54475453u /* "TGTS" */});
    int64_t got = 0, misses = 0;
    while (got < q.n && misses < 4000 + 64 * q.n) {
      // Up to 64 draws for one that shows the class's trait; then any new example of the cell.
      TaskExample pick;
      bool found = false;
      for (int tries = 0; tries < 64 && !found; ++tries) {
        TaskExample e = generate_task_example(q.task, q.lang, g());
        if (seen.count(e.prompt) != 0) continue;
        if (example_targets(q.cls, e, q.hints)) {
          pick = std::move(e);
          found = true;
        } else if (pick.prompt.empty()) {
          pick = std::move(e);
        }
      }
      if (pick.prompt.empty()) {
        ++misses;
        continue;
      }
      seen.insert(pick.prompt);
      out.push_back(std::move(pick));
      ++got;
    }
  }
  return out;
}

LoopHooks default_loop_hooks(const LoopConfig& c) {
  LoopHooks h;
  const AnswerOptions ao = c.answers;
  h.answer = [ao](const std::string& ckpt, const std::vector<TaskExample>& ex) { return checkpoint_answers(ckpt, ex, ao); };
  const TrainConfig sft = c.sft;
  h.fine_tune = [sft](const std::string& init, const std::vector<TaskExample>& data,
                      const std::string& round_dir) -> Expected<std::string> {
    POCKET_ASSIGN_OR_RETURN(std::string dir, resolve_checkpoint(init));
    POCKET_ASSIGN_OR_RETURN(CheckpointMeta meta, read_checkpoint_meta(dir));
    POCKET_ASSIGN_OR_RETURN(auto tok_bytes, read_binary_file(dir + "/tokenizer.bin"));
    POCKET_ASSIGN_OR_RETURN(auto tok, load_tokenizer_section(tok_bytes));
    const std::string tmpl = meta.config.chat_template;
    const bool add_bos = tmpl != "llama2" && tmpl != "llama3";  // those render BOS in the text
    TokenShardWriter w(static_cast<uint32_t>(tok->n_vocab()), true);
    for (const auto& e : data) {
      POCKET_ASSIGN_OR_RETURN(TokenisedChat t,
                              tokenise_chat(*tok, tmpl, Conversation{{"user", e.prompt}, {"assistant", e.answer}}, add_bos));
      POCKET_RETURN_IF_ERROR(w.add_document(t.tokens, t.mask));
    }
    const std::string shard = round_dir + "/data.shard";
    POCKET_RETURN_IF_ERROR(w.write(shard));
    TrainConfig cfg = sft;
    cfg.stage = Stage::kSft;
    cfg.init_from = init;
    cfg.data = {shard};
    cfg.tokenizer.clear();  // the checkpoint's own
    cfg.chat_template = tmpl;
    cfg.out_dir = round_dir + "/run";
    POCKET_ASSIGN_OR_RETURN(TrainSummary s, run_training(cfg));
    (void)s;
    return cfg.out_dir;
  };
  return h;
}

Expected<LoopResult> run_sft_loop(const LoopConfig& c, const LoopHooks& hooks) {
  if (!(c.gate_z >= 0 && c.gate_z <= 10)) {
    return invalid_argument("[loop] gate_z (--gate-z) must be in [0, 10]; got " + std::to_string(c.gate_z));
  }
  if (c.rounds < 1 || !(c.margin >= 0) || c.eval_per_cell < 1 || c.examples_per_round < 1 || c.top_classes < 1 ||
      !(c.replay_fraction >= 0 && c.replay_fraction < 1)) {
    return invalid_argument("[loop] need rounds >= 1, margin >= 0, eval_per_cell >= 1, examples_per_round >= 1, "
                            "top_classes >= 1 and 0 <= replay_fraction < 1");
  }
  if (c.init.empty() || c.tasks_dir.empty() || c.out_dir.empty()) {
    return invalid_argument("[loop] need an initial checkpoint, a tasks directory and an output directory");
  }
  // The held-out examples: the first eval_per_cell of each cell of the split, in file order.
  POCKET_ASSIGN_OR_RETURN(auto split, read_tasks(c.tasks_dir + "/" + c.eval_split + ".jsonl"));
  std::vector<TaskExample> eval;
  std::map<std::pair<int, int>, int64_t> taken;
  for (const auto& e : split) {
    if (taken[cell_key(e.task, e.lang)]++ < c.eval_per_cell) eval.push_back(e);
  }
  if (eval.empty()) return invalid_argument("[loop] no examples in " + c.tasks_dir + "/" + c.eval_split + ".jsonl");
  // Generated examples never repeat a held-out prompt.
  std::unordered_set<std::string> exclude;
  for (const char* name : {"dev", "test"}) {
    const std::string path = c.tasks_dir + "/" + name + ".jsonl";
    if (!fs::exists(path)) continue;
    POCKET_ASSIGN_OR_RETURN(auto held, read_tasks(path));
    for (const auto& e : held) exclude.insert(e.prompt);
  }
  for (const auto& e : split) exclude.insert(e.prompt);
  std::vector<TaskExample> replay_pool;
  if (fs::exists(c.tasks_dir + "/train.jsonl")) {
    POCKET_ASSIGN_OR_RETURN(replay_pool, read_tasks(c.tasks_dir + "/train.jsonl"));
  }
  std::error_code ec;
  fs::create_directories(c.out_dir, ec);
  if (ec) return io_error("[loop] cannot create " + c.out_dir + ": " + ec.message());

  // Resume after the rounds loop.json already records.
  const std::string log_path = c.out_dir + "/loop.json";
  ojson log;
  std::string current = c.init;
  int64_t first_round = 1;
  if (fs::exists(log_path)) {
    POCKET_ASSIGN_OR_RETURN(auto bytes, read_binary_file(log_path));
    log = ojson::parse(std::string(bytes.begin(), bytes.end()), nullptr, false);
    if (log.is_discarded() || !log.is_object() || !log.contains("rounds") || !log["rounds"].is_array() ||
        !log.contains("checkpoint") || !log["checkpoint"].is_string()) {
      return corrupt_file("[loop] cannot resume: malformed " + log_path);
    }
    current = log["checkpoint"].get<std::string>();
    first_round = static_cast<int64_t>(log["rounds"].size()) + 1;
  } else {
    log = {{"init", c.init},
           {"tasks", c.tasks_dir},
           {"eval_split", c.eval_split},
           {"eval_per_cell", c.eval_per_cell},
           {"margin", c.margin},
           {"gate_z", c.gate_z},
           {"examples_per_round", c.examples_per_round},
           {"replay_fraction", c.replay_fraction},
           {"top_classes", c.top_classes},
           {"seed", c.seed},
           {"sft", ojson::parse(c.sft.to_json())},
           {"baseline", nullptr},
           {"rounds", ojson::array()},
           {"checkpoint", c.init}};
  }

  LoopResult result;
  POCKET_ASSIGN_OR_RETURN(auto preds, hooks.answer(current, eval));
  if (preds.size() != eval.size()) return invalid_argument("[loop] the evaluator gave a wrong number of answers");
  TaskScoreboard board;
  std::vector<double> scores;  // the current checkpoint's metric per held-out example (paired_gate's "before")
  for (size_t i = 0; i < eval.size(); ++i) scores.push_back(board.add(eval[i], preds[i]).score);
  result.start = board.cells();
  if (log["baseline"].is_null()) {
    log["baseline"] = {{"checkpoint", current},
                       {"cells", cells_json(board.cells())},
                       {"macro", board.macro_score()},
                       {"failures", failures_json(count_failures(eval, preds))}};
    POCKET_RETURN_IF_ERROR(write_text_atomic(log_path, log.dump(1) + "\n"));
  }
  std::fprintf(stderr, "loop: %s on %zu held-out examples (%s split): macro %.4f\n", current.c_str(), eval.size(),
               c.eval_split.c_str(), board.macro_score());

  for (int64_t r = first_round; r <= c.rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    LoopRound rr;
    rr.round = r;
    rr.started_from = current;
    rr.failures = count_failures(eval, preds);
    const int64_t n_replay =
        replay_pool.empty() ? 0 : static_cast<int64_t>(std::llround(c.replay_fraction * static_cast<double>(c.examples_per_round)));
    rr.targets = plan_targets(rr.failures, c.top_classes, c.examples_per_round - n_replay);
    if (rr.targets.empty()) {
      std::fprintf(stderr, "loop: no failures left on the held-out examples; stopping before round %lld\n", (long long)r);
      break;
    }
    const uint64_t round_seed = rng_for(c.seed, {static_cast<uint32_t>(r), 0x524e4453u /* "RNDS" */})();
    std::vector<TaskExample> data = targeted_examples(rr.targets, round_seed, exclude);
    rr.n_targeted = static_cast<int64_t>(data.size());
    auto g = rng_for(round_seed, {0x52504c59u /* "RPLY" */});
    for (int64_t i = 0; i < n_replay; ++i) data.push_back(replay_pool[static_cast<size_t>(g() % replay_pool.size())]);
    rr.n_replay = n_replay;
    for (size_t i = data.size(); i > 1; --i) std::swap(data[i - 1], data[static_cast<size_t>(g() % i)]);

    char name[32];
    std::snprintf(name, sizeof name, "round-%02lld", (long long)r);
    const std::string round_dir = c.out_dir + "/" + name;
    fs::create_directories(round_dir, ec);
    if (ec) return io_error("[loop] cannot create " + round_dir + ": " + ec.message());
    {
      std::string lines;
      for (const auto& e : data) lines += task_example_to_json(e) + "\n";
      POCKET_RETURN_IF_ERROR(write_text_atomic(round_dir + "/data.jsonl", lines));
    }
    std::fprintf(stderr, "loop: round %lld: %lld targeted + %lld replayed examples; top classes:", (long long)r,
                 (long long)rr.n_targeted, (long long)rr.n_replay);
    for (const auto& t : rr.targets) {
      std::fprintf(stderr, " %s/%s/%s x%lld", std::string(task_name(t.task)).c_str(), std::string(lang_name(t.lang)).c_str(),
                   std::string(failure_class_name(t.cls)).c_str(), (long long)t.n);
    }
    std::fprintf(stderr, "\n");

    POCKET_ASSIGN_OR_RETURN(rr.candidate, hooks.fine_tune(current, data, round_dir));
    POCKET_ASSIGN_OR_RETURN(auto cand_preds, hooks.answer(rr.candidate, eval));
    if (cand_preds.size() != eval.size()) return invalid_argument("[loop] the evaluator gave a wrong number of answers");
    TaskScoreboard cand;
    std::vector<PairedScore> paired;
    std::vector<double> cand_scores;
    for (size_t i = 0; i < eval.size(); ++i) {
      cand_scores.push_back(cand.add(eval[i], cand_preds[i]).score);
      paired.push_back({eval[i].task, eval[i].lang, scores[i], cand_scores.back()});
    }
    rr.gate = c.gate_z > 0 ? paired_gate(paired, c.margin, c.gate_z) : regression_gate(board.cells(), cand.cells(), c.margin);
    if (rr.gate.accepted) {  // otherwise roll back: the next round starts again from `current`
      current = rr.candidate;
      preds = std::move(cand_preds);
      scores = std::move(cand_scores);
      board = cand;
    }
    rr.checkpoint = current;
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log["rounds"].push_back(round_json(rr, secs));
    log["checkpoint"] = current;
    POCKET_RETURN_IF_ERROR(write_text_atomic(log_path, log.dump(1) + "\n"));
    std::fprintf(stderr, "loop: round %lld %s (macro %.4f -> %.4f): %s\n", (long long)r,
                 rr.gate.accepted ? "accepted" : "REJECTED, rolled back", log["rounds"].back()["macro_before"].get<double>(),
                 log["rounds"].back()["macro_after"].get<double>(), rr.gate.reason.c_str());
    result.rounds.push_back(std::move(rr));
  }
  result.checkpoint = current;
  return result;
}

}  // namespace pocket::train
