// `pocket bench`: llama-bench's conventions — rows pp<P>, tg<N>, pp<P>+tg<N> (and tg<N> at depth D), one
// warm-up then r runs, median and mean ± sd tokens/s — plus the measured peak memory increase, the decode
// roofline from a bandwidth probe run in the same process, and energy per typical call. Markdown or JSON.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "commands.h"
#include "spec_flags.h"
#include "core/bandwidth_probe.h"
#include "bench_constrain.h"
#include "bench_spec.h"
#include "bench_tasks.h"
#include "core/process_memory.h"
#include "energy_model.h"
#include "model/transformer.h"
#include "sampling/rng.h"

namespace pocket::cli {

namespace {

struct BenchArgs {
  std::string model, output = "md";
  int n_prompt = 512, n_gen = 128, reps = 5, threads = 0, depth = 0, n_batch = 0;
  bool no_probe = false;
  bool no_mmap = false;
  std::string spec = "none", draft_model, prompt_file;  // speculative rows (bench_spec.h)
  int draft_max = 8;
  bool spec_only = false;
  bool no_spec_fallback = false;
  bool verify_curve = false;
  std::string task_prompts;  // the per-task report instead of the rows (bench_tasks.h)
  int per_task = 20;
  bool reps_given = false;   // -r given: the per-task report's runs per example (else 3)
  std::string schema_file, grammar_file, source_file;  // constrained-decoding rows (bench_constrain.h)
};

ConstrainBenchArgs constrain_args(const BenchArgs& a) {
  ConstrainBenchArgs c;
  c.model = a.model;
  c.schema_file = a.schema_file;
  c.grammar_file = a.grammar_file;
  c.source_file = a.source_file;
  c.n_gen = a.n_gen > 0 ? a.n_gen : 128;
  c.reps = a.reps;
  c.threads = a.threads;
  return c;
}

SpecBenchArgs spec_args(const BenchArgs& a) {
  SpecBenchArgs s;
  s.model = a.model;
  s.method = a.spec;
  s.draft_model = a.draft_model;
  s.prompt_file = a.prompt_file;
  s.draft_max = a.draft_max;
  s.fallback = !a.no_spec_fallback;
  s.no_mmap = a.no_mmap;
  s.n_prompt = a.n_prompt;
  s.n_gen = a.n_gen;
  s.reps = a.reps;
  s.threads = a.threads;
  s.verify_curve = a.verify_curve;
  return s;
}

struct Row {
  std::string test;
  int64_t n_tokens = 0;
  std::vector<double> tps;
  double median() const {
    std::vector<double> v = tps;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
  }
  double mean() const {
    double s = 0;
    for (double x : tps) s += x;
    return tps.empty() ? 0.0 : s / tps.size();
  }
  double sd() const {
    if (tps.size() < 2) return 0.0;
    const double m = mean();
    double s = 0;
    for (double x : tps) s += (x - m) * (x - m);
    return std::sqrt(s / (tps.size() - 1));
  }
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The pp/tg rows (and the speculative ones); JSON output goes to *json, printed by the caller.
int bench_rows(const BenchArgs& a, nlohmann::json* json) {
  if (a.n_prompt < 0 || a.n_gen < 0 || a.reps < 1 || a.depth < 0) {
    return report("bench", invalid_argument("[bench] -p, -n and -d must be >= 0 and -r >= 1"));
  }
  if (a.spec == "none" && (a.spec_only || a.verify_curve)) {
    return report("bench", invalid_argument("[bench] --spec-only and --verify-curve measure speculative decoding: "
                                            "add --spec ngram or --spec draft"));
  }
  if (a.spec != "none" && a.spec_only) {
    if (a.output != "json") return bench_speculative(spec_args(a), nullptr);
    nlohmann::json j;
    if (int rc = bench_speculative(spec_args(a), &j); rc != 0) return rc;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  const MemoryReading baseline = read_process_memory();
  OpenOptions open;
  open.load = a.no_mmap ? FileLoad::kRead : FileLoad::kMap;
  auto model = Model::load(a.model, open);
  if (!model) return report("bench", model.status());
  const HParams& h = (*model)->hparams();
  const int threads = a.threads > 0 ? a.threads : ThreadPool::default_threads();
  ThreadPool pool(threads);
  SessionShape shape;
  shape.n_ctx = std::max<int64_t>(1, std::max<int64_t>(a.n_prompt, a.depth) + a.n_gen);
  shape.n_batch = std::min<int64_t>(a.n_batch > 0 ? a.n_batch : kDefaultBatch, std::max<int64_t>(1, a.n_prompt));
  if (shape.n_ctx > h.n_ctx_train) {
    return report("bench", invalid_argument("[bench] p + n = " + std::to_string(shape.n_ctx) +
                                                " exceeds the model's context " + std::to_string(h.n_ctx_train)));
  }
  auto tf = Transformer::create(*model, shape, &pool);
  if (!tf) return report("bench", tf.status());
  Transformer& t = **tf;

  Rng rng(1234);
  std::vector<int32_t> tokens(static_cast<size_t>(shape.n_ctx));
  for (auto& id : tokens) id = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(h.n_vocab));
  auto run_pp = [&](int64_t n) -> double {
    t.truncate(0);
    const double t0 = now_s();
    Status st = t.forward(std::span<const int32_t>(tokens.data(), static_cast<size_t>(n)), false);
    if (!st.is_ok()) return -1;
    return now_s() - t0;
  };
  auto run_tg = [&](int64_t n) -> double {
    const double t0 = now_s();
    for (int64_t i = 0; i < n; ++i) {
      if (!t.forward(std::span<const int32_t>(tokens.data() + t.n_past(), 1), false).is_ok()) return -1;
    }
    return now_s() - t0;
  };

  std::vector<Row> rows;
  auto measure = [&](const std::string& name, int64_t n_tokens, auto&& fn) {
    Row r;
    r.test = name;
    r.n_tokens = n_tokens;
    fn();  // warm-up
    for (int i = 0; i < a.reps; ++i) {
      const double s = fn();
      if (s <= 0) return false;
      r.tps.push_back(static_cast<double>(n_tokens) / s);
    }
    rows.push_back(r);
    return true;
  };
  const std::string P = std::to_string(a.n_prompt), N = std::to_string(a.n_gen);
  bool ok = true;
  if (a.n_prompt > 0) ok &= measure("pp" + P, a.n_prompt, [&] { return run_pp(a.n_prompt); });
  if (a.n_gen > 0) ok &= measure("tg" + N, a.n_gen, [&] {
    t.truncate(0);
    return run_tg(a.n_gen);
  });
  if (a.n_prompt > 0 && a.n_gen > 0) {
    ok &= measure("pp" + P + "+tg" + N, a.n_prompt + a.n_gen, [&] {
      const double s1 = run_pp(a.n_prompt);
      const double s2 = run_tg(a.n_gen);
      return s1 < 0 || s2 < 0 ? -1.0 : s1 + s2;
    });
  }
  if (a.depth > 0 && a.n_gen > 0) {
    ok &= measure("tg" + N + " @ d" + std::to_string(a.depth), a.n_gen, [&] {
      if (run_pp(a.depth) < 0) return -1.0;
      return run_tg(a.n_gen);
    });
  }
  if (!ok) return report("bench", Status(ErrorCode::kInternal, "[bench] a forward pass failed"));
  const MemoryReading after = read_process_memory();
  // After the runs every weight page has been touched: how much of the package the kernel maps with 2 MiB
  // pages (decode streams it all each token; 4 KiB pages cost page walks and stop the prefetchers).
  const MappingReading huge = read_mapping((*model)->package().bytes().data());
  const uint64_t peak_increase = after.peak_rss_bytes > baseline.rss_bytes ? after.peak_rss_bytes - baseline.rss_bytes : 0;

  BandwidthResult bw;
  if (!a.no_probe) bw = probe_read_bandwidth(pool);
  const uint64_t bytes_per_token = (*model)->weight_bytes_per_token();
  const double roofline = bw.gb_per_s > 0 ? bw.gb_per_s * 1e9 / static_cast<double>(bytes_per_token) : 0.0;
  double pp_tps = 0, tg_tps = 0;
  for (const auto& r : rows) {
    if (r.test == "pp" + P) pp_tps = r.median();
    if (r.test == "tg" + N) tg_tps = r.median();
  }
  const uint64_t kv_per_pos = 2ull * h.n_layers * h.kv_dim() * sizeof(float);
  EnergyEstimate e = estimate_call_energy(pp_tps, tg_tps, threads, bytes_per_token, kv_per_pos, shape.n_batch);
  const std::string type = (*model)->weight_type_label();
  const double size_mib = static_cast<double>((*model)->package().file_size()) / (1024.0 * 1024.0);
  const double params_m = static_cast<double>(h.n_params()) / 1e6;

  if (a.output == "json") {
    nlohmann::json j;
    j["model"] = a.model;
    j["model_name"] = h.name;
    j["size_bytes"] = (*model)->package().file_size();
    j["n_params"] = h.n_params();
    j["type"] = type;
    j["threads"] = threads;
    j["repetitions"] = a.reps;
    for (const auto& r : rows) {
      j["rows"].push_back({{"test", r.test}, {"n_tokens", r.n_tokens}, {"tps_median", r.median()},
                           {"tps_mean", r.mean()}, {"tps_sd", r.sd()}, {"samples", r.tps}});
    }
    j["peak_rss_increase_bytes"] = peak_increase;
    j["weights_load"] = a.no_mmap ? "read" : "mmap";
    j["package_huge_page_bytes"] = huge.huge_bytes;
    j["plan"] = {{"weights", t.plan().weights}, {"kv_cache", t.plan().kv_cache},
                 {"activations", t.plan().activations}, {"logits", t.plan().logits}, {"total", t.plan().total()}};
    j["bandwidth_gb_s"] = bw.gb_per_s;
    j["weight_bytes_per_token"] = bytes_per_token;
    j["decode_roofline_tps"] = roofline;
    j["decode_fraction_of_roofline"] = roofline > 0 ? tg_tps / roofline : 0.0;
    j["energy_per_call"] = {{"joules", e.joules}, {"cpu_joules", e.cpu_joules}, {"dram_joules", e.dram_joules},
                            {"seconds", e.seconds}, {"battery_fraction", e.battery_fraction},
                            {"battery_wh", kPhoneBatteryWh}, {"measured", e.measured}, {"method", e.method}};
    if (a.spec != "none") {
      if (int rc = bench_speculative(spec_args(a), &j); rc != 0) return rc;
    }
    *json = std::move(j);
    return 0;
  }
  std::printf("| model | size | params | type | threads | test | t/s (median) | t/s (mean ± sd) |\n");
  std::printf("| --- | ---: | ---: | --- | ---: | --- | ---: | ---: |\n");
  for (const auto& r : rows) {
    std::printf("| %s | %.2f MiB | %.2f M | %s | %d | %s | %.2f | %.2f ± %.2f |\n", h.name.c_str(), size_mib, params_m,
                type.c_str(), threads, r.test.c_str(), r.median(), r.mean(), r.sd());
  }
  std::printf("\npeak memory increase: %s measured (plan: weights %s + session %s)\n", format_bytes(peak_increase).c_str(),
              format_bytes(t.plan().weights).c_str(), format_bytes(t.plan().session_total()).c_str());
  if (huge.mapping_bytes > 0) {
    const double file_mib = size_mib, huge_mib = static_cast<double>(huge.huge_bytes) / (1024.0 * 1024.0);
    std::printf("package %s: %.1f of %.1f MiB in 2 MiB pages (%.0f%%)%s\n", a.no_mmap ? "read" : "mapped", huge_mib,
                file_mib, 100.0 * std::min(1.0, huge_mib / file_mib),
                !a.no_mmap && file_mib >= 16.0 && huge_mib < 0.5 * file_mib
                    ? "; the page cache holds most of it in 4 KiB pages (a recently written file does until it is "
                      "evicted and read again), --no-mmap gets 2 MiB pages"
                    : "");
  }
  if (bw.gb_per_s > 0) {
    std::printf("decode roofline: %.2f GB/s read (probe, %d threads) / %s per token = %.1f tok/s; tg at %.0f%% of it\n",
                bw.gb_per_s, threads, format_bytes(bytes_per_token).c_str(), roofline,
                roofline > 0 ? 100.0 * tg_tps / roofline : 0.0);
  }
  if (e.joules > 0) {
    std::printf("energy per call (1024 in, 128 out): %.2f J (%s), %.2e of a %.1f Wh phone battery (1/%.0f)\n", e.joules,
                e.method.c_str(), e.battery_fraction, kPhoneBatteryWh, 1.0 / e.battery_fraction);
  }
  if (a.spec != "none") return bench_speculative(spec_args(a), nullptr);
  return 0;
}

TaskBenchArgs task_args(const BenchArgs& a) {
  TaskBenchArgs t;
  t.model = a.model;
  t.method = a.spec;
  t.draft_model = a.draft_model;
  t.tasks_file = a.task_prompts;
  t.draft_max = a.draft_max;
  t.per_task = a.per_task;
  t.n_gen = a.n_gen;
  t.reps = a.reps_given ? a.reps : 3;
  t.threads = a.threads;
  t.fallback = !a.no_spec_fallback;
  t.no_mmap = a.no_mmap;
  return t;
}

// The rows, then the constrained-decoding rows once the rows' thread pool and session are gone (their idle
// workers must not share the cores with the constrained session's). With --task-prompts, only the per-task report.
int bench(const BenchArgs& a) {
  if (Status st = check_spec_flags("bench", a.spec, a.draft_model); !st.is_ok()) return report("bench", st);
  if (!a.task_prompts.empty()) {
    if (a.output != "json") return bench_tasks(task_args(a), nullptr);
    nlohmann::json j;
    const int rc = bench_tasks(task_args(a), &j);
    if (!j.is_null()) std::printf("%s\n", j.dump(2).c_str());  // also when outputs differ: it says where
    return rc;
  }
  nlohmann::json j;
  if (int rc = bench_rows(a, &j); rc != 0) return rc;
  const bool constrained = !a.schema_file.empty() || !a.grammar_file.empty();
  if (constrained) {
    if (int rc = bench_constrained(constrain_args(a), a.output == "json" ? &j : nullptr); rc != 0) return rc;
  }
  if (a.output == "json" && !j.is_null()) std::printf("%s\n", j.dump(2).c_str());
  return 0;
}

}  // namespace

void register_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* c = app.add_subcommand("bench", "Benchmark prefill and decode (llama-bench conventions)");
  c->add_option("-m,--model", a->model, "Model package (.pocket)")->required();
  c->add_option("-p,--n-prompt", a->n_prompt, "Prompt tokens (pp row; 0: skip)");
  c->add_option("-n,--n-gen", a->n_gen, "Generated tokens (tg row; 0: skip)");
  CLI::Option* reps = c->add_option("-r,--repetitions", a->reps, "Runs after one warm-up (--task-prompts: per example, default 3)");
  c->add_option("-t,--threads", a->threads, "Threads (default: physical cores)");
  c->add_option("-d,--depth", a->depth, "Also measure tg at this context depth");
  c->add_option("-b,--batch-size", a->n_batch, "Rows per prefill pass (default 128; llama-bench's -ub)");
  c->add_option("-o,--output", a->output, "md or json")->check(CLI::IsMember({"md", "json"}));
  c->add_flag("--no-probe", a->no_probe, "Skip the bandwidth probe (no roofline figure)");
  c->add_flag("--no-mmap", a->no_mmap, "Read the package into huge-page memory instead of mapping it (the mapping is shared between processes and gets 2 MiB pages too: docs/performance.md)");
  c->add_option("--spec", a->spec, std::string(kSpecHelp) + "; compared with plain decoding")
      ->check(CLI::IsMember({"none", "ngram", "draft", "block"}));
  c->add_option("--draft-max", a->draft_max, "Longest draft k (1..16); the verify row measures k + 1 rows");
  c->add_option("--model-draft", a->draft_model, kModelDraftHelp);
  c->add_option("--task-prompts", a->task_prompts,
                 "Per-task report instead of the rows: plain vs speculative greedy decoding of each example's chat "
                 "prompt in this task JSONL (pocket-train make-tasks), side by side; exit 1 if any output differs");
  c->add_option("--per-task", a->per_task, "With --task-prompts: examples per task, the first in the file (default 20)");
  c->add_option("-f,--file", a->prompt_file, "Prompt text for the speculative rows (default: -p random tokens)");
  c->add_flag("--spec-only", a->spec_only, "Only the speculative rows");
  c->add_flag("--no-spec-fallback", a->no_spec_fallback,
              "Always speculate (default: decode plainly while speculation is measured slower)");
  c->add_option("--json-schema-file", a->schema_file,
                 "Also measure constrained decoding under this JSON schema: mask cost per token against the decode step");
  c->add_option("--grammar-file", a->grammar_file, "Also measure constrained decoding under this GBNF grammar");
  c->add_option("--constrain-source", a->source_file, "Source text for grounded (copy) strings in the constrained rows");
  c->add_flag("--verify-curve", a->verify_curve,
              "Measure the verify pass for every row count from 2 to k + 1 against a decode step (to choose k)");
  c->callback([a, reps] {
    a->reps_given = reps->count() > 0;
    if (int rc = bench(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
