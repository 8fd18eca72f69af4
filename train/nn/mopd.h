// Multi-teacher on-policy distillation (MOPD): student samples routed to their task's teacher, loss = per-token
// reverse KL of student to teacher on the student's own answer tokens (optionally mixed with forward KL).
// Torch-free header; the libtorch code is in mopd.cc. Guide: docs/mopd.md.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "data/tasks.h"
#include "run/run_log.h"
#include "run/train_config.h"

namespace pocket::train {

// One --teacher flag: a domain (a task name, or "generalist" for every task without its own teacher) and
// the teacher's checkpoint (a run directory or a checkpoint directory).
struct TeacherSpec {
  std::string domain;
  std::string checkpoint;
};
// "extract=DIR", "generalist=DIR", or a bare "DIR" (a generalist).
Expected<TeacherSpec> parse_teacher_spec(std::string_view text);

// Which teacher scores which task. Teachers named by several domains are loaded once.
class TeacherRouter {
 public:
  // Errors: an unknown domain, a domain given twice, no teacher at all.
  static Expected<TeacherRouter> create(const std::vector<TeacherSpec>& specs);
  // The index into checkpoints() of the task's teacher: its own, else the generalist; an error naming the
  // task when it has neither.
  Expected<size_t> route(TaskKind t) const;
  const std::vector<std::string>& checkpoints() const { return checkpoints_; }
  std::string describe() const;  // "extract->A intent->B ..." for the log

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  std::array<size_t, kAllTasks.size()> by_task_{};
  std::vector<std::string> checkpoints_;  // distinct, in the order first named
};

struct MopdConfig {
  // The student is train.init_from; train.data are task JSONL files (make-tasks lines: only the prompts are
  // used); train.micro_batch prompts per micro-batch and process; optimiser, schedule, cadence, threads,
  // device, plot and quiet as for SFT. Checkpoints record train with stage "sft" (MOPD is a post-training
  // stage of the same chat model, exported like SFT) and carry mopd.json with the fields below.
  TrainConfig train;
  std::vector<TeacherSpec> teachers;
  int64_t max_new_tokens = 64;     // sampled answer tokens per prompt, end-of-turn included
  double temperature = 1.0;        // sampling only; both KLs compare the untempered distributions
  double forward_kl_weight = 0.0;  // loss per token = (1 - w) KL(student || teacher) + w KL(teacher || student)
  std::string to_json() const;
};

// One sampled answer of a step, for inspection and tests.
struct MopdSample {
  int64_t step = 0;       // the optimiser step it trained (1-based)
  int64_t example = 0;    // the prompt's line among the data files' examples (in file order, from 0)
  TaskKind task = TaskKind::kExtract;
  size_t teacher = 0;     // index into TeacherRouter::checkpoints()
  int64_t n_tokens = 0;   // answer tokens (the loss tokens of this sample)
  double kl_sum = 0;      // the loss summed over its tokens
  bool stopped = false;   // ended with an end-of-turn token
  std::vector<int32_t> answer;  // the sampled tokens
};

struct MopdSummary {
  int64_t first_step = 0;  // > 0 when the run resumed
  int64_t steps_done = 0;
  std::vector<StepRecord> steps;   // loss = mean KL per answer token of the global batch
  std::vector<EvalRecord> evals;   // loss = mean KL per answer token on the held-out prompts
  std::vector<MopdSample> samples; // this process's samples
  double tokens_per_s = 0;         // prompt + answer tokens through the student per second of training
  std::string checkpoint;
};

// Runs (or resumes, when cfg.train.out_dir holds a checkpoint) MOPD. With dist.world > 1 every process calls
// this with the same config and its own rank; each samples its slice of every step's prompts, gradients and
// loss-token counts are summed over processes, and rank 0 writes logs and checkpoints.
Expected<MopdSummary> run_mopd(const MopdConfig& cfg, const DistOptions& dist = {});

// The MOPD loss on given logits, through the same libtorch code as training (for tests and checks).
// student, teacher: [n_positions, n_vocab] row-major; mask: [n_positions], 1 where the position counts.
struct DistillTerms {
  double loss_sum = 0;               // sum over masked positions
  int64_t n_tokens = 0;              // masked positions
  std::vector<double> per_position;  // [n_positions], 0 where masked out
  std::vector<float> grad;           // d loss_sum / d student logits, [n_positions, n_vocab]
};
Expected<DistillTerms> mopd_distill_terms(std::span<const float> student, std::span<const float> teacher,
                                          int64_t n_vocab, std::span<const uint8_t> mask, double forward_kl_weight);

}  // namespace pocket::train
