// The training loop (AdamW, warm-up + cosine schedule, clipping, accumulation, data parallelism, periodic
// held-out evaluation, checkpoint/resume) and checkpoint evaluation, over the libtorch model.
#include "nn/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/batch_loader.h"
#include "data/chat_data.h"
#include "nn/distributed.h"
#include "nn/llama_torch.h"
#include "nn/train_state.h"
#include "tokenizer/tokenizer.h"

namespace pocket::train {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Status torch_error(const std::exception& e) {
  return Status(ErrorCode::kInternal, std::string("[train] libtorch: ") + e.what());
}

torch::Tensor to_long(const std::vector<int32_t>& v, int64_t rows, int64_t cols) {
  return torch::from_blob(const_cast<int32_t*>(v.data()), {rows, cols}, torch::kInt32).to(torch::kInt64);
}

// Per-target cross-entropy times the mask, summed: [] f32 (the caller divides by the token count). SFT rows
// carry segments and positions, so each packed example attends only to itself, from position 0; pretraining
// rows have neither and take the model's plain causal path.
torch::Tensor masked_loss_sum(Llama& model, const Batch& b) {
  const torch::Device dev = model->device();  // the batch goes where the model is
  torch::Tensor positions, segments;
  if (b.has_segments()) {
    positions = to_long(b.positions, b.rows, b.cols).to(dev);
    segments = to_long(b.segments, b.rows, b.cols).to(dev);
  }
  auto logits = model->forward(to_long(b.inputs, b.rows, b.cols).to(dev), positions, segments);
  auto ce = torch::nn::functional::cross_entropy(
      logits.view({-1, logits.size(-1)}), to_long(b.targets, b.rows, b.cols).to(dev).view({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  auto mask = torch::from_blob(const_cast<uint8_t*>(b.mask.data()), {b.rows * b.cols}, torch::kUInt8)
                  .to(dev, torch::kFloat32);
  return (ce * mask).sum();
}

LoaderOptions loader_options(const TrainConfig& c, Split split, bool examples) {
  LoaderOptions o;
  o.seq_len = c.seq_len;
  o.seed = c.seed;
  o.heldout_fraction = c.heldout_fraction;
  o.split = split;
  o.packing = examples ? Packing::kExamples : Packing::kStream;
  return o;
}

// Mean held-out loss over up to `rows` rows (the same rows every time: the held-out split is not shuffled).
std::pair<double, int64_t> heldout_loss(Llama& model, BatchLoader& loader, int64_t rows, int64_t micro_batch) {
  torch::NoGradGuard no_grad;
  loader.set_state({});
  rows = std::min<int64_t>(rows, static_cast<int64_t>(loader.rows_per_epoch()));
  double sum = 0;
  int64_t n = 0;
  for (int64_t done = 0; done < rows;) {
    const int64_t take = std::min(micro_batch, rows - done);
    Batch b = loader.next(take);
    sum += masked_loss_sum(model, b).item<double>();
    n += b.n_loss_tokens();
    done += take;
  }
  return {n > 0 ? sum / static_cast<double>(n) : 0.0, n};
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  const size_t a = s.find_first_not_of(ws);
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(ws) - a + 1);
}

// Greedy continuation of `prompt` until a stop token or `max_new` tokens (no KV cache: small models only).
std::string greedy_answer(Llama& model, const Tokenizer& tok, const std::vector<int32_t>& prompt, int64_t max_new,
                          const std::vector<int32_t>& stops) {
  torch::NoGradGuard no_grad;
  std::vector<int32_t> ids = prompt;
  std::vector<int32_t> out;
  const int64_t n_ctx = model->hparams().n_ctx_train;
  for (int64_t i = 0; i < max_new && static_cast<int64_t>(ids.size()) < n_ctx; ++i) {
    auto logits = model->forward(to_long(ids, 1, static_cast<int64_t>(ids.size())).to(model->device()));
    const auto next = static_cast<int32_t>(logits[0][-1].argmax().item<int64_t>());
    if (std::find(stops.begin(), stops.end(), next) != stops.end()) break;
    ids.push_back(next);
    out.push_back(next);
  }
  return tok.decode(out);
}

std::vector<int32_t> stop_ids(const Tokenizer& tok) {
  std::vector<int32_t> s;
  if (tok.eos_id() >= 0) s.push_back(tok.eos_id());
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.token_type(id) == TokenType::kControl && (tok.piece_text(id) == "<|im_end|>" || tok.piece_text(id) == "<|eot_id|>")) {
      s.push_back(id);
    }
  }
  return s;
}

// Exact-match accuracy of greedy answers to the conversations in `jsonl` (the SFT evaluation hook).
Expected<std::pair<double, std::vector<std::string>>> answer_accuracy(Llama& model, const Tokenizer& tok,
                                                                      const std::string& tmpl, const std::string& jsonl,
                                                                      int64_t max_examples, int64_t max_new,
                                                                      int64_t* n_out) {
  POCKET_ASSIGN_OR_RETURN(auto bytes, read_binary_file(jsonl));
  POCKET_ASSIGN_OR_RETURN(auto convs, parse_conversations_jsonl(std::string(bytes.begin(), bytes.end()), jsonl));
  const auto stops = stop_ids(tok);
  int64_t n = 0, right = 0;
  std::vector<std::string> samples;
  for (const auto& c : convs) {
    if (n >= max_examples) break;
    if (c.empty() || c.back().role != "assistant") continue;
    POCKET_ASSIGN_OR_RETURN(std::string prompt, render_prompt(tmpl, c));
    std::vector<int32_t> ids;
    POCKET_RETURN_IF_ERROR(tok.encode(prompt, EncodeOptions{.add_bos = true, .parse_special = true}, &ids));
    const std::string got = trim(greedy_answer(model, tok, ids, max_new, stops));
    right += got == trim(c.back().content);
    if (samples.size() < 4) samples.push_back(c[c.size() - 2].content + " -> " + got);
    ++n;
  }
  *n_out = n;
  return std::make_pair(n > 0 ? static_cast<double>(right) / static_cast<double>(n) : 0.0, samples);
}

Status save_checkpoint(const std::string& run_dir, Llama& model, torch::optim::AdamW& opt, const CheckpointMeta& meta,
                       const std::vector<uint8_t>& tokenizer, std::string* committed) {
  const std::string tmp = run_dir + "/" + checkpoint_name(meta.step) + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return io_error("[train] cannot create " + tmp + ": " + ec.message());
  torch::save(model, tmp + "/model.pt");
  torch::save(opt, tmp + "/optim.pt");
  auto gen = at::detail::getDefaultCPUGenerator();
  torch::Tensor rng_state;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    rng_state = gen.get_state();
  }
  torch::save(rng_state, tmp + "/rng.pt");
  POCKET_RETURN_IF_ERROR(write_checkpoint_meta(tmp, meta));
  POCKET_RETURN_IF_ERROR(write_binary_file(tmp + "/tokenizer.bin", tokenizer));
  POCKET_RETURN_IF_ERROR(commit_checkpoint(run_dir, tmp, meta.step));
  *committed = run_dir + "/" + checkpoint_name(meta.step);
  return Status::ok();
}

}  // namespace

