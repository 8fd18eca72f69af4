// `pocket synth --arch NAME`: write a random-weight package of a published architecture; `pocket synth
// --drafter-for TARGET`: a random-weight block drafter for that target (its cost can be measured untrained).
#include <cstdio>
#include <memory>
#include <sstream>

#include "commands.h"
#include "convert/quantize_model.h"
#include "convert/synth.h"
#include "model/model.h"
#include "convert/widen.h"
#include "speculative/block_drafter.h"
#include "speculative/block_drafter_synth.h"
#include "speculative/block_drafter_widen.h"

namespace pocket::cli {

namespace {

struct SynthArgs {
  std::string arch, out, type = "f16";
  uint64_t seed = 1;
  int64_t ctx = 0;
  std::string tokenizer;
  std::string drafter_for, taps;  // --drafter-for: the target and its tapped layers ("1,3")
  int64_t drafter_layers = 1;
  int32_t block_size = 8;
  std::string widen, widen_drafter, drafter_out;  // --widen SMALL [--widen-drafter D --drafter-output OUT]
};

Status synth_widened(const SynthArgs& a, const HParams& shape, DType dt) {
  auto small = Model::load(a.widen);
  if (!small) return small.status();
  WidenOptions o;
  o.dtype = dt;
  o.seed = a.seed;
  POCKET_RETURN_IF_ERROR(write_widened_model(**small, shape, o, a.out));
  auto wide = Model::load(a.out);
  if (!wide) return wide.status();
  const HParams& h = (*wide)->hparams();
  std::fprintf(stderr,
               "pocket synth: wrote %s (%s widened to %s's shape: %.1fM parameters, %s weights; same logits over its "
               "%lld-token vocabulary; its layers at",
               a.out.c_str(), a.widen.c_str(), a.arch.c_str(), static_cast<double>(h.n_params()) / 1e6,
               a.type.c_str(), static_cast<long long>((*small)->hparams().n_vocab));
  auto w = Widening::create((*small)->hparams(), shape);
  if (!w) return w.status();
  for (int32_t l : w->layer_map()) std::fprintf(stderr, " %d", l);
  std::fprintf(stderr, ")\n");
  if (a.widen_drafter.empty()) return Status::ok();
  auto dm = BlockDrafterModel::load(a.widen_drafter);
  if (!dm) return dm.status();
  POCKET_RETURN_IF_ERROR(write_widened_block_drafter(**small, **dm, **wide, o, a.drafter_out));
  std::fprintf(stderr, "pocket synth: wrote %s (the block drafter %s widened for %s)\n", a.drafter_out.c_str(),
               a.widen_drafter.c_str(), a.out.c_str());
  return Status::ok();
}

Status synth_drafter(const SynthArgs& a, DType dt) {
  BlockDrafterSynthOptions o;
  o.n_layers = a.drafter_layers;
  o.block_size = a.block_size;
  o.dtype = dt;
  o.seed = a.seed;
  std::stringstream ss(a.taps);
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      o.target_layers.push_back(v);
    } catch (const std::exception&) {
      return invalid_argument("[synth] --taps wants target layer numbers separated by commas (\"1,3\"), got '" +
                              a.taps + "'");
    }
  }
  auto target = Model::load(a.drafter_for);
  if (!target) return target.status();
  POCKET_RETURN_IF_ERROR(write_random_block_drafter(**target, o, a.out));
  std::fprintf(stderr, "pocket synth: wrote %s (random block drafter for %s: %lld layers, block %d, %s weights)\n",
               a.out.c_str(), a.drafter_for.c_str(), static_cast<long long>(o.n_layers), o.block_size, a.type.c_str());
  return Status::ok();
}

}  // namespace

void register_synth(CLI::App& app) {
  auto a = std::make_shared<SynthArgs>();
  std::string names;
  for (const auto& n : architecture_preset_names()) names += (names.empty() ? "" : ", ") + n;
  CLI::App* c = app.add_subcommand("synth", "Write a random-weight model of a named architecture, or a random block "
                                            "drafter for a model (for benchmarks)");
  CLI::Option* arch = c->add_option("--arch", a->arch, "Architecture: " + names);
  CLI::Option* drafter = c->add_option("--drafter-for", a->drafter_for,
                                       "Instead: a random-weight block drafter package for this target model");
  arch->excludes(drafter);
  c->add_option("-o,--output", a->out, "Output .pocket")->required();
  c->add_option("--type", a->type, "Weight dtype: f32, f16, bf16, q8, q4_g32, q4_g64, q4_g32a");
  c->add_option("--seed", a->seed, "Seed of the random weights");
  c->add_option("-c,--ctx-size", a->ctx, "Default context length recorded in the package");
  c->add_option("--tokenizer", a->tokenizer, "A Hugging Face tokenizer.json to store instead of the placeholder vocabulary");
  c->add_option("--drafter-layers", a->drafter_layers, "--drafter-for: the drafter's transformer blocks (default 1)");
  c->add_option("--taps", a->taps,
                "--drafter-for: target layers whose outputs the drafter reads, e.g. 1,3 (default: first, middle, last)");
  c->add_option("--block-size", a->block_size, "--drafter-for: tokens proposed per drafter pass, 1..16 (default 8)");
  CLI::Option* widen = c->add_option("--widen", a->widen,
                "With --arch: instead of random weights, this trained model widened to the architecture's shape "
                "(the same logits over its vocabulary; docs/speculative.md, \"Widened target\")");
  c->add_option("--widen-drafter", a->widen_drafter,
                "With --widen: also widen this block drafter (made for the --widen model) for the widened target");
  c->add_option("--drafter-output", a->drafter_out, "With --widen-drafter: where to write the widened drafter");
  widen->excludes(drafter);
  c->callback([a] {
    auto dt = parse_quant_type(a->type);
    if (!dt) throw CLI::RuntimeError(report("synth", invalid_argument("[synth] unknown --type '" + a->type + "'")));
    if (!a->drafter_for.empty()) {
      if (Status st = synth_drafter(*a, *dt); !st.is_ok()) throw CLI::RuntimeError(report("synth", st));
      return;
    }
    if (a->arch.empty()) {
      throw CLI::RuntimeError(report(
          "synth", invalid_argument("[synth] give --arch NAME (a model) or --drafter-for TARGET.pocket (a drafter)")));
    }
    auto h = architecture_preset(a->arch);
    if (!h) throw CLI::RuntimeError(report("synth", h.status()));
    if (!a->widen_drafter.empty() && (a->widen.empty() || a->drafter_out.empty())) {
      throw CLI::RuntimeError(report(
          "synth", invalid_argument("[synth] --widen-drafter needs --widen SMALL.pocket and --drafter-output OUT.pocket")));
    }
    if (!a->widen.empty()) {
      if (!a->tokenizer.empty() || a->ctx != 0) {
        throw CLI::RuntimeError(report(
            "synth", invalid_argument("[synth] --widen keeps the model's tokenizer and config: drop --tokenizer/-c")));
      }
      if (Status st = synth_widened(*a, *h, *dt); !st.is_ok()) throw CLI::RuntimeError(report("synth", st));
      return;
    }
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
