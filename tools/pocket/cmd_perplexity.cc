// `pocket perplexity -m M -f TEXT`: teacher-forced perplexity of a text (windows of -c tokens).
#include <cmath>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "text_eval.h"

namespace pocket::cli {

void register_perplexity(CLI::App& app);

namespace {

struct PplArgs {
  std::string model, file;
  TextEvalOptions eval;
  bool json = false;
};

int perplexity(const PplArgs& a) {
  auto model = Model::load(a.model);
  if (!model) return report("perplexity", model.status());
  auto text = read_text_file(a.file);
  if (!text) return report("perplexity", text.status());
  const int64_t V = (*model)->hparams().n_vocab;
  double nll = 0.0;
  int64_t n = 0;
  Status st = evaluate_text({*model}, *text, a.eval,
                            [&](std::span<const float* const> logits, int32_t target) { nll += token_nll(logits[0], V, target); },
                            &n);
  if (!st.is_ok()) return report("perplexity", st);
  if (n == 0) return report("perplexity", invalid_argument("[perplexity] no token was scored"));
  const double ppl = std::exp(nll / static_cast<double>(n));
  if (std::isnan(ppl)) return report("perplexity", Status(ErrorCode::kNumericalError, "[perplexity] NaN in the logits"));
  if (a.json) {
    std::printf("{\"model\": \"%s\", \"tokens\": %lld, \"nll\": %.6f, \"perplexity\": %.6f}\n", a.model.c_str(),
                static_cast<long long>(n), nll / static_cast<double>(n), ppl);
  } else {
    std::printf("model       %s\ntokens      %lld\nmean nll    %.6f\nperplexity  %.4f\n", a.model.c_str(),
                static_cast<long long>(n), nll / static_cast<double>(n), ppl);
  }
  return 0;
}

}  // namespace

void register_perplexity(CLI::App& app) {
  auto a = std::make_shared<PplArgs>();
  CLI::App* c = app.add_subcommand("perplexity", "Perplexity of a text under a model (teacher forcing)");
  c->add_option("-m,--model", a->model, "Model package")->required();
  c->add_option("-f,--file", a->file, "Text file")->required();
  c->add_option("-c,--ctx", a->eval.n_ctx, "Window in tokens (default: min(context, 512))");
  c->add_option("-b,--batch", a->eval.n_batch, "Rows per forward pass");
  c->add_option("-t,--threads", a->eval.n_threads, "Threads");
  c->add_option("--max-tokens", a->eval.max_tokens, "Evaluate at most this many tokens of the text");
  c->add_flag("--json", a->json, "Print one JSON object");
  c->callback([a] {
    if (int rc = perplexity(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