bool torch_cuda_available() { return torch::cuda::is_available(); }

namespace {

// The device named by TrainConfig::device (validated there), or why it cannot be used here.
Status training_device(const std::string& name, torch::Device* out) {
  if (name == "cpu") {
    *out = torch::Device(torch::kCPU);
    return Status::ok();
  }
  if (!torch::cuda::is_available()) {
    return Status(ErrorCode::kUnsupported,
                  "[train] device '" + name + "': no usable CUDA device (this libtorch is built without CUDA, as "
                  "Debian's libtorch-dev is, or no GPU is visible); see docs/training.md, 'On a machine with a GPU'");
  }
  const torch::Device d(name);
  if (d.has_index() && d.index() >= static_cast<int64_t>(torch::cuda::device_count())) {
    return invalid_argument("[train] device '" + name + "': only " + std::to_string(torch::cuda::device_count()) +
                            " CUDA device(s) visible");
  }
  *out = d;
  return Status::ok();
}

Expected<TrainSummary> train_impl(const TrainConfig& cfg_in, const DistOptions& dist) {
  TrainConfig cfg = cfg_in;
  POCKET_RETURN_IF_ERROR(cfg.validate());
  if (cfg.threads > 0) torch::set_num_threads(cfg.threads);
  POCKET_ASSIGN_OR_RETURN(auto group, DistGroup::create(dist));
  const bool lead = group->rank() == 0;
  std::error_code ec;
  fs::create_directories(cfg.out_dir, ec);
  if (ec) return io_error("[train] cannot create " + cfg.out_dir + ": " + ec.message());

  // Where the weights come from: this run's own checkpoint (resume), the SFT base, or a fresh init.
  const bool resume = has_checkpoint(cfg.out_dir);
  CheckpointMeta meta;
  std::string resume_dir;
  std::vector<uint8_t> tokenizer;
  if (resume) {
    POCKET_ASSIGN_OR_RETURN(resume_dir, resolve_checkpoint(cfg.out_dir));
    POCKET_ASSIGN_OR_RETURN(meta, read_checkpoint_meta(resume_dir));
    cfg.model = meta.hparams;
    POCKET_ASSIGN_OR_RETURN(tokenizer, read_binary_file(resume_dir + "/tokenizer.bin"));
  } else if (!cfg.init_from.empty()) {
    POCKET_ASSIGN_OR_RETURN(std::string base, resolve_checkpoint(cfg.init_from));
    POCKET_ASSIGN_OR_RETURN(CheckpointMeta bm, read_checkpoint_meta(base));
    cfg.model = bm.hparams;
    POCKET_ASSIGN_OR_RETURN(tokenizer, read_binary_file(cfg.tokenizer.empty() ? base + "/tokenizer.bin" : cfg.tokenizer));
  } else {
    if (cfg.tokenizer.empty()) return invalid_argument("[train] no tokenizer given (a tokenizer.bin section file)");
    POCKET_ASSIGN_OR_RETURN(tokenizer, read_binary_file(cfg.tokenizer));
  }
  if (cfg.seq_len > cfg.model.n_ctx_train) return invalid_argument("[train] seq_len exceeds the model's n_ctx_train");
  POCKET_ASSIGN_OR_RETURN(auto tok, load_tokenizer_section(tokenizer));

  const bool sft = cfg.stage == Stage::kSft;
  POCKET_ASSIGN_OR_RETURN(auto loader, BatchLoader::create(cfg.data, loader_options(cfg, Split::kTrain, sft)));
  if (static_cast<int64_t>(loader->n_vocab()) > cfg.model.n_vocab) {
    return invalid_argument("[train] the data's vocabulary (" + std::to_string(loader->n_vocab()) +
                            ") is larger than the model's n_vocab " + std::to_string(cfg.model.n_vocab));
  }
  std::unique_ptr<BatchLoader> heldout;
  if (lead && cfg.eval_interval > 0 && cfg.heldout_fraction > 0) {
    auto h = BatchLoader::create(cfg.data, loader_options(cfg, Split::kHeldOut, sft));
    if (h) heldout = std::move(*h);
  }

  torch::Device device(torch::kCPU);
  POCKET_RETURN_IF_ERROR(training_device(cfg.device, &device));
  torch::manual_seed(cfg.seed);
  Llama model(cfg.model);
  model->reset_parameters(cfg.seed);  // on the CPU, so a seed gives the same initial weights on every device
  if (!resume && !cfg.init_from.empty()) {
    POCKET_ASSIGN_OR_RETURN(LoadedCheckpoint base, load_checkpoint(cfg.init_from));
    POCKET_RETURN_IF_ERROR(model->load_named(base.weights));
  }
  model->to(device);  // before the optimiser is built, so its state is created beside the parameters
  auto opt = make_adamw(model, cfg);
  if (resume) {  // a checkpoint loads onto this run's device, whatever device wrote it
    torch::load(model, resume_dir + "/model.pt", device);
    torch::load(*opt, resume_dir + "/optim.pt", device);
    torch::Tensor rng_state;
    torch::load(rng_state, resume_dir + "/rng.pt");
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng_state);
    loader->set_state(meta.loader);
  }
  model->train();

