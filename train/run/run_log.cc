// JSON-lines logging, progress lines and the gnuplot loss curve (see run_log.h).
#include "run/run_log.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace pocket::train {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<int64_t>(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(t / 3600), (long long)(t % 3600 / 60));
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(t / 60), (long long)(t % 60));
  else std::snprintf(buf, sizeof buf, "%llds", (long long)t);
  return buf;
}

Expected<RunLog> RunLog::open(const std::string& dir, bool quiet) {
  const std::string path = dir + "/log.jsonl";
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return io_error("[log] cannot open " + path + " for appending");
  return RunLog(dir, f, quiet);
}

RunLog::~RunLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void RunLog::step(const StepRecord& r, int64_t max_steps) {
  nlohmann::json j = {{"step", r.step},           {"loss", r.loss},     {"lr", r.lr},
                      {"grad_norm", r.grad_norm}, {"tokens", r.tokens}, {"tokens_per_s", r.tokens_per_s},
                      {"elapsed_s", r.elapsed_s}};
  std::fprintf(file_, "%s\n", j.dump().c_str());
  std::fflush(file_);
  if (quiet_) return;
  const double per_step = r.step > 0 ? r.elapsed_s / static_cast<double>(r.step) : 0;
  std::fprintf(stderr, "step %lld/%lld | loss %.4f | lr %.2e | grad %.3f | %.0f tok/s | %s elapsed, ETA %s\n",
               (long long)r.step, (long long)max_steps, r.loss, r.lr, r.grad_norm, r.tokens_per_s,
               format_duration(r.elapsed_s).c_str(),
               format_duration(per_step * static_cast<double>(max_steps - r.step)).c_str());
}

void RunLog::eval(const EvalRecord& r) {
  nlohmann::json j = {{"step", r.step}, {"eval_loss", r.loss}};
  if (r.answer_accuracy >= 0) j["answer_accuracy"] = r.answer_accuracy;
  std::fprintf(file_, "%s\n", j.dump().c_str());
  std::fflush(file_);
  if (quiet_) return;
  std::fprintf(stderr, "eval @ step %lld | held-out loss %.4f", (long long)r.step, r.loss);
  if (r.answer_accuracy >= 0) std::fprintf(stderr, " | answer exact-match %.1f%%", 100.0 * r.answer_accuracy);
  std::fprintf(stderr, "\n");
}

void RunLog::note(const std::string& text) {
  std::fprintf(file_, "%s\n", nlohmann::json{{"note", text}}.dump().c_str());
  std::fflush(file_);
  if (!quiet_) std::fprintf(stderr, "%s\n", text.c_str());
}

Status RunLog::plot() const {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    return unsupported("[log] gnuplot is not installed; no loss curve drawn (apt-get install gnuplot-nox)");
  }
  // Train and eval series as plain columns; a resumed run may repeat steps, the later record wins in the plot.
  std::ifstream in(dir_ + "/log.jsonl");
  std::ostringstream train, eval;
  std::string line;
  int n_train = 0, n_eval = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step")) continue;
    if (j.contains("loss")) {
      train << j["step"].get<int64_t>() << " " << j["loss"].get<double>() << "\n";
      ++n_train;
    }
    if (j.contains("eval_loss")) {
      eval << j["step"].get<int64_t>() << " " << j["eval_loss"].get<double>() << "\n";
      ++n_eval;
    }
  }
  if (n_train == 0) return invalid_argument("[log] nothing to plot in " + dir_ + "/log.jsonl");
  const std::string train_path = dir_ + "/loss_train.dat", eval_path = dir_ + "/loss_eval.dat";
  std::ofstream(train_path) << train.str();
  std::ofstream(eval_path) << eval.str();
  const std::string script_path = dir_ + "/loss.gp";
  {
    std::ofstream gp(script_path);
    gp << "set terminal pngcairo size 900,540 noenhanced\n"
       << "set output '" << dir_ << "/loss.png'\n"
       << "set title 'pocket-train loss'\nset xlabel 'step'\nset ylabel 'loss (nats/token)'\nset grid\n"
       << "set key top right\n"
       << "plot '" << train_path << "' using 1:2 with lines lw 1.5 title 'train'";
    if (n_eval > 0) gp << ", '" << eval_path << "' using 1:2 with linespoints lw 2 pt 7 title 'held-out'";
    gp << "\n";
  }
  const std::string cmd = "gnuplot '" + script_path + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    // pngcairo may be missing in minimal builds; the plain png terminal is always there.
    std::string text;
    {
      std::ifstream f(script_path);
      std::stringstream ss;
      ss << f.rdbuf();
      text = ss.str();
    }
    const std::string from = "pngcairo", to = "png";
    text.replace(text.find(from), from.size(), to);
    std::ofstream(script_path) << text;
    if (std::system(("gnuplot '" + script_path + "'").c_str()) != 0) {
      return io_error("[log] gnuplot failed on " + script_path);
    }
  }
  return Status::ok();
}

}  // namespace pocket::train
