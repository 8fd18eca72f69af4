// MOPD: routing, the distillation loss and the training loop over student samples (mopd.h). Logging,
// checkpoints, resume, the schedule and data parallelism are the trainer's (RunLog, commit_checkpoint,
// lr_at, DistGroup, train_state.h).
#include "nn/mopd.h"

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "nn/answers.h"
#include "nn/distributed.h"
#include "nn/llama_torch.h"
#include "nn/sampler.h"
#include "nn/train_state.h"
#include "nn/trainer.h"

namespace pocket::train {

Expected<TeacherSpec> parse_teacher_spec(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    if (text.empty()) return invalid_argument("[mopd] empty --teacher");
    return TeacherSpec{"generalist", std::string(text)};
  }
  TeacherSpec s{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  if (s.checkpoint.empty()) return invalid_argument("[mopd] --teacher '" + std::string(text) + "' names no checkpoint");
  return s;
}

Expected<TeacherRouter> TeacherRouter::create(const std::vector<TeacherSpec>& specs) {
  if (specs.empty()) return invalid_argument("[mopd] no teacher given (--teacher TASK=CKPT or --teacher generalist=CKPT)");
  TeacherRouter r;
  r.by_task_.fill(kNone);
  size_t generalist = kNone;
  auto index_of = [&](const std::string& ckpt) {
    for (size_t i = 0; i < r.checkpoints_.size(); ++i) {
      if (r.checkpoints_[i] == ckpt) return i;
    }
    r.checkpoints_.push_back(ckpt);
    return r.checkpoints_.size() - 1;
  };
  for (const auto& s : specs) {
    if (s.domain == "generalist") {
      if (generalist != kNone) return invalid_argument("[mopd] two generalist teachers given");
      generalist = index_of(s.checkpoint);
      continue;
    }
    auto t = parse_task_kind(s.domain);
    if (!t) return invalid_argument("[mopd] teacher domain '" + s.domain + "': expected a task (extract, intent, "
                                    "rewrite, tool, route) or generalist");
    size_t& slot = r.by_task_[static_cast<size_t>(*t)];
    if (slot != kNone) return invalid_argument("[mopd] two teachers given for " + s.domain);
    slot = index_of(s.checkpoint);
  }
  for (size_t& slot : r.by_task_) {
    if (slot == kNone) slot = generalist;
  }
  return r;
}

Expected<size_t> TeacherRouter::route(TaskKind t) const {
  const size_t i = by_task_[static_cast<size_t>(t)];
  if (i == kNone) {
    return invalid_argument("[mopd] no teacher for task " + std::string(task_name(t)) + " (give --teacher " +
                            std::string(task_name(t)) + "=CKPT or a generalist)");
  }
  return i;
}

std::string TeacherRouter::describe() const {
  std::string s;
  for (TaskKind t : kAllTasks) {
    const size_t i = by_task_[static_cast<size_t>(t)];
    s += (s.empty() ? "" : ", ") + std::string(task_name(t)) + " -> " + (i == kNone ? "(none)" : checkpoints_[i]);
  }
  return s;
}

std::string MopdConfig::to_json() const {
  nlohmann::json t = nlohmann::json::array();
  for (const auto& s : teachers) t.push_back({{"domain", s.domain}, {"checkpoint", s.checkpoint}});
  return nlohmann::json{{"teachers", t},
                        {"max_new_tokens", max_new_tokens},
                        {"temperature", temperature},
                        {"forward_kl_weight", forward_kl_weight},
                        {"train", nlohmann::json::parse(train.to_json())}}
      .dump(1);
}

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Status torch_error(const std::exception& e) {
  return Status(ErrorCode::kInternal, std::string("[mopd] libtorch: ") + e.what());
}

// Per-position distillation loss over the last dimension: (1 - w) KL(p_s || p_t) + w KL(p_t || p_s), in
// nats, [..., V] -> [...]. The teacher's logits carry no gradient.
torch::Tensor distill_kl(const torch::Tensor& student_logits, const torch::Tensor& teacher_logits, double w) {
  const auto ls = torch::log_softmax(student_logits, -1);
  const auto lt = torch::log_softmax(teacher_logits.detach(), -1);
  auto loss = (ls.exp() * (ls - lt)).sum(-1);
  if (w > 0) loss = (1 - w) * loss + w * (lt.exp() * (lt - ls)).sum(-1);
  return loss;
}

// The sampling seed of one prompt of a step from the run seed, the step and the prompt's row in the step's
// global batch, so a resumed run samples what the uninterrupted one did and N processes sample what one
// process does (std::seed_seq and mt19937_64 are specified bit for bit by the standard).
uint64_t draw_seed(uint64_t seed, int64_t step, int64_t row) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(step),
                    static_cast<uint32_t>(row), 0x4d4f5044u /* "MOPD" */};
  std::mt19937_64 g(seq);
  return g();
}

