// `pocket synth --arch NAME`: write a random-weight package of a published architecture.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "convert/quantize_model.h"
#include "convert/synth.h"

namespace pocket::cli {

void register_synth(CLI::App& app) {
  struct Args {
    std::string arch, out, type = "f16";
    uint64_t seed = 1;
    int64_t ctx = 0;
    std::string tokenizer;
  };
  auto a = std::make_shared<Args>();
  std::string names;
  for (const auto& n : architecture_preset_names()) names += (names.empty() ? "" : ", ") + n;
  CLI::App* c = app.add_subcommand("synth", "Write a random-weight model of a named architecture (for benchmarks)");
  c->add_option("--arch", a->arch, "Architecture: " + names)->required();
  c->add_option("-o,--output", a->out, "Output .pocket")->required();
  c->add_option("--type", a->type, "Weight dtype: f32, f16, bf16, q8, q4_g32, q4_g64, q4_g32a");
  c->add_option("--seed", a->seed, "Seed of the random weights");
  c->add_option("-c,--ctx-size", a->ctx, "Default context length recorded in the package");
  c->add_option("--tokenizer", a->tokenizer, "A Hugging Face tokenizer.json to store instead of the placeholder vocabulary");
  c->callback([a] {
    auto h = architecture_preset(a->arch);
    if (!h) throw CLI::RuntimeError(report("synth", h.status()));
    auto dt = parse_quant_type(a->type);
    if (!dt) throw CLI::RuntimeError(report("synth", invalid_argument("[synth] unknown --type '" + a->type + "'")));
    SynthOptions o;
    o.dtype = *dt;
    o.seed = a->seed;
    o.context_length = a->ctx;
    o.tokenizer_json = a->tokenizer;
    if (Status st = synthesize_model(*h, a->out, o); !st.is_ok()) throw CLI::RuntimeError(report("synth", st));
    std::fprintf(stderr, "pocket synth: wrote %s (%s, %.1fM parameters, %s weights)\n", a->out.c_str(), a->arch.c_str(),
                 static_cast<double>(h->n_params()) / 1e6, a->type.c_str());
  });
}

}  // namespace pocket::cli
