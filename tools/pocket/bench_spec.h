// `pocket bench --spec ...`: speculative decoding against plain decoding on the same prompt — tokens/s,
// tokens per target pass, acceptance, speedup — and the cost of one verify pass of k + 1 rows (or of 2 .. k + 1).
#pragma once

#include <nlohmann/json.hpp>
#include <memory>
#include <string>

#include "generate/session.h"
#include "speculative/speculative_session.h"

namespace pocket::cli {

struct SpecBenchArgs {
  std::string model, method = "none", draft_model, prompt_file;
  int draft_max = 8, n_prompt = 512, n_gen = 128, reps = 5, threads = 0;
  bool fallback = true;  // SpecFallback on (the default a user gets)
  bool no_mmap = false;  // read the packages (target and draft) instead of mapping them
  bool verify_curve = false;  // the verify cost for every row count 2 .. k + 1, not only k + 1
};

// The two sessions a side-by-side benchmark compares, on the same options: plain, and speculative with
// `spec`. Says on stderr when the memory budget switched speculation off. Shared by --spec and --task-prompts.
struct BenchSessions {
  std::unique_ptr<Session> plain;
  std::unique_ptr<SpeculativeSession> spec;
};
Expected<BenchSessions> make_bench_sessions(const std::shared_ptr<const Model>& model, const SessionOptions& so,
                                            const SpeculativeOptions& spec);

// Prints markdown rows (or fills `json` when non-null). Returns the process exit code.
int bench_speculative(const SpecBenchArgs& a, nlohmann::json* json);

}  // namespace pocket::cli
