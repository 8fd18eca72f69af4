// The block drafter's training loop, evaluation and export (see drafter_trainer.h).
#include "nn/drafter_trainer.h"

#include <torch/nn/functional/loss.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>

#include "convert/quantize_model.h"
#include "model/model.h"
#include "nn/block_drafter_torch.h"
#include "nn/train_state.h"
#include "run/checkpoint.h"
#include "run/drafter_exporter.h"
#include "run/package_import.h"
#include "run/run_log.h"

namespace pocket::train {

namespace fs = std::filesystem;
namespace F = torch::nn::functional;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One step's (or one evaluation chunk's) inputs: N sequences padded to T, K anchor blocks each.
struct AnchorBatch {
  torch::Tensor tokens;   // [N, T] int64 (right-padded with 0)
  torch::Tensor anchors;  // [N, K] int64 anchor positions (padding anchors repeat the first; no labels)
  torch::Tensor labels;   // [N, K, B] int64, t_{p+r}, -1 past the sequence's end or for padding anchors
};

// `picks[i]`: the anchor positions of sequence seqs[i] (each in n_prompt .. len-2).
AnchorBatch make_batch(const std::vector<const DrafterSequence*>& seqs, const std::vector<std::vector<int64_t>>& picks,
                       int64_t B) {
  const int64_t N = static_cast<int64_t>(seqs.size());
  int64_t T = 1, K = 1;
  for (int64_t i = 0; i < N; ++i) {
    T = std::max<int64_t>(T, static_cast<int64_t>(seqs[i]->ids.size()));
    K = std::max<int64_t>(K, static_cast<int64_t>(picks[i].size()));
  }
  AnchorBatch b;
  b.tokens = torch::zeros({N, T}, torch::kInt64);
  b.anchors = torch::zeros({N, K}, torch::kInt64);
  b.labels = torch::full({N, K, B}, -1, torch::kInt64);
  auto tok = b.tokens.accessor<int64_t, 2>();
  auto anc = b.anchors.accessor<int64_t, 2>();
  auto lab = b.labels.accessor<int64_t, 3>();
  for (int64_t i = 0; i < N; ++i) {
    const auto& ids = seqs[i]->ids;
    const int64_t L = static_cast<int64_t>(ids.size());
    for (int64_t j = 0; j < L; ++j) tok[i][j] = ids[static_cast<size_t>(j)];
    for (int64_t k = 0; k < K; ++k) {
      const bool real = k < static_cast<int64_t>(picks[i].size());
      const int64_t p = real ? picks[i][static_cast<size_t>(k)] : (picks[i].empty() ? 1 : picks[i][0]);
      anc[i][k] = p;
      if (!real) continue;
      for (int64_t r = 1; r <= B && p + r < L; ++r) lab[i][k][r - 1] = ids[static_cast<size_t>(p + r)];
    }
  }
  return b;
}

torch::Tensor position_weights(int64_t B, double gamma) {
  return torch::exp(-torch::arange(B, torch::kFloat32) / static_cast<float>(gamma));  // exp(-(r-1)/gamma)
}

// logits [N, K, B, V] -> the position-weighted CE (mean over labelled positions, weights normalised).
torch::Tensor weighted_loss(const torch::Tensor& logits, const torch::Tensor& labels, const torch::Tensor& w) {
  const int64_t V = logits.size(-1);
  auto ce = F::cross_entropy(logits.reshape({-1, V}), labels.reshape({-1}),
                             F::CrossEntropyFuncOptions().ignore_index(-1).reduction(torch::kNone))
                .view(labels.sizes());
  auto m = labels.ge(0).to(torch::kFloat32) * w;  // [N, K, B]
  return (ce * m).sum() / m.sum().clamp_min(1e-6);
}

// The normed block rows [N, K, B, d] (before the LM head).
torch::Tensor head_inputs(BlockDrafter& m, TargetTaps& target, const AnchorBatch& b) {
  auto hidden = target.hidden(b.tokens);  // [N, T, n_taps * d], no grad
  torch::Tensor anchor_tok = b.tokens.gather(1, b.anchors);
  auto anchor_embd = target.token_embd().index_select(0, anchor_tok.reshape({-1})).view(
      {b.anchors.size(0), b.anchors.size(1), -1});
  return m->head_inputs(hidden, b.anchors, anchor_embd);
}