// The prompts in a per-epoch order drawn from (seed, epoch); LoaderState is the position, saved in every
// checkpoint as the batch loader's is.
class PromptOrder {
 public:
  PromptOrder(size_t n, uint64_t seed) : n_(n), seed_(seed) { reshuffle(); }
  void set_state(const LoaderState& s) {
    state_ = s;
    reshuffle();
  }
  const LoaderState& state() const { return state_; }
  // The next `n` prompt indices, wrapping into the next epoch.
  std::vector<size_t> next(int64_t n) {
    std::vector<size_t> out;
    while (static_cast<int64_t>(out.size()) < n) {
      if (state_.next_row >= n_) {
        ++state_.epoch;
        state_.next_row = 0;
        reshuffle();
      }
      out.push_back(order_[state_.next_row++]);
    }
    return out;
  }

 private:
  void reshuffle() {
    order_.resize(n_);
    for (size_t i = 0; i < n_; ++i) order_[i] = i;
    std::seed_seq seq{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32),
                      static_cast<uint32_t>(state_.epoch), 0x4f524452u};
    std::mt19937_64 g(seq);
    for (size_t i = n_; i > 1; --i) std::swap(order_[i - 1], order_[static_cast<size_t>(g() % i)]);
  }
  size_t n_;
  uint64_t seed_;
  LoaderState state_;
  std::vector<size_t> order_;
};

struct Prompt {
  int64_t example;  // index among the data files' examples
  TaskKind task;
  size_t teacher;
  std::vector<int32_t> ids;
};

struct Teacher {
  std::string path;
  Llama model{nullptr};
};

// One micro-batch: the student's samples and the routing of each row.
struct Micro {
  SampledBatch batch;
  std::vector<size_t> prompt_index;
};

// Teacher logits at every column of the batch, [B, T, V]: each teacher runs on the rows routed to it.
torch::Tensor teacher_logits(std::vector<Teacher>& teachers, const std::vector<Prompt>& prompts, const Micro& m,
                             torch::Device dev, int64_t n_vocab) {
  torch::NoGradGuard no_grad;
  const SampledBatch& b = m.batch;
  auto out = torch::empty({b.inputs.size(0), b.inputs.size(1), n_vocab}, torch::TensorOptions().device(dev));
  for (size_t t = 0; t < teachers.size(); ++t) {
    std::vector<int64_t> rows;
    for (size_t r = 0; r < m.prompt_index.size(); ++r) {
      if (prompts[m.prompt_index[r]].teacher == t) rows.push_back(static_cast<int64_t>(r));
    }
    if (rows.empty()) continue;
    auto idx = torch::tensor(rows, torch::kInt64);
    auto logits = teachers[t].model->forward(b.inputs.index_select(0, idx).to(dev), b.positions.index_select(0, idx).to(dev),
                                             b.segments.index_select(0, idx).to(dev));
    out.index_copy_(0, idx.to(dev), logits);
  }
  return out;
}

