// `pocket-train mopd`: multi-teacher on-policy distillation of a student checkpoint (docs/mopd.md). The
// optimiser, schedule, cadence and parallel flags are pretrain/sft's (args.h); --student and --teacher are its own.
#include <cstdio>

#include "args.h"
#include "commands.h"
#include "nn/mopd.h"
#include "run/checkpoint.h"

namespace pocket::train::cli {

int cmd_mopd(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help")) {
    std::printf(
        "usage: pocket-train mopd --student CKPT --teacher TASK=CKPT [--teacher ...] [--teacher generalist=CKPT]\n"
        "         --data tasks.jsonl --out DIR [--steps N --batch PROMPTS --accum A --lr X ...]\n"
        "         [--max-new N] [--temperature T] [--fkl W]\n"
        "  The student samples answers to the prompts (make-tasks lines); each answer is scored by the teacher of\n"
        "  its task (or the generalist) and the loss is the per-token reverse KL(student || teacher) over the\n"
        "  student's answer tokens, mixed with W x forward KL (--fkl, default 0). --max-new: answer tokens per\n"
        "  prompt (64); --temperature: sampling only (1). Teachers must share the student's tokenizer.\n"
        "  Running the same command again on the same --out resumes. Other flags:\n%s",
        train_flags_help());
    return 0;
  }
  std::vector<std::string> known = train_flag_names();
  known.insert(known.end(), {"student", "teacher", "max-new", "temperature", "fkl", "help"});
  if (std::string u = a.unknown(known); !u.empty()) {
    return report("mopd", invalid_argument("unknown flag(s) " + u + " (see --help)"));
  }
  MopdConfig mc;
  TrainConfig& cfg = mc.train;
  cfg.stage = Stage::kSft;  // post-training defaults, as sft's
  cfg.lr = 1e-4;
  cfg.min_lr = 1e-5;
  cfg.warmup_steps = 10;
  cfg.weight_decay = 0.0;
  cfg.max_steps = 100;
  cfg.eval_interval = 25;
  cfg.micro_batch = 8;
  cfg.chat_template.clear();  // the student's, unless --template
  DistOptions dist;
  int64_t nproc = 1;
  if (Status st = apply_train_flags(a, &cfg, &dist, &nproc); !st.is_ok()) return report("mopd", st);
  cfg.init_from = a.str("student", cfg.init_from);
  if (cfg.init_from.empty() && !has_checkpoint(cfg.out_dir)) return report("mopd", invalid_argument("mopd needs --student CKPT"));
  if (nproc > 1) return spawn_ranks(argc, argv, nproc, cfg.out_dir);
  for (const auto& t : a.all("teacher")) {
    auto s = parse_teacher_spec(t);
    if (!s) return report("mopd", s.status());
    mc.teachers.push_back(*s);
  }
  auto max_new = a.i64("max-new", mc.max_new_tokens);
  auto temp = a.f64("temperature", mc.temperature);
  auto fkl = a.f64("fkl", mc.forward_kl_weight);
  if (!max_new || !temp || !fkl) return report("mopd", invalid_argument("bad --max-new/--temperature/--fkl"));
  mc.max_new_tokens = *max_new;
  mc.temperature = *temp;
  mc.forward_kl_weight = *fkl;
  auto r = run_mopd(mc, dist);
  if (!r) return report("mopd", r.status());
  return 0;
}

}  // namespace pocket::train::cli
