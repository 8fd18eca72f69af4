// `pocket-train calibrate`: fits the task layer's calibration temperature for route (or intent) on held-out
// data and shows what each route threshold does — the procedure of docs/tasks.md ("Calibrating route").
// The label log-probabilities come from the runtime's task layer (src/task), as an app would get them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "data/tasks.h"
#include "generate/session.h"
#include "task/task.h"
#include "task_layer_answers.h"

namespace pocket::train::cli {

namespace {

struct Scored {
  std::vector<double> logprobs;  // per label, the model's
  size_t gold = 0;
};

// Probabilities of softmax(logprob / t).
std::vector<double> probs(const std::vector<double>& lp, double t) {
  double mx = -INFINITY;
  for (double v : lp) mx = std::max(mx, v / t);
  std::vector<double> p(lp.size());
  double z = 0.0;
  for (size_t i = 0; i < lp.size(); ++i) z += (p[i] = std::exp(lp[i] / t - mx));
  for (double& v : p) v /= z;
  return p;
}

struct Fit {
  double nll = 0.0, ece = 0.0, accuracy = 0.0;
};

// Mean negative log-likelihood of the gold label, expected calibration error (10 equal-width bins of the top
// probability) and accuracy at temperature t.
Fit evaluate(const std::vector<Scored>& v, double t) {
  Fit f;
  double bin_conf[10] = {}, bin_acc[10] = {};
  int bin_n[10] = {};
  for (const Scored& s : v) {
    const std::vector<double> p = probs(s.logprobs, t);
    const size_t top = static_cast<size_t>(std::max_element(p.begin(), p.end()) - p.begin());
    f.nll -= std::log(std::max(p[s.gold], 1e-300));
    f.accuracy += top == s.gold;
    const int b = std::min(9, static_cast<int>(p[top] * 10.0));
    bin_conf[b] += p[top];
    bin_acc[b] += top == s.gold;
    ++bin_n[b];
  }
  const double n = static_cast<double>(v.size());
  for (int b = 0; b < 10; ++b) {
    if (bin_n[b] > 0) f.ece += std::fabs(bin_conf[b] - bin_acc[b]) / n;
  }
  f.nll /= n;
  f.accuracy /= n;
  return f;
}

}  // namespace

int cmd_calibrate(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("model") || !a.has("data")) {
    std::printf("usage: pocket-train calibrate -m MODEL.pocket --data DEV.jsonl [--task route|intent] [--limit N]\n"
                "         [--threads N] [--json OUT]\n"
                "  scores every example of the task through the task layer, fits the temperature T that minimises\n"
                "  the gold label's negative log-likelihood (give it to `pocket task --calibration-t T`), and for\n"
                "  route lists each threshold's share of requests kept local and the error rate among them.\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"model", "data", "task", "limit", "threads", "json", "help"}); !u.empty()) {
    return report("calibrate", invalid_argument("unknown flag(s) " + u));
  }
  const std::string task = a.str("task", "route");
  if (task != "route" && task != "intent") return report("calibrate", invalid_argument("--task must be route or intent"));
  auto limit = a.i64("limit", 0);
  auto threads = a.i64("threads", 0);
  if (!limit || !threads || *limit < 0 || *threads < 0) return report("calibrate", invalid_argument("bad --limit/--threads"));
  std::ifstream in(a.str("data"), std::ios::binary);
  if (!in) return report("calibrate", io_error("[calibrate] cannot read " + a.str("data")));
  std::stringstream ss;
  ss << in.rdbuf();
  auto data = parse_task_examples_jsonl(ss.str(), a.str("data"));
  if (!data) return report("calibrate", data.status());
  auto model = Model::load(a.str("model"));
  if (!model) return report("calibrate", model.status());
  SessionOptions so;
  so.n_threads = static_cast<int32_t>(*threads);
  so.n_logit_rows = 16;
  auto session = Session::create(*model, so);
  if (!session) return report("calibrate", session.status());

  const TaskKind kind = task == "route" ? TaskKind::kRoute : TaskKind::kIntent;
  std::vector<std::string> labels = task == "route" ? std::vector<std::string>{"local", "cloud"} : intent_labels();
  std::vector<Scored> scored;
  for (const TaskExample& e : *data) {
    if (e.task != kind) continue;
    if (*limit > 0 && static_cast<int64_t>(scored.size()) >= *limit) break;
    auto r = run_task(**session, task_layer_request(e, 64));
    if (!r) return report("calibrate", r.status());
    const nlohmann::ordered_json& ls = task == "route" ? (*r)["scores"]["labels"] : (*r)["labels"];
    Scored s;
    for (const auto& l : ls) s.logprobs.push_back(l["logprob"].get<double>());
    const auto g = std::find(labels.begin(), labels.end(), e.answer);
    if (g == labels.end()) return report("calibrate", invalid_argument("[calibrate] gold answer '" + e.answer + "' is not a label"));
    s.gold = static_cast<size_t>(g - labels.begin());
    scored.push_back(std::move(s));
  }
  if (scored.empty()) return report("calibrate", invalid_argument("[calibrate] no " + task + " examples in the data"));
  // Temperature by grid search on log t (the NLL is smooth and unimodal in t in practice; the grid is fine
  // enough that the fitted value is within 2 % of the optimum).
  double best_t = 1.0, best_nll = evaluate(scored, 1.0).nll;
  for (double lt = std::log(0.05); lt <= std::log(20.0); lt += 0.02) {
    const double nll = evaluate(scored, std::exp(lt)).nll;
    if (nll < best_nll) best_nll = nll, best_t = std::exp(lt);
  }
  const Fit before = evaluate(scored, 1.0), after = evaluate(scored, best_t);
  std::printf("%s: %zu examples\n", task.c_str(), scored.size());
  std::printf("  T = 1      accuracy %.4f  NLL %.4f  ECE %.4f\n", before.accuracy, before.nll, before.ece);
  std::printf("  T = %-6.3f accuracy %.4f  NLL %.4f  ECE %.4f   (--calibration-t %.3f)\n", best_t, after.accuracy,
              after.nll, after.ece, best_t);
  nlohmann::ordered_json j = {{"task", task},         {"n", scored.size()},       {"temperature", best_t},
                              {"before", {{"accuracy", before.accuracy}, {"nll", before.nll}, {"ece", before.ece}}},
                              {"after", {{"accuracy", after.accuracy}, {"nll", after.nll}, {"ece", after.ece}}}};
  if (task == "route") {
    // Each threshold on the calibrated p(local): the share kept on device and how often those were wrong
    // (needed the cloud), and the cloud requests caught.
    std::printf("  threshold  kept local  wrong among local  cloud caught\n");
    for (double th : {0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99}) {
      int local = 0, local_wrong = 0, cloud = 0, cloud_caught = 0;
      for (const Scored& s : scored) {
        const double p_local = probs(s.logprobs, best_t)[0];
        const bool gold_local = s.gold == 0;
        cloud += !gold_local;
        if (p_local >= th) {
          ++local;
          local_wrong += !gold_local;
        } else {
          cloud_caught += !gold_local;
        }
      }
      const double n = static_cast<double>(scored.size());
      std::printf("  %9.2f  %10.3f  %17.4f  %12.3f\n", th, local / n, local > 0 ? static_cast<double>(local_wrong) / local : 0.0,
                  cloud > 0 ? static_cast<double>(cloud_caught) / cloud : 1.0);
      j["thresholds"].push_back({{"threshold", th},
                                 {"kept_local", local / n},
                                 {"wrong_among_local", local > 0 ? static_cast<double>(local_wrong) / local : 0.0},
                                 {"cloud_caught", cloud > 0 ? static_cast<double>(cloud_caught) / cloud : 1.0}});
    }
  }
  if (a.has("json")) {
    std::ofstream out(a.str("json"));
    out << j.dump(2) << "\n";
    if (!out) return report("calibrate", io_error("[calibrate] cannot write " + a.str("json")));
  }
  return 0;
}

}  // namespace pocket::train::cli