  std::unique_ptr<RunLog> log;
  if (lead) {
    POCKET_ASSIGN_OR_RETURN(RunLog l, RunLog::open(cfg.out_dir, cfg.quiet));
    log = std::make_unique<RunLog>(std::move(l));
    std::ofstream(cfg.out_dir + "/config.json") << cfg.to_json() << "\n";
    log->note(std::string(resume ? "resuming " : "starting ") + stage_name(cfg.stage) + " of a " +
              std::to_string(cfg.model.n_params()) + "-parameter model at step " + std::to_string(meta.step) + " of " +
              std::to_string(cfg.max_steps) + "; " + std::to_string(cfg.global_rows(group->world())) + " rows x " +
              std::to_string(cfg.seq_len) + " tokens per step on " + std::to_string(group->world()) + " process(es); " +
              std::to_string(loader->n_tokens()) + " training tokens in " + std::to_string(loader->n_docs()) + " documents");
  }

  TrainSummary sum;
  sum.first_step = meta.step;
  std::vector<torch::Tensor> params = model->parameters();
  const int64_t world = group->world(), rank = group->rank();
  const int64_t rows_global = cfg.micro_batch * world;
  const auto run_start = Clock::now();
  auto interval_start = Clock::now();
  int64_t interval_tokens = 0, run_tokens = 0;
  double train_seconds = 0;
  int64_t step = meta.step;
  auto evaluate = [&](int64_t at_step) -> Status {
    if (!heldout) return Status::ok();
    model->eval();
    EvalRecord r;
    r.step = at_step;
    r.loss = heldout_loss(model, *heldout, cfg.eval_rows, cfg.micro_batch).first;
    if (sft && !cfg.sft_eval_data.empty()) {
      int64_t n = 0;
      POCKET_ASSIGN_OR_RETURN(auto acc, answer_accuracy(model, *tok, cfg.chat_template, cfg.sft_eval_data,
                                                        cfg.sft_eval_examples, 32, &n));
      r.answer_accuracy = acc.first;
    }
    model->train();
    log->eval(r);
    sum.evals.push_back(r);
    return Status::ok();
  };
  while (step < cfg.max_steps) {
    const auto step_start = Clock::now();
    const double lr = lr_at(cfg, step);
    for (auto& g : opt->param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    // This step's micro-batches: each is one global slice of rows_global rows, of which this rank takes its part.
    std::vector<Batch> micro;
    int64_t local_count = 0;
    for (int64_t a = 0; a < cfg.grad_accum; ++a) {
      micro.push_back(loader->next(rows_global, rank * cfg.micro_batch, cfg.micro_batch));
      local_count += micro.back().n_loss_tokens();
    }
    // Normalise by the loss tokens of the whole global batch so 1 and N processes compute the same gradient.
    auto counts = torch::tensor({static_cast<double>(local_count)}, torch::kFloat64);
    group->all_reduce_sum(counts);
    const double global_count = std::max(1.0, counts.item<double>());
    opt->zero_grad();
    double loss_sum = 0;
    for (const Batch& b : micro) {
      auto l = masked_loss_sum(model, b);
      loss_sum += l.item<double>();
      (l / global_count).backward();
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
    const int64_t step_tokens = rows_global * cfg.grad_accum * cfg.seq_len;
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
      interval_tokens = 0;
      interval_start = Clock::now();
    }
    const bool stopping = step == cfg.max_steps || (cfg.stop_after > 0 && step >= cfg.stop_after);
    if (lead && cfg.eval_interval > 0 && (step % cfg.eval_interval == 0 || step == cfg.max_steps)) {
      POCKET_RETURN_IF_ERROR(evaluate(step));
      interval_start = Clock::now();
    }
    if (lead && (step % cfg.ckpt_interval == 0 || stopping)) {
      CheckpointMeta m;
      m.step = step;
      m.loader = loader->state();
      m.tokens = meta.tokens;
      m.elapsed_s = meta.elapsed_s + train_seconds;
      m.config = cfg;
      m.hparams = cfg.model;
      POCKET_RETURN_IF_ERROR(save_checkpoint(cfg.out_dir, model, *opt, m, tokenizer, &sum.checkpoint));
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

Expected<TrainSummary> run_training(const TrainConfig& cfg, const DistOptions& dist) {
  try {
    return train_impl(cfg, dist);
  } catch (const std::exception& e) {
    return torch_error(e);
  }
}

Expected<LoadedCheckpoint> load_checkpoint(const std::string& path) {
  try {
    LoadedCheckpoint c;
    POCKET_ASSIGN_OR_RETURN(c.dir, resolve_checkpoint(path));
    POCKET_ASSIGN_OR_RETURN(c.meta, read_checkpoint_meta(c.dir));
    POCKET_ASSIGN_OR_RETURN(c.tokenizer, read_binary_file(c.dir + "/tokenizer.bin"));
    Llama model(c.meta.hparams);
    torch::load(model, c.dir + "/model.pt", torch::Device(torch::kCPU));  // whatever device wrote it
    c.weights = model->to_named();
    return c;
  } catch (const std::exception& e) {
    return torch_error(e);
  }
}

Expected<EvalResult> evaluate_checkpoint(const std::string& path, const EvalOptions& o) {
  try {
    POCKET_ASSIGN_OR_RETURN(LoadedCheckpoint c, load_checkpoint(path));
    const TrainConfig& cfg = c.meta.config;
    Llama model(c.meta.hparams);
    POCKET_RETURN_IF_ERROR(model->load_named(c.weights));
    model->eval();
    if (cfg.threads > 0) torch::set_num_threads(cfg.threads);
    EvalResult r;
    const std::vector<std::string>& data = o.data.empty() ? cfg.data : o.data;
    LoaderOptions lo = loader_options(cfg, o.heldout ? Split::kHeldOut : Split::kTrain, cfg.stage == Stage::kSft);
    if (!o.heldout) {
      lo.heldout_fraction = 0;
      lo.shuffle = false;
    }
    POCKET_ASSIGN_OR_RETURN(auto loader, BatchLoader::create(data, lo));
    std::tie(r.loss, r.tokens) = heldout_loss(model, *loader, o.rows, o.micro_batch);
    if (!o.answers.empty()) {
      POCKET_ASSIGN_OR_RETURN(auto tok, load_tokenizer_section(c.tokenizer));
      POCKET_ASSIGN_OR_RETURN(auto acc, answer_accuracy(model, *tok, cfg.chat_template, o.answers, o.max_answers,
                                                        o.max_answer_tokens, &r.n_answers));
      r.answer_accuracy = acc.first;
      r.sample_answers = acc.second;
    }
    return r;
  } catch (const std::exception& e) {
    return torch_error(e);
  }
}

}  // namespace pocket::train
