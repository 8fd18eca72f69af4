// `pocket imatrix -m MODEL -f CALIB.txt -o OUT.imatrix`: runs a (reference-precision) model over a
// calibration text and records, for every weight matrix, the mean of x_k^2 of the activation that meets each
// input column k — the statistics `pocket quantize --imatrix` weighs its rounding with (quant/importance.h).
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "quant/importance.h"
#include "quant/quantize.h"
#include "text_eval.h"

namespace pocket::cli {

void register_imatrix(CLI::App& app);

namespace {

struct ImatrixArgs {
  std::string model, file, out;
  TextEvalOptions eval;
};

// Sums x_k^2 per column and counts rows, per tensor name. Tensors met twice per token (none today) would
// count each meeting as a row.
class SquareMeanObserver : public ActivationObserver {
 public:
  void observe(const WeightRef& w, const float* x, int64_t rows) override {
    if (w.name == nullptr) return;
    Acc& a = acc_[*w.name];
    if (a.sum.empty()) a.sum.assign(static_cast<size_t>(w.cols), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * w.cols;
      for (int64_t k = 0; k < w.cols; ++k) a.sum[static_cast<size_t>(k)] += static_cast<double>(row[k]) * row[k];
    }
    a.rows += rows;
  }

  quant::ImportanceMap result(uint64_t n_tokens) const {
    quant::ImportanceMap m;
    m.n_tokens = n_tokens;
    for (const auto& [name, a] : acc_) {
      std::vector<float> v(a.sum.size());
      for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(a.sum[k] / static_cast<double>(a.rows));
      m.columns.emplace(name, std::move(v));
    }
    return m;
  }

 private:
  struct Acc {
    std::vector<double> sum;
    int64_t rows = 0;
  };
  std::map<std::string, Acc> acc_;
};

int imatrix(ImatrixArgs a) {
  auto model = Model::load(a.model);
  if (!model) return report("imatrix", model.status());
  for (const auto& t : (*model)->package().tensors()) {
    if (t.shape.size() == 2 && quant::is_quantised(t.dtype)) {
      std::fprintf(stderr, "pocket imatrix: warning: '%s' is %s; statistics from an f32/f16 reference are better\n",
                   t.name.c_str(), std::string(dtype_name(t.dtype)).c_str());
      break;
    }
  }
  auto text = read_text_file(a.file);
  if (!text) return report("imatrix", text.status());
  SquareMeanObserver obs;
  a.eval.observer = &obs;
  int64_t n = 0;
  Status st = evaluate_text({*model}, *text, a.eval, [](std::span<const float* const>, int32_t) {}, &n);
  if (!st.is_ok()) return report("imatrix", st);
  if (n == 0) return report("imatrix", invalid_argument("[imatrix] no token was evaluated"));
  const quant::ImportanceMap m = obs.result(static_cast<uint64_t>(n));
  if (Status w = quant::write_importance(a.out, m); !w.is_ok()) return report("imatrix", w);
  std::fprintf(stderr, "pocket imatrix: %zu matrices over %lld tokens -> %s\n", m.columns.size(),
               static_cast<long long>(n), a.out.c_str());
  return 0;
}

}  // namespace

void register_imatrix(CLI::App& app) {
  auto a = std::make_shared<ImatrixArgs>();
  CLI::App* c = app.add_subcommand("imatrix", "Activation statistics of a calibration text, for quantize --imatrix");
  c->add_option("-m,--model", a->model, "Reference model package (f32 or f16)")->required();
  c->add_option("-f,--file", a->file, "Calibration text file")->required();
  c->add_option("-o,--output", a->out, "Output .imatrix file")->required();
  c->add_option("-c,--ctx", a->eval.n_ctx, "Window in tokens (default: min(context, 512))");
  c->add_option("-b,--batch", a->eval.n_batch, "Rows per forward pass");
  c->add_option("-t,--threads", a->eval.n_threads, "Threads");
  c->add_option("--max-tokens", a->eval.max_tokens, "Use at most this many tokens of the text");
  c->callback([a] {
    if (int rc = imatrix(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
