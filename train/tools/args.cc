// Flag parsing and TrainConfig flags (see args.h).
#include "args.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pocket::train::cli {

// Flags that take no value.
static bool is_switch(const std::string& n) {
  return n == "qkv-bias" || n == "qk-norm" || n == "untied" || n == "no-plot" || n == "quiet" || n == "all" ||
         n == "chat" || n == "task-layer" || n == "help";
}

Args::Args(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      std::string name = a.substr(2), value = "1";
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else if (!is_switch(name) && i + 1 < argc) {
        value = argv[++i];
      }
      values_[name].push_back(value);
    } else if (a == "-o") {
      if (i + 1 < argc) values_["out"].push_back(argv[++i]);
    } else if (a == "-m") {  // as `pocket run` spells the model (score-tasks, calibrate, import)
      if (i + 1 < argc) values_["model"].push_back(argv[++i]);
    } else {
      values_[""].push_back(a);
    }
  }
}

bool Args::has(const std::string& n) const { return values_.count(n) != 0; }
std::string Args::str(const std::string& n, const std::string& def) const {
  auto it = values_.find(n);
  return it == values_.end() ? def : it->second.back();
}
std::vector<std::string> Args::all(const std::string& n) const {
  auto it = values_.find(n);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}
Expected<int64_t> Args::i64(const std::string& n, int64_t def) const {
  if (!has(n)) return def;
  try {
    size_t used = 0;
    const std::string s = str(n);
    const int64_t v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (...) {
  }
  return invalid_argument("--" + n + " expects an integer, got '" + str(n) + "'");
}
Expected<double> Args::f64(const std::string& n, double def) const {
  if (!has(n)) return def;
  try {
    size_t used = 0;
    const std::string s = str(n);
    const double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (...) {
  }
  return invalid_argument("--" + n + " expects a number, got '" + str(n) + "'");
}
std::string Args::unknown(const std::vector<std::string>& known) const {
  std::string out;
  for (const auto& [k, v] : values_) {
    if (k.empty()) continue;
    bool ok = false;
    for (const auto& n : known) ok |= n == k;
    if (!ok) out += (out.empty() ? "--" : ", --") + k;
  }
  return out;
}

int report(const char* cmd, const Status& st) {
  std::fprintf(stderr, "pocket-train %s: %s\n", cmd, st.to_string().c_str());
  return 1;
}

std::vector<std::string> train_flag_names() {
  return {"config", "data", "tokenizer", "out", "init", "template", "eval-data", "arch", "model", "vocab", "n-embd",
          "n-layers", "n-heads", "n-kv-heads", "head-dim", "n-ff", "ctx", "rope", "rope-theta", "qkv-bias", "qk-norm",
          "untied", "seq-len", "batch", "accum", "steps", "stop-after", "lr", "min-lr", "warmup", "wd", "clip",
          "seed", "heldout", "eval-interval", "eval-rows", "eval-examples", "log-interval", "ckpt-interval",
          "threads", "device", "no-plot", "quiet", "rank", "world", "rendezvous", "nproc"};
}

const char* train_flags_help() {
  return "  data      --data SHARD (repeatable) --tokenizer tokenizer.bin --out RUN_DIR [--config cfg.json]\n"
         "  model     --arch tiny|pocket-0.3b|qwen3-0.6b | --model descriptor.json | --vocab N --n-embd D\n"
         "            --n-layers L --n-heads H [--n-kv-heads K --head-dim E --n-ff F --ctx C --rope neox|interleaved\n"
         "            --rope-theta X --qkv-bias --qk-norm --untied]\n"
         "  optimiser --seq-len T --batch B (rows per process) --accum A --steps N --lr X --min-lr X --warmup N\n"
         "            --wd X --clip X --seed S\n"
         "  cadence   --heldout FRACTION --eval-interval N --eval-rows N --log-interval N --ckpt-interval N\n"
         "            --threads N --device cpu|cuda|cuda:N --no-plot --quiet --stop-after N\n"
         "  parallel  --nproc N (spawns N local processes) | --rank R --world W --rendezvous file:PATH|tcp:HOST:PORT\n"
         "  sft       --init PRETRAINED_RUN --template chatml --eval-data chats.jsonl --eval-examples N\n";
}

Status apply_train_flags(const Args& a, TrainConfig* c, DistOptions* d, int64_t* nproc) {
  if (a.has("config")) {
    std::ifstream in(a.str("config"));
    if (!in) return io_error("cannot read --config " + a.str("config"));
    std::stringstream ss;
    ss << in.rdbuf();
    const Stage stage = c->stage;
    POCKET_ASSIGN_OR_RETURN(*c, TrainConfig::from_json(ss.str()));
    c->stage = stage;
  }
  if (a.has("data")) c->data = a.all("data");
  c->tokenizer = a.str("tokenizer", c->tokenizer);
  c->out_dir = a.str("out", c->out_dir);
  c->init_from = a.str("init", c->init_from);
  c->chat_template = a.str("template", c->chat_template);
  c->sft_eval_data = a.str("eval-data", c->sft_eval_data);

  HParams& h = c->model;
  if (a.has("arch")) {
    POCKET_ASSIGN_OR_RETURN(h, architecture_preset(a.str("arch")));
  } else if (a.has("model")) {
    std::ifstream in(a.str("model"));
    std::stringstream ss;
    ss << in.rdbuf();
    POCKET_ASSIGN_OR_RETURN(h, HParams::from_json(ss.str()));
  }
  if (h.name.empty()) h.name = "pocket-train";
  POCKET_ASSIGN_OR_RETURN(h.n_vocab, a.i64("vocab", h.n_vocab));
  POCKET_ASSIGN_OR_RETURN(h.n_embd, a.i64("n-embd", h.n_embd));
  POCKET_ASSIGN_OR_RETURN(h.n_layers, a.i64("n-layers", h.n_layers));
  POCKET_ASSIGN_OR_RETURN(h.n_heads, a.i64("n-heads", h.n_heads));
  POCKET_ASSIGN_OR_RETURN(h.n_kv_heads, a.i64("n-kv-heads", h.n_kv_heads > 0 ? h.n_kv_heads : h.n_heads));
  POCKET_ASSIGN_OR_RETURN(h.head_dim, a.i64("head-dim", h.head_dim > 0 && !a.has("n-embd") && !a.has("n-heads")
                                                            ? h.head_dim
                                                            : (h.n_heads > 0 ? h.n_embd / h.n_heads : 0)));
  POCKET_ASSIGN_OR_RETURN(h.n_ff, a.i64("n-ff", h.n_ff > 0 && !a.has("n-embd") ? h.n_ff : (h.n_embd * 8 / 3 + 31) / 32 * 32));
  POCKET_ASSIGN_OR_RETURN(h.n_ctx_train, a.i64("ctx", h.n_ctx_train > 0 ? h.n_ctx_train : 256));
  POCKET_ASSIGN_OR_RETURN(double theta, a.f64("rope-theta", h.rope_theta));
  h.rope_theta = static_cast<float>(theta);
  if (a.has("rope")) {
    const std::string r = a.str("rope");
    if (r == "neox") h.rope_style = RopeStyle::kNeox;
    else if (r == "interleaved") h.rope_style = RopeStyle::kInterleaved;
    else return invalid_argument("--rope must be neox or interleaved");
  }
  if (a.has("qkv-bias")) h.qkv_bias = true;
  if (a.has("qk-norm")) h.qk_norm = true;
  if (a.has("untied")) h.tied_embeddings = false;

  POCKET_ASSIGN_OR_RETURN(c->seq_len, a.i64("seq-len", c->seq_len));
  POCKET_ASSIGN_OR_RETURN(c->micro_batch, a.i64("batch", c->micro_batch));
  POCKET_ASSIGN_OR_RETURN(c->grad_accum, a.i64("accum", c->grad_accum));
  POCKET_ASSIGN_OR_RETURN(c->max_steps, a.i64("steps", c->max_steps));
  POCKET_ASSIGN_OR_RETURN(c->stop_after, a.i64("stop-after", c->stop_after));
  POCKET_ASSIGN_OR_RETURN(c->lr, a.f64("lr", c->lr));
  POCKET_ASSIGN_OR_RETURN(c->min_lr, a.f64("min-lr", std::min(c->min_lr, c->lr)));
  POCKET_ASSIGN_OR_RETURN(c->warmup_steps, a.i64("warmup", c->warmup_steps));
  POCKET_ASSIGN_OR_RETURN(c->weight_decay, a.f64("wd", c->weight_decay));
  POCKET_ASSIGN_OR_RETURN(c->grad_clip, a.f64("clip", c->grad_clip));
  POCKET_ASSIGN_OR_RETURN(int64_t seed, a.i64("seed", static_cast<int64_t>(c->seed)));
  c->seed = static_cast<uint64_t>(seed);
  POCKET_ASSIGN_OR_RETURN(c->heldout_fraction, a.f64("heldout", c->heldout_fraction));
  POCKET_ASSIGN_OR_RETURN(c->eval_interval, a.i64("eval-interval", c->eval_interval));
  POCKET_ASSIGN_OR_RETURN(c->eval_rows, a.i64("eval-rows", c->eval_rows));
  POCKET_ASSIGN_OR_RETURN(c->sft_eval_examples, a.i64("eval-examples", c->sft_eval_examples));
  POCKET_ASSIGN_OR_RETURN(c->log_interval, a.i64("log-interval", c->log_interval));
  POCKET_ASSIGN_OR_RETURN(c->ckpt_interval, a.i64("ckpt-interval", c->ckpt_interval));
  POCKET_ASSIGN_OR_RETURN(int64_t threads, a.i64("threads", c->threads));
  c->threads = static_cast<int32_t>(threads);
  c->device = a.str("device", c->device);
  if (a.has("no-plot")) c->plot = false;
  if (a.has("quiet")) c->quiet = true;

  POCKET_ASSIGN_OR_RETURN(int64_t rank, a.i64("rank", 0));
  POCKET_ASSIGN_OR_RETURN(int64_t world, a.i64("world", 1));
  d->rank = static_cast<int>(rank);
  d->world = static_cast<int>(world);
  d->rendezvous = a.str("rendezvous");
  POCKET_ASSIGN_OR_RETURN(*nproc, a.i64("nproc", 1));
  if (*nproc < 1 || *nproc > 64) return invalid_argument("--nproc must be in 1..64");
  return Status::ok();
}

int spawn_ranks(int argc, char** argv, int64_t nproc, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  const std::string store = out_dir + "/.rendezvous";
  std::filesystem::remove(store);
  std::vector<pid_t> pids;
  for (int64_t r = 0; r < nproc; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      std::vector<std::string> args;
      for (int i = 0; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--nproc") {
          ++i;
          continue;
        }
        if (a.rfind("--nproc=", 0) == 0) continue;
        args.push_back(a);
      }
      args.insert(args.end(), {"--rank", std::to_string(r), "--world", std::to_string(nproc), "--rendezvous",
                               "file:" + store});
      if (r != 0) args.push_back("--quiet");
      std::vector<char*> cargs;
      for (auto& s : args) cargs.push_back(s.data());
      cargs.push_back(nullptr);
      execv("/proc/self/exe", cargs.data());
      std::perror("pocket-train: execv");
      _exit(127);
    }
    if (pid < 0) {
      std::perror("pocket-train: fork");
      return 1;
    }
    pids.push_back(pid);
  }
  int worst = 0;
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    worst = std::max(worst, code);
  }
  std::filesystem::remove(store);
  return worst;
}

}  // namespace pocket::train::cli