torch::Tensor forward_batch(BlockDrafter& m, TargetTaps& target, const AnchorBatch& b) {
  return F::linear(head_inputs(m, target, b), target.head());  // [N, K, B, n_vocab]
}

// Every anchor of the sequences, in chunks; greedy drafts against the target's own tokens.
DrafterEvalReport evaluate(BlockDrafter& m, TargetTaps& target, const std::vector<DrafterSequence>& seqs, int64_t limit,
                           double gamma) {
  torch::NoGradGuard no_grad;
  const int64_t B = m->config().block_size;
  const auto w = position_weights(B, gamma);
  DrafterEvalReport rep;
  rep.position_acc.assign(static_cast<size_t>(B), 0.0);
  std::vector<int64_t> pos_n(static_cast<size_t>(B), 0), pos_ok(static_cast<size_t>(B), 0);
  double loss_sum = 0, loss_w = 0;
  std::vector<const DrafterSequence*> use;
  for (const auto& s : seqs) {
    if (limit > 0 && static_cast<int64_t>(use.size()) >= limit) break;
    if (s.n_generated() >= 2) use.push_back(&s);
  }
  constexpr size_t kChunk = 8;
  for (size_t c0 = 0; c0 < use.size(); c0 += kChunk) {
    std::vector<const DrafterSequence*> part(use.begin() + static_cast<std::ptrdiff_t>(c0),
                                             use.begin() + static_cast<std::ptrdiff_t>(std::min(use.size(), c0 + kChunk)));
    std::vector<std::vector<int64_t>> picks;
    for (const auto* s : part) {
      std::vector<int64_t> p(static_cast<size_t>(s->n_generated() - 1));
      std::iota(p.begin(), p.end(), static_cast<int64_t>(s->n_prompt));
      picks.push_back(std::move(p));
    }
    const AnchorBatch b = make_batch(part, picks, B);
    auto logits = forward_batch(m, target, b);
    auto m_w = b.labels.ge(0).to(torch::kFloat32) * w;
    loss_sum += weighted_loss(logits, b.labels, w).item<double>() * m_w.sum().item<double>();
    loss_w += m_w.sum().item<double>();
    auto drafts = logits.argmax(-1);                      // [N, K, B], lowest id on ties
    auto eq = drafts.eq(b.labels) & b.labels.ge(0);       // a draft counts only against a real token
    auto lead = eq.to(torch::kInt64).cumprod(-1).sum(-1);  // [N, K] leading accepted drafts
    auto eq_a = eq.accessor<bool, 3>();
    auto lab_a = b.labels.accessor<int64_t, 3>();
    auto lead_a = lead.accessor<int64_t, 2>();
    for (size_t i = 0; i < part.size(); ++i) {
      const DrafterSequence& s = *part[i];
      const auto n_anchor = static_cast<int64_t>(picks[i].size());
      DrafterTaskStats& ts = rep.tasks[static_cast<size_t>(s.task)];
      for (DrafterTaskStats* st : {&ts, &rep.all}) {
        ++st->n_sequences;
        st->n_anchors += n_anchor;
        for (int64_t k = 0; k < n_anchor; ++k) st->sum_accept += 1.0 + static_cast<double>(lead_a[i][k]);
        // The speculative walk: the first generated token comes from prefill; each verify pass at anchor p
        // yields the accepted drafts and one target token.
        const int64_t L = static_cast<int64_t>(s.ids.size());
        int64_t p = s.n_prompt;
        while (p < L - 1) {
          ++st->walk_passes;
          p += lead_a[i][p - s.n_prompt] + 1;
        }
        st->walk_tokens += L - 1 - s.n_prompt;
      }
      for (int64_t k = 0; k < n_anchor; ++k) {
        for (int64_t r = 0; r < B; ++r) {
          if (lab_a[i][k][r] < 0) continue;
          ++pos_n[static_cast<size_t>(r)];
          pos_ok[static_cast<size_t>(r)] += eq_a[i][k][r];
        }
      }
    }
  }
  for (int64_t r = 0; r < B; ++r) {
    rep.position_acc[static_cast<size_t>(r)] =
        pos_n[static_cast<size_t>(r)] > 0
            ? static_cast<double>(pos_ok[static_cast<size_t>(r)]) / static_cast<double>(pos_n[static_cast<size_t>(r)])
            : 0.0;
  }
  rep.loss = loss_w > 0 ? loss_sum / loss_w : 0;
  return rep;
}