// The loss of one micro-batch: per-row sums of the per-token loss over the answer tokens, [B], differentiable
// through the student. The KL runs on the answer positions only ([n_answer_tokens, V], gathered), not on
// every column of the padded batch.
torch::Tensor micro_loss_rows(Llama& student, std::vector<Teacher>& teachers, const std::vector<Prompt>& prompts,
                              const Micro& m, double fkl_weight) {
  const torch::Device dev = student->device();
  const SampledBatch& b = m.batch;
  const int64_t B = b.inputs.size(0), T = b.inputs.size(1);
  auto s_logits = student->forward(b.inputs.to(dev), b.positions.to(dev), b.segments.to(dev));  // [B, T, V]
  const int64_t V = s_logits.size(-1);
  auto t_logits = teacher_logits(teachers, prompts, m, dev, V);                                  // [B, T, V]
  auto at = b.mask.view({-1}).nonzero().view({-1}).to(dev);  // flat answer positions, row-major
  auto kl = distill_kl(s_logits.view({-1, V}).index_select(0, at), t_logits.view({-1, V}).index_select(0, at),
                       fkl_weight);                                                                // [n_answer_tokens]
  return torch::zeros({B}, kl.options()).index_add(0, torch::div(at, T, "floor"), kl);
}

Expected<std::vector<TaskExample>> read_task_files(const std::vector<std::string>& files) {
  std::vector<TaskExample> all;
  for (const auto& f : files) {
    POCKET_ASSIGN_OR_RETURN(auto bytes, read_binary_file(f));
    POCKET_ASSIGN_OR_RETURN(auto ex, parse_task_examples_jsonl(std::string(bytes.begin(), bytes.end()), f));
    all.insert(all.end(), ex.begin(), ex.end());
  }
  return all;
}

