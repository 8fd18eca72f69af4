// `pocket-train pretrain` and `pocket-train sft`: flags -> TrainConfig -> run_training. With --nproc N the
// command re-executes itself N times as ranks 0..N-1 of a data-parallel group (file rendezvous on loopback).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "args.h"
#include "commands.h"
#include "nn/trainer.h"

namespace pocket::train::cli {

namespace {

// Runs this program N times with --rank/--world/--rendezvous appended; returns the worst exit code.
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

}  // namespace

int cmd_train(Stage stage, int argc, char** argv) {
  const char* name = stage == Stage::kSft ? "sft" : "pretrain";
  Args a(argc, argv, 2);
  if (a.has("help")) {
    std::printf("usage: pocket-train %s [flags]\n%s", name, train_flags_help());
    return 0;
  }
  if (std::string u = a.unknown(train_flag_names()); !u.empty()) {
    return report(name, invalid_argument("unknown flag(s) " + u + " (see --help)"));
  }
  TrainConfig cfg;
  cfg.stage = stage;
  if (stage == Stage::kSft) {  // SFT defaults: short runs over small data, from a pretrained model
    cfg.lr = 3e-4;
    cfg.min_lr = 3e-5;
    cfg.warmup_steps = 20;
    cfg.weight_decay = 0.0;
    cfg.max_steps = 200;
    cfg.eval_interval = 50;
  }
  DistOptions dist;
  int64_t nproc = 1;
  if (Status st = apply_train_flags(a, &cfg, &dist, &nproc); !st.is_ok()) return report(name, st);
  if (stage == Stage::kSft && cfg.init_from.empty() && !has_checkpoint(cfg.out_dir)) {
    return report(name, invalid_argument("sft needs --init PRETRAINED_RUN_DIR"));
  }
  if (nproc > 1) return spawn_ranks(argc, argv, nproc, cfg.out_dir);
  auto r = run_training(cfg, dist);
  if (!r) return report(name, r.status());
  return 0;
}

}  // namespace pocket::train::cli