double lr_at(const DrafterTrainOptions& o, int64_t step) {  // step: 0-based index of the step being taken
  if (step < o.warmup) return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup);
  const double t = std::min(1.0, static_cast<double>(step - o.warmup) / std::max<double>(1.0, o.steps - o.warmup));
  const double min_lr = o.lr * o.min_lr_ratio;
  return min_lr + 0.5 * (o.lr - min_lr) * (1.0 + std::cos(M_PI * t));
}

Status save_state(const std::string& run_dir, BlockDrafter& m, torch::optim::AdamW& opt, int64_t step,
                  double elapsed_s, int64_t n_tokens) {
  const std::string tmp = run_dir + "/" + checkpoint_name(step) + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return io_error("[drafter] cannot create " + tmp + ": " + ec.message());
  torch::save(m, tmp + "/drafter.pt");
  torch::save(opt, tmp + "/optim.pt");
  nlohmann::json meta = {{"step", step}, {"elapsed_s", elapsed_s}, {"tokens", n_tokens}};
  std::ofstream(tmp + "/meta.json") << meta.dump(1) << "\n";
  std::ofstream(tmp + "/drafter.json") << m->config().to_json() << "\n";
  return commit_checkpoint(run_dir, tmp, step);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string DrafterEvalReport::table() const {
  std::ostringstream s;
  s << "task      seqs  anchors  tau(walk)  tau(anchor)\n";
  auto row = [&](const std::string& name, const DrafterTaskStats& t) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%-8s %5lld %8lld %10.3f %12.3f\n", name.c_str(), (long long)t.n_sequences,
                  (long long)t.n_anchors, t.tau(), t.tau_anchor());
    s << buf;
  };
  for (TaskKind k : kAllTasks) {
    if (tasks[static_cast<size_t>(k)].n_sequences > 0) row(std::string(task_name(k)), tasks[static_cast<size_t>(k)]);
  }
  row("all", all);
  s << "top-1 accuracy by block position:";
  for (size_t r = 0; r < position_acc.size(); ++r) s << " " << (r + 1) << ":" << fmt("%.3f", position_acc[r]);
  s << "\nheld-out weighted loss " << fmt("%.4f", loss) << "\n";
  return s.str();
}

std::string DrafterEvalReport::json() const {
  nlohmann::ordered_json j;
  j["loss"] = loss;
  j["position_acc"] = position_acc;
  auto one = [](const DrafterTaskStats& t) {
    return nlohmann::ordered_json{{"sequences", t.n_sequences}, {"anchors", t.n_anchors}, {"tau", t.tau()},
                                  {"tau_anchor", t.tau_anchor()}};
  };
  for (TaskKind k : kAllTasks) {
    if (tasks[static_cast<size_t>(k)].n_sequences > 0) j["tasks"][std::string(task_name(k))] = one(tasks[static_cast<size_t>(k)]);
  }
  j["all"] = one(all);
  return j.dump();
}