Expected<MopdSummary> mopd_impl(const MopdConfig& mc, const DistOptions& dist) {
  TrainConfig cfg = mc.train;
  cfg.stage = Stage::kSft;
  if (cfg.init_from.empty()) {
    if (!has_checkpoint(cfg.out_dir)) return invalid_argument("[mopd] no student given (--student CKPT)");
    cfg.init_from = cfg.out_dir;  // resuming: the model comes from the run's own checkpoint
  }
  POCKET_RETURN_IF_ERROR(cfg.validate());
  if (mc.max_new_tokens < 1) return invalid_argument("[mopd] max_new_tokens must be >= 1");
  if (!(mc.temperature >= 0)) return invalid_argument("[mopd] temperature must be >= 0");
  if (!(mc.forward_kl_weight >= 0 && mc.forward_kl_weight <= 1)) return invalid_argument("[mopd] forward_kl_weight must be in [0, 1]");
  POCKET_ASSIGN_OR_RETURN(TeacherRouter router, TeacherRouter::create(mc.teachers));
  if (cfg.threads > 0) torch::set_num_threads(cfg.threads);
  POCKET_ASSIGN_OR_RETURN(auto group, DistGroup::create(dist));
  const bool lead = group->rank() == 0;
  std::error_code ec;
  fs::create_directories(cfg.out_dir, ec);
  if (ec) return io_error("[mopd] cannot create " + cfg.out_dir + ": " + ec.message());

  // The student: this run's own checkpoint (resume) or the --student checkpoint.
  const bool resume = has_checkpoint(cfg.out_dir);
  CheckpointMeta meta;
  std::string resume_dir;
  std::vector<uint8_t> tokenizer;
  LoadedCheckpoint base;
  if (resume) {
    POCKET_ASSIGN_OR_RETURN(resume_dir, resolve_checkpoint(cfg.out_dir));
    POCKET_ASSIGN_OR_RETURN(meta, read_checkpoint_meta(resume_dir));
    cfg.model = meta.hparams;
    POCKET_ASSIGN_OR_RETURN(tokenizer, read_binary_file(resume_dir + "/tokenizer.bin"));
  } else {
    POCKET_ASSIGN_OR_RETURN(base, load_checkpoint(cfg.init_from));
    cfg.model = base.meta.hparams;
    tokenizer = base.tokenizer;
  }
  if (cfg.chat_template.empty()) cfg.chat_template = resume ? meta.config.chat_template : base.meta.config.chat_template;
  POCKET_ASSIGN_OR_RETURN(auto tok, load_tokenizer_section(tokenizer));
  torch::Device device(torch::kCPU);
  if (cfg.device != "cpu") {
    if (!torch_cuda_available()) {
      return Status(ErrorCode::kUnsupported, "[mopd] device '" + cfg.device + "': no usable CUDA device here");
    }
    device = torch::Device(cfg.device);
  }

  // Teachers share the student's tokenizer: the KL compares distributions over the same token ids.
  std::vector<Teacher> teachers;
  for (const auto& path : router.checkpoints()) {
    POCKET_ASSIGN_OR_RETURN(LoadedCheckpoint t, load_checkpoint(path));
    if (t.tokenizer != tokenizer || t.meta.hparams.n_vocab != cfg.model.n_vocab) {
      return invalid_argument("[mopd] teacher " + path + " has another tokenizer than the student (n_vocab " +
                              std::to_string(t.meta.hparams.n_vocab) + " vs " + std::to_string(cfg.model.n_vocab) +
                              "); the KL needs the same token ids");
    }
    Teacher tt{path, Llama(t.meta.hparams)};
    POCKET_RETURN_IF_ERROR(tt.model->load_named(t.weights));
    tt.model->to(device);
    tt.model->eval();
    for (auto& p : tt.model->parameters()) p.set_requires_grad(false);
    teachers.push_back(std::move(tt));
  }

  // Prompts, tokenised once; those that leave no room for an answer in either model's context are dropped.
  POCKET_ASSIGN_OR_RETURN(auto examples, read_task_files(cfg.data));
  std::vector<Prompt> prompts;
  int64_t too_long = 0;
  int64_t n_ctx = cfg.model.n_ctx_train;
  for (const auto& t : teachers) n_ctx = std::min(n_ctx, t.model->hparams().n_ctx_train);
  for (size_t i = 0; i < examples.size(); ++i) {
    const TaskExample& e = examples[i];
    POCKET_ASSIGN_OR_RETURN(size_t teacher, router.route(e.task));
    POCKET_ASSIGN_OR_RETURN(auto ids, encode_task_prompt(*tok, cfg.chat_template, e));
    if (static_cast<int64_t>(ids.size()) >= n_ctx) {
      ++too_long;
      continue;
    }
    prompts.push_back({static_cast<int64_t>(i), e.task, teacher, std::move(ids)});
  }
  if (prompts.empty()) return invalid_argument("[mopd] no usable prompts in the data");
  // Held-out prompts for the periodic evaluation: a fixed draw, never trained on.
  std::vector<Prompt> heldout;
  if (cfg.eval_interval > 0 && cfg.heldout_fraction > 0 && prompts.size() > 1) {
    const auto n_held = std::min<int64_t>(cfg.eval_rows, std::max<int64_t>(1, static_cast<int64_t>(
                                                                              cfg.heldout_fraction * static_cast<double>(prompts.size()))));
    PromptOrder pick(prompts.size(), cfg.seed ^ 0x48454c44ull);
    auto idx = pick.next(n_held);
    std::sort(idx.begin(), idx.end());
    for (auto it = idx.rbegin(); it != idx.rend(); ++it) {
      heldout.push_back(std::move(prompts[*it]));
      prompts.erase(prompts.begin() + static_cast<std::ptrdiff_t>(*it));
    }
  }

  torch::manual_seed(cfg.seed);
  Llama model(cfg.model);
  model->reset_parameters(cfg.seed);
  if (!resume) POCKET_RETURN_IF_ERROR(model->load_named(base.weights));
  model->to(device);
  auto opt = make_adamw(model, cfg);
  PromptOrder order(prompts.size(), cfg.seed);
  if (resume) {
    POCKET_RETURN_IF_ERROR(load_train_state(resume_dir, model, *opt, device));
    order.set_state(meta.loader);
  }
  model->train();

  std::unique_ptr<RunLog> log;
  if (lead) {
    POCKET_ASSIGN_OR_RETURN(RunLog l, RunLog::open(cfg.out_dir, cfg.quiet));
    log = std::make_unique<RunLog>(std::move(l));
    std::ofstream(cfg.out_dir + "/mopd.json") << mc.to_json() << "\n";
    log->note(std::string(resume ? "resuming" : "starting") + " MOPD of a " + std::to_string(cfg.model.n_params()) +
              "-parameter student at step " + std::to_string(meta.step) + " of " + std::to_string(cfg.max_steps) + "; " +
              std::to_string(cfg.global_rows(group->world())) + " prompts per step on " +
              std::to_string(group->world()) + " process(es), up to " + std::to_string(mc.max_new_tokens) +
              " answer tokens at temperature " + std::to_string(mc.temperature) + "; " + std::to_string(prompts.size()) +
              " training prompts, " + std::to_string(heldout.size()) + " held out" +
              (too_long > 0 ? ", " + std::to_string(too_long) + " too long for the context dropped" : "") +
              "; teachers: " + router.describe());
  }

  SampleOptions so;
  so.max_new_tokens = mc.max_new_tokens;
  so.temperature = mc.temperature;
  so.stop_ids = end_of_turn_ids(*tok);
  // Samples the prompts pool[idx[k]]; the k-th draws with the seed of global row first_row + k of `at_step`.
  auto sample_micro = [&](const std::vector<Prompt>& pool, const std::vector<size_t>& idx, int64_t at_step,
                          int64_t first_row) {
    Micro m;
    m.prompt_index = idx;
    std::vector<std::vector<int32_t>> ids;
    std::vector<uint64_t> seeds;
    for (size_t k = 0; k < idx.size(); ++k) {
      ids.push_back(pool[idx[k]].ids);
      seeds.push_back(draw_seed(cfg.seed, at_step, first_row + static_cast<int64_t>(k)));
    }
    m.batch = sample_batch(model, ids, so, seeds);
    return m;
  };

  MopdSummary sum;
  sum.first_step = meta.step;
  std::vector<torch::Tensor> params = model->parameters();
  const int64_t world = group->world(), rank = group->rank();
  const int64_t rows_global = cfg.micro_batch * world;
  const auto run_start = Clock::now();
  auto interval_start = Clock::now();
  int64_t interval_tokens = 0, run_tokens = 0;
  double train_seconds = 0;
  int64_t step = meta.step;
  // Per-teacher loss and answer tokens over the log interval (this process), for the progress notes.
  std::vector<double> iv_kl(teachers.size(), 0);
  std::vector<int64_t> iv_tokens(teachers.size(), 0), iv_samples(teachers.size(), 0);

  auto evaluate = [&](int64_t at_step) {
    torch::NoGradGuard no_grad;
    model->eval();
    double kl = 0;
    int64_t n = 0;
    for (size_t start = 0; start < heldout.size(); start += static_cast<size_t>(cfg.micro_batch)) {
      std::vector<size_t> idx;
      for (size_t i = start; i < std::min(heldout.size(), start + static_cast<size_t>(cfg.micro_batch)); ++i) idx.push_back(i);
      Micro m = sample_micro(heldout, idx, -1, static_cast<int64_t>(start));  // the same draws at every evaluation
      kl += micro_loss_rows(model, teachers, heldout, m, mc.forward_kl_weight).sum().item<double>();
      n += static_cast<int64_t>(m.batch.mask.sum().item<double>());
    }
    model->train();
    EvalRecord r;
    r.step = at_step;
    r.loss = n > 0 ? kl / static_cast<double>(n) : 0;
    log->eval(r);
    sum.evals.push_back(r);
  };

  while (step < cfg.max_steps) {
    const auto step_start = Clock::now();
    const double lr = lr_at(cfg, step);
    for (auto& g : opt->param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    // Sample every micro-batch with the weights of this step, then take the gradient of the loss on them.
    std::vector<Micro> micro;
    int64_t local_count = 0, local_tokens = 0;
    model->eval();
    for (int64_t a = 0; a < cfg.grad_accum; ++a) {
      auto global = order.next(rows_global);
      std::vector<size_t> mine(global.begin() + rank * cfg.micro_batch, global.begin() + (rank + 1) * cfg.micro_batch);
      micro.push_back(sample_micro(prompts, mine, step, a * rows_global + rank * cfg.micro_batch));
      local_count += static_cast<int64_t>(micro.back().batch.mask.sum().item<double>());
      local_tokens += micro.back().batch.n_tokens;
    }
    model->train();
    // Normalise by the answer tokens of the whole global batch, so 1 and N processes take the same gradient.
    auto counts = torch::tensor({static_cast<double>(local_count), static_cast<double>(local_tokens)}, torch::kFloat64);
    group->all_reduce_sum(counts);
    const double global_count = std::max(1.0, counts[0].item<double>());
    const auto step_tokens = static_cast<int64_t>(counts[1].item<double>());
    opt->zero_grad();
    double loss_sum = 0;
    for (const Micro& m : micro) {
      auto rows = micro_loss_rows(model, teachers, prompts, m, mc.forward_kl_weight);  // [B]
      auto l = rows.sum();
      loss_sum += l.item<double>();
      (l / global_count).backward();
      auto rows_cpu = rows.detach().to(torch::kCPU, torch::kFloat64);
      for (size_t r = 0; r < m.prompt_index.size(); ++r) {
        const Prompt& p = prompts[m.prompt_index[r]];
        MopdSample s;
        s.step = step + 1;
        s.example = p.example;
        s.task = p.task;
        s.teacher = p.teacher;
        s.n_tokens = static_cast<int64_t>(m.batch.answers[r].size());
        s.kl_sum = rows_cpu[static_cast<int64_t>(r)].item<double>();
        s.stopped = m.batch.stopped[r];
        s.answer = m.batch.answers[r];
        iv_kl[p.teacher] += s.kl_sum;
        iv_tokens[p.teacher] += s.n_tokens;
        iv_samples[p.teacher] += 1;
        sum.samples.push_back(s);
      }
    }
    std::vector<torch::Tensor> grads;
    for (auto& p : params) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad());
    }
    auto loss_t = torch::tensor({loss_sum}, torch::kFloat64);
    if (world > 1) {
      group->all_reduce_sum(grads);
      group->all_reduce_sum(loss_t);
    }
    const double grad_norm =
        torch::nn::utils::clip_grad_norm_(params, cfg.grad_clip > 0 ? cfg.grad_clip : std::numeric_limits<double>::max());
    opt->step();
    ++step;
    interval_tokens += step_tokens;
    run_tokens += step_tokens;
    meta.tokens += step_tokens;
    train_seconds += seconds_since(step_start);
    StepRecord rec;
    rec.step = step;
    rec.loss = loss_t.item<double>() / global_count;
    rec.lr = lr;
    rec.grad_norm = grad_norm;
    rec.tokens = meta.tokens;
    rec.elapsed_s = meta.elapsed_s + train_seconds;
    sum.steps.push_back(rec);
    if (lead && (step % cfg.log_interval == 0 || step == cfg.max_steps)) {
      rec.tokens_per_s = static_cast<double>(interval_tokens) / std::max(1e-9, seconds_since(interval_start));
      log->step(rec, cfg.max_steps);
      std::ostringstream note;
      note << "step " << step << " KL/token by teacher (this process):";
      for (size_t t = 0; t < teachers.size(); ++t) {
        if (iv_samples[t] == 0) continue;
        note << " [" << t << "] " << (iv_tokens[t] > 0 ? iv_kl[t] / static_cast<double>(iv_tokens[t]) : 0.0) << " ("
             << iv_samples[t] << " samples, " << static_cast<double>(iv_tokens[t]) / static_cast<double>(iv_samples[t])
             << " tokens each)";
      }
      log->note(note.str());
      std::fill(iv_kl.begin(), iv_kl.end(), 0.0);
      std::fill(iv_tokens.begin(), iv_tokens.end(), 0);
      std::fill(iv_samples.begin(), iv_samples.end(), 0);
      interval_tokens = 0;
      interval_start = Clock::now();
    }
    const bool stopping = step == cfg.max_steps || (cfg.stop_after > 0 && step >= cfg.stop_after);
    if (lead && !heldout.empty() && (step % cfg.eval_interval == 0 || step == cfg.max_steps)) {
      evaluate(step);
      interval_start = Clock::now();
    }
    if (lead && (step % cfg.ckpt_interval == 0 || stopping)) {
      CheckpointMeta m;
      m.step = step;
      m.loader = order.state();
      m.tokens = meta.tokens;
      m.elapsed_s = meta.elapsed_s + train_seconds;
      m.config = cfg;
      m.hparams = cfg.model;
      POCKET_RETURN_IF_ERROR(save_train_state(cfg.out_dir, model, *opt, m, tokenizer, {{"mopd.json", mc.to_json()}},
                                              &sum.checkpoint));
      interval_start = Clock::now();
    }
    if (stopping) break;
  }
  sum.steps_done = step;
  sum.tokens_per_s = static_cast<double>(run_tokens) / std::max(1e-9, train_seconds);
  if (lead) {
    log->note("done: step " + std::to_string(step) + ", " + std::to_string(static_cast<int64_t>(sum.tokens_per_s)) +
              " tokens/s over " + format_duration(seconds_since(run_start)) + " (training " +
              format_duration(train_seconds) + "); checkpoint " + sum.checkpoint);
    if (cfg.plot) {
      Status st = log->plot();
      if (!st.is_ok()) log->note(st.message());
    }
  }
  group->barrier();
  return sum;
}

}  // namespace

