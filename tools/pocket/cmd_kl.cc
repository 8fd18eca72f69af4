// `pocket kl -m QUANT --ref REF -f TEXT`: how far a (quantised) model's next-token distributions are from a
// reference's on the same text: per-token KL(ref || quant) mean, p99 and max, top-1 agreement, both
// perplexities. The two packages must share the vocabulary.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "commands.h"
#include "text_eval.h"

namespace pocket::cli {

void register_kl(CLI::App& app);

namespace {

struct KlArgs {
  std::string model, ref, file;
  TextEvalOptions eval;
  bool json = false;
};

// KL(p || q) with p = softmax(ref), q = softmax(test), in double.
double kl_divergence(const float* ref, const float* test, int64_t n) {
  double mr = ref[0], mt = test[0];
  for (int64_t i = 1; i < n; ++i) mr = std::max(mr, double(ref[i])), mt = std::max(mt, double(test[i]));
  double zr = 0, zt = 0;
  for (int64_t i = 0; i < n; ++i) zr += std::exp(ref[i] - mr), zt += std::exp(test[i] - mt);
  const double lzr = std::log(zr) + mr, lzt = std::log(zt) + mt;
  double kl = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double lp = ref[i] - lzr, lq = test[i] - lzt;
    kl += std::exp(lp) * (lp - lq);
  }
  return std::max(0.0, kl);
}

int64_t argmax(const float* x, int64_t n) { return std::max_element(x, x + n) - x; }

int kl(const KlArgs& a) {
  auto test = Model::load(a.model);
  if (!test) return report("kl", test.status());
  auto ref = Model::load(a.ref);
  if (!ref) return report("kl", ref.status());
  const int64_t V = (*ref)->hparams().n_vocab;
  if ((*test)->hparams().n_vocab != V || (*test)->tokenizer().n_vocab() != (*ref)->tokenizer().n_vocab()) {
    return report("kl", invalid_argument("[kl] the models do not share a vocabulary (" + std::to_string(V) + " vs " +
                                         std::to_string((*test)->hparams().n_vocab) + " rows)"));
  }
  for (int32_t id = 0; id < (*ref)->tokenizer().n_vocab(); ++id) {
    if ((*ref)->tokenizer().token_bytes(id) != (*test)->tokenizer().token_bytes(id)) {  // same text, whatever the spelling
      return report("kl", invalid_argument("[kl] token " + std::to_string(id) + " differs between the two tokenizers"));
    }
  }
  auto text = read_text_file(a.file);
  if (!text) return report("kl", text.status());
  std::vector<double> kls;
  double nll_ref = 0, nll_test = 0;
  int64_t agree = 0, n = 0;
  Status st = evaluate_text({*ref, *test}, *text, a.eval, [&](std::span<const float* const> l, int32_t target) {
    kls.push_back(kl_divergence(l[0], l[1], V));
    nll_ref += token_nll(l[0], V, target);
    nll_test += token_nll(l[1], V, target);
    agree += argmax(l[0], V) == argmax(l[1], V);
  }, &n);
  if (!st.is_ok()) return report("kl", st);
  if (n == 0) return report("kl", invalid_argument("[kl] no token was scored"));
  double sum = 0;
  for (double k : kls) sum += k;
  if (std::isnan(sum)) return report("kl", Status(ErrorCode::kNumericalError, "[kl] NaN in the logits"));
  std::vector<double> sorted = kls;
  std::sort(sorted.begin(), sorted.end());
  const double mean = sum / static_cast<double>(n);
  const double p99 = sorted[std::min(sorted.size() - 1, static_cast<size_t>(std::ceil(0.99 * double(sorted.size()))) - 1)];
  const double top1 = static_cast<double>(agree) / static_cast<double>(n);
  const double ppl_ref = std::exp(nll_ref / double(n)), ppl_test = std::exp(nll_test / double(n));
  if (a.json) {
    std::printf("{\"model\": \"%s\", \"ref\": \"%s\", \"tokens\": %lld, \"kl_mean\": %.8f, \"kl_p99\": %.8f, "
                "\"kl_max\": %.8f, \"top1_agreement\": %.6f, \"ppl\": %.6f, \"ppl_ref\": %.6f}\n",
                a.model.c_str(), a.ref.c_str(), static_cast<long long>(n), mean, p99, sorted.back(), top1, ppl_test, ppl_ref);
  } else {
    std::printf("model            %s\nreference        %s\ntokens           %lld\nKL mean          %.6f\nKL p99           %.6f\n"
                "KL max           %.6f\ntop-1 agreement  %.2f %%\nperplexity       %.4f (reference %.4f)\n",
                a.model.c_str(), a.ref.c_str(), static_cast<long long>(n), mean, p99, sorted.back(), 100.0 * top1, ppl_test,
                ppl_ref);
  }
  return 0;
}

}  // namespace

void register_kl(CLI::App& app) {
  auto a = std::make_shared<KlArgs>();
  CLI::App* c = app.add_subcommand("kl", "KL divergence and top-1 agreement of a model against a reference on a text");
  c->add_option("-m,--model", a->model, "Model to judge (e.g. a quantised package)")->required();
  c->add_option("--ref", a->ref, "Reference package (e.g. f32)")->required();
  c->add_option("-f,--file", a->file, "Text file")->required();
  c->add_option("-c,--ctx", a->eval.n_ctx, "Window in tokens (default: min(context, 512))");
  c->add_option("-b,--batch", a->eval.n_batch, "Rows per forward pass");
  c->add_option("-t,--threads", a->eval.n_threads, "Threads");
  c->add_option("--max-tokens", a->eval.max_tokens, "Evaluate at most this many tokens of the text");
  c->add_flag("--json", a->json, "Print one JSON object");
  c->callback([a] {
    if (int rc = kl(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