Status train_block_drafter(const DrafterTrainOptions& o) {
  try {
    if (o.threads > 0) torch::set_num_threads(o.threads);
    std::error_code ec;
    fs::create_directories(o.run_dir, ec);
    if (ec) return io_error("[drafter] cannot create " + o.run_dir + ": " + ec.message());
    POCKET_ASSIGN_OR_RETURN(auto cfg, drafter_config_for_target(o.target, o.n_layers, o.taps, o.block));
    POCKET_ASSIGN_OR_RETURN(auto tgt, import_package(o.target));
    POCKET_ASSIGN_OR_RETURN(TargetTaps target, TargetTaps::create(tgt.hparams, tgt.weights, cfg.target_layers));
    POCKET_ASSIGN_OR_RETURN(auto train, read_drafter_data(o.data));
    std::vector<DrafterSequence> held_out;
    if (!o.eval_data.empty()) {
      POCKET_ASSIGN_OR_RETURN(held_out, read_drafter_data(o.eval_data));
    }
    std::vector<size_t> usable;  // sequences with at least one anchor (two generated tokens)
    for (size_t i = 0; i < train.size(); ++i) {
      if (train[i].n_generated() >= 2) usable.push_back(i);
    }
    if (usable.empty()) return invalid_argument("[drafter] no sequence in " + o.data + " has two generated tokens");

    BlockDrafter m(cfg);
    if (!o.init_package.empty()) {
      POCKET_ASSIGN_OR_RETURN(auto init, import_block_drafter(o.init_package));
      // A drafter for an earlier version of the target (the same shape fine-tuned further) is a warm start:
      // everything but the target's fingerprint must match.
      BlockDrafterConfig same_target = init.config;
      same_target.target_fingerprint = cfg.target_fingerprint;
      if (same_target.to_json() != cfg.to_json()) {
        return invalid_argument("[drafter] " + o.init_package + " has another configuration than this run");
      }
      if (init.config.target_fingerprint != cfg.target_fingerprint && !o.quiet) {
        std::fprintf(stderr, "drafter: warm start from %s, a drafter for other weights of the same shape (%s; this "
                             "target is %s)\n", o.init_package.c_str(),
                     fingerprint_string(init.config.target_fingerprint).c_str(),
                     fingerprint_string(cfg.target_fingerprint).c_str());
      }
      POCKET_RETURN_IF_ERROR(m->load_named(init.weights));
    } else if (o.random_init) {
      m->reset_random(o.seed);
    } else {
      m->init_from_target(tgt.weights, tgt.hparams.n_layers, o.seed);
    }
    auto opt = make_adamw(m->parameters(), o.lr, 0.9, 0.95, 1e-8, o.weight_decay);
    int64_t step = 0, n_tokens = 0;
    double elapsed = 0;
    const bool resuming = o.resume && has_checkpoint(o.run_dir);
    if (!o.resume && has_checkpoint(o.run_dir)) {
      return invalid_argument("[drafter] " + o.run_dir + " already holds a checkpoint; pass --resume to continue it");
    }
    if (resuming) {
      POCKET_ASSIGN_OR_RETURN(std::string dir, resolve_checkpoint(o.run_dir));
      std::ifstream cj(dir + "/drafter.json");
      std::stringstream ss;
      ss << cj.rdbuf();
      POCKET_ASSIGN_OR_RETURN(auto saved, BlockDrafterConfig::from_json(ss.str()));
      if (saved.to_json() != cfg.to_json()) {
        return invalid_argument("[drafter] the checkpoint in " + dir + " was trained with another configuration");
      }
      torch::load(m, dir + "/drafter.pt");
      torch::load(*opt, dir + "/optim.pt");
      auto meta = nlohmann::json::parse(std::ifstream(dir + "/meta.json"), nullptr, false);
      if (meta.is_discarded()) return corrupt_file("[drafter] bad meta.json in " + dir);
      step = meta["step"].get<int64_t>();
      elapsed = meta["elapsed_s"].get<double>();
      n_tokens = meta["tokens"].get<int64_t>();
    }
    POCKET_ASSIGN_OR_RETURN(RunLog log, RunLog::open(o.run_dir, o.quiet));
    int64_t n_params = 0;
    for (const auto& p : m->parameters()) n_params += p.numel();
    log.note("drafter: " + std::to_string(cfg.blocks.n_layers) + " layers, " + std::to_string(n_params) +
             " parameters, block " + std::to_string(cfg.block_size) + ", " + std::to_string(usable.size()) +
             " training sequences; " + (resuming ? "resuming at step " + std::to_string(step) : std::string("fresh")));

    const int64_t B = cfg.block_size;
    const auto w = position_weights(B, o.gamma);
    const int64_t n_use = static_cast<int64_t>(usable.size());
    int64_t cached_epoch = -1;
    std::vector<size_t> perm;
    auto seq_at = [&](int64_t g) -> const DrafterSequence* {  // the g-th sequence drawn, epoch by epoch
      const int64_t epoch = g / n_use;
      if (epoch != cached_epoch) {
        perm.resize(usable.size());
        std::iota(perm.begin(), perm.end(), size_t{0});
        std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch));
        std::shuffle(perm.begin(), perm.end(), rng);
        cached_epoch = epoch;
      }
      return &train[usable[perm[static_cast<size_t>(g % n_use)]]];
    };
    auto run_eval = [&](int64_t at_step) {
      if (held_out.empty()) return;
      const auto t = Clock::now();
      m->eval();
      DrafterEvalReport r = evaluate(m, target, held_out, o.eval_seqs, o.gamma);
      m->train();
      log.eval(EvalRecord{at_step, r.loss, -1});
      log.note("eval @ step " + std::to_string(at_step) + " (" + fmt("%.1f", seconds_since(t)) + " s):\n" + r.table());
      std::ofstream(o.run_dir + "/eval.jsonl", std::ios::app)
          << "{\"step\":" << at_step << ",\"eval\":" << r.json() << "}\n";
    };

    double win_loss = 0, win_gnorm = 0;
    int64_t win_steps = 0, win_tokens = 0;
    std::vector<double> win_ok(static_cast<size_t>(B), 0), win_n(static_cast<size_t>(B), 0);
    auto win_t = Clock::now();
    if (step == 0) run_eval(0);
    while (step < o.steps) {
      const auto t_step = Clock::now();
      std::vector<const DrafterSequence*> seqs;
      std::vector<std::vector<int64_t>> picks;
      std::mt19937_64 rng(o.seed * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(step));
      for (int64_t j = 0; j < o.seqs_per_step; ++j) {
        const DrafterSequence* s = seq_at(step * o.seqs_per_step + j);
        std::vector<int64_t> cand(static_cast<size_t>(s->n_generated() - 1));
        std::iota(cand.begin(), cand.end(), static_cast<int64_t>(s->n_prompt));
        const size_t take = std::min<size_t>(cand.size(), static_cast<size_t>(o.anchors_per_seq));
        for (size_t i = 0; i < take; ++i) {  // partial Fisher-Yates
          std::uniform_int_distribution<size_t> u(i, cand.size() - 1);
          std::swap(cand[i], cand[u(rng)]);
        }
        cand.resize(take);
        seqs.push_back(s);
        picks.push_back(std::move(cand));
      }
      const AnchorBatch b = make_batch(seqs, picks, B);
      const double lr = lr_at(o, step);
      for (auto& g : opt->param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
      opt->zero_grad();
      // The LM head and softmax dominate the cost: only the labelled rows go through them.
      auto feats = head_inputs(m, target, b);  // [N, K, B, d]
      const auto flat_labels = b.labels.reshape({-1});
      const auto sel = flat_labels.ge(0).nonzero().squeeze(1);
      const auto lab = flat_labels.index_select(0, sel);
      const auto pos_of = sel.remainder(B);  // block position r - 1 of each labelled row
      auto logits = F::linear(feats.reshape({-1, feats.size(-1)}).index_select(0, sel), target.head());
      auto ce = F::cross_entropy(logits, lab, F::CrossEntropyFuncOptions().reduction(torch::kNone));
      const auto wsel = w.index_select(0, pos_of);
      auto loss = (ce * wsel).sum() / wsel.sum().clamp_min(1e-6);
      loss.backward();
      const double gnorm = torch::nn::utils::clip_grad_norm_(m->parameters(), o.grad_clip);
      opt->step();
      ++step;
      {
        torch::NoGradGuard ng;
        const auto hit = logits.argmax(-1).eq(lab).to(torch::kFloat32);
        const torch::Tensor ok = torch::zeros({B}).index_add_(0, pos_of, hit);
        const torch::Tensor cnt = torch::zeros({B}).index_add_(0, pos_of, torch::ones_like(hit));
        for (int64_t r = 0; r < B; ++r) {
          win_ok[static_cast<size_t>(r)] += ok[r].item<double>();
          win_n[static_cast<size_t>(r)] += cnt[r].item<double>();
        }
        const int64_t n_lab = lab.size(0);
        win_tokens += n_lab;
        n_tokens += n_lab;
      }
      win_loss += loss.item<double>();
      win_gnorm += gnorm;
      ++win_steps;
      elapsed += seconds_since(t_step);
      if (step % o.log_every == 0 || step == o.steps) {
        StepRecord rec;
        rec.step = step;
        rec.loss = win_loss / static_cast<double>(win_steps);
        rec.lr = lr;
        rec.grad_norm = win_gnorm / static_cast<double>(win_steps);
        rec.tokens = n_tokens;
        rec.tokens_per_s = static_cast<double>(win_tokens) / std::max(1e-9, seconds_since(win_t));
        rec.elapsed_s = elapsed;
        log.step(rec, o.steps);
        std::string acc = "train top-1 by block position:";
        for (int64_t r = 0; r < B; ++r) {
          acc += " " + fmt("%.3f", win_ok[static_cast<size_t>(r)] / std::max(1.0, win_n[static_cast<size_t>(r)]));
        }
        log.note(acc);
        win_loss = win_gnorm = 0;
        win_steps = win_tokens = 0;
        std::fill(win_ok.begin(), win_ok.end(), 0);
        std::fill(win_n.begin(), win_n.end(), 0);
        win_t = Clock::now();
      }
      if (o.eval_every > 0 && step % o.eval_every == 0 && step < o.steps) run_eval(step);
      const bool interrupt = o.stop_at > 0 && step == o.stop_at;
      if ((o.ckpt_every > 0 && step % o.ckpt_every == 0) || step == o.steps || interrupt) {
        POCKET_RETURN_IF_ERROR(save_state(o.run_dir, m, *opt, step, elapsed, n_tokens));
      }
      if (interrupt) return Status::ok();
    }
    run_eval(step);
    (void)log.plot();
    const auto named = m->to_named();
    POCKET_RETURN_IF_ERROR(export_block_drafter(cfg, named, o.target, DType::kF32, o.run_dir + "/drafter-f32.pocket"));
    for (const auto& t : o.export_types) {
      auto dt = parse_quant_type(t);
      if (!dt) return invalid_argument("[drafter] unknown export type '" + t + "'");
      POCKET_RETURN_IF_ERROR(export_block_drafter(cfg, named, o.target, *dt, o.run_dir + "/drafter-" + t + ".pocket"));
    }
    log.note("drafter: exported " + o.run_dir + "/drafter-f32.pocket after " + std::to_string(step) + " steps, " +
             format_duration(elapsed) + " of training");
    return Status::ok();
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("[drafter] libtorch: ") + e.what());
  }
}

Expected<DrafterEvalReport> evaluate_drafter_package(const std::string& drafter_path, const std::string& target_path,
                                                     const std::string& data_path, int64_t limit, int32_t threads,
                                                     double gamma) {
  try {
    if (threads > 0) torch::set_num_threads(threads);
    POCKET_ASSIGN_OR_RETURN(auto d, import_block_drafter(drafter_path));
    POCKET_ASSIGN_OR_RETURN(auto tgt, import_package(target_path));
    POCKET_ASSIGN_OR_RETURN(auto target_model, Model::load(target_path));
    POCKET_RETURN_IF_ERROR(d.config.check_target(*target_model));
    POCKET_ASSIGN_OR_RETURN(TargetTaps target, TargetTaps::create(tgt.hparams, tgt.weights, d.config.target_layers));
    POCKET_ASSIGN_OR_RETURN(auto seqs, read_drafter_data(data_path));
    BlockDrafter m(d.config);
    POCKET_RETURN_IF_ERROR(m->load_named(d.weights));
    m->eval();
    return evaluate(m, target, seqs, limit, gamma);
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("[drafter] libtorch: ") + e.what());
  }
}

}  // namespace pocket::train