Expected<MopdSummary> run_mopd(const MopdConfig& cfg, const DistOptions& dist) {
  try {
    return mopd_impl(cfg, dist);
  } catch (const std::exception& e) {
    return torch_error(e);
  }
}

Expected<DistillTerms> mopd_distill_terms(std::span<const float> student, std::span<const float> teacher,
                                          int64_t n_vocab, std::span<const uint8_t> mask, double forward_kl_weight) {
  const auto n = static_cast<int64_t>(mask.size());
  if (n_vocab < 1 || student.size() != static_cast<size_t>(n * n_vocab) || teacher.size() != student.size()) {
    return invalid_argument("[mopd] distill terms: " + std::to_string(student.size()) + " student and " +
                            std::to_string(teacher.size()) + " teacher logits for " + std::to_string(n) +
                            " positions of " + std::to_string(n_vocab));
  }
  try {
    auto s = torch::tensor(std::vector<float>(student.begin(), student.end())).view({n, n_vocab}).set_requires_grad(true);
    auto t = torch::tensor(std::vector<float>(teacher.begin(), teacher.end())).view({n, n_vocab});
    std::vector<float> mf(mask.begin(), mask.end());
    auto m = torch::tensor(mf).view({n});
    auto per = distill_kl(s, t, forward_kl_weight) * m;
    auto total = per.sum();
    total.backward();
    DistillTerms r;
    r.loss_sum = total.item<double>();
    r.n_tokens = static_cast<int64_t>(m.sum().item<double>());
    auto pd = per.detach().to(torch::kFloat64).contiguous();
    r.per_position.assign(pd.data_ptr<double>(), pd.data_ptr<double>() + n);
    auto g = s.grad().contiguous();
    r.grad.assign(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
    return r;
  } catch (const std::exception& e) {
    return torch_error(e);
  }
}

}  // namespace pocket::train
