// Training telemetry: JSON-lines records (one per log interval and per evaluation), a human progress line
// with tokens/s and ETA, and a loss-curve PNG drawn by gnuplot when it is installed (skipped otherwise).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/status.h"

namespace pocket::train {

struct StepRecord {
  int64_t step = 0;        // optimiser steps completed
  double loss = 0;         // mean over the step's loss tokens
  double lr = 0;
  double grad_norm = 0;    // before clipping
  int64_t tokens = 0;      // tokens processed so far (all processes)
  double tokens_per_s = 0; // over the last log interval
  double elapsed_s = 0;
};

struct EvalRecord {
  int64_t step = 0;
  double loss = 0;          // held-out mean loss per target token
  double answer_accuracy = -1;  // SFT hook: exact-match share of greedy answers (-1 when not run)
};

class RunLog {
 public:
  // Appends to `dir`/log.jsonl (a resumed run continues the same file).
  static Expected<RunLog> open(const std::string& dir, bool quiet);
  RunLog(RunLog&& o) noexcept : dir_(std::move(o.dir_)), file_(o.file_), quiet_(o.quiet_) { o.file_ = nullptr; }
  RunLog(const RunLog&) = delete;
  ~RunLog();

  void step(const StepRecord& r, int64_t max_steps);
  void eval(const EvalRecord& r);
  void note(const std::string& text);  // a {"note": ...} record and a stderr line

  // Draws `dir`/loss.png from log.jsonl. Returns kUnsupported (and draws nothing) when gnuplot is absent.
  Status plot() const;
  const std::string& dir() const { return dir_; }

 private:
  RunLog(std::string dir, std::FILE* f, bool quiet) : dir_(std::move(dir)), file_(f), quiet_(quiet) {}
  std::string dir_;
  std::FILE* file_ = nullptr;
  bool quiet_ = false;
};

// "1h02m", "3m05s", "12s".
std::string format_duration(double seconds);

}  // namespace pocket::train
