// Package -> training checkpoint (see checkpoint_import.h).
#include "nn/checkpoint_import.h"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>

#include "nn/llama_torch.h"
#include "nn/train_state.h"
#include "nn/trainer.h"
#include "run/grow.h"

namespace pocket::train {

namespace fs = std::filesystem;

namespace {

// A step-0 checkpoint of `weights` (fresh AdamW with the trainer's groups, the seed's RNG state) through the
// trainer's own atomic commit.
Expected<ImportSummary> write_initial_checkpoint(const char* who, const HParams& h,
                                                 const std::vector<NamedTensor>& weights,
                                                 const std::vector<uint8_t>& tokenizer, const std::string& chat_template,
                                                 int64_t seq_len, const std::string& run_dir, int32_t threads) {
  try {
    ImportSummary s;
    s.n_params = h.n_params();
    TrainConfig& c = s.meta.config;
    c.stage = Stage::kSft;
    c.model = h;
    c.chat_template = chat_template.empty() ? "none" : chat_template;
    c.out_dir = run_dir;
    c.seq_len = std::min<int64_t>(seq_len > 0 ? seq_len : c.seq_len, h.n_ctx_train);
    c.threads = threads;
    s.meta.hparams = h;

    Llama model(h);
    POCKET_RETURN_IF_ERROR(model->load_named(weights));
    auto opt = make_adamw(model, c);
    torch::manual_seed(c.seed);
    std::string committed;
    POCKET_RETURN_IF_ERROR(save_train_state(run_dir, model, *opt, s.meta, tokenizer, {}, &committed));
    s.checkpoint = committed;
    return s;
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("[") + who + "] libtorch: " + e.what());
  }
}

}  // namespace

Expected<ImportSummary> import_checkpoint(const std::string& package, const std::string& run_dir, int32_t threads) {
  if (run_dir.empty()) return invalid_argument("[import] no output run directory given");
  if (has_checkpoint(run_dir)) {
    return invalid_argument("[import] " + run_dir + " already holds a checkpoint; import into a new directory");
  }
  POCKET_ASSIGN_OR_RETURN(ImportedPackage p, import_package(package));
  POCKET_RETURN_IF_ERROR(p.hparams.validate());
  POCKET_ASSIGN_OR_RETURN(ImportSummary s, write_initial_checkpoint("import", p.hparams, p.weights, p.tokenizer,
                                                                    p.chat_template, 0, run_dir, threads));
  s.source_type = p.dominant_type;
  return s;
}

Expected<ImportSummary> grow_checkpoint(const std::string& source, const std::string& run_dir, const GrowRequest& req,
                                        int32_t threads) {
  if (run_dir.empty()) return invalid_argument("[grow] no output run directory given");
  const WidthSpec& w = req.width;
  const bool wider = w.n_embd > 0 || w.n_heads > 0 || w.n_kv_heads > 0 || w.n_ff > 0;
  if (!wider && req.new_layers <= 0) {
    return invalid_argument("[grow] nothing to grow: give --layers and/or --width, --heads, --kv-heads, --ff");
  }
  if (has_checkpoint(run_dir)) {
    return invalid_argument("[grow] " + run_dir + " already holds a checkpoint; grow into a new directory");
  }
  POCKET_ASSIGN_OR_RETURN(LoadedCheckpoint src, load_checkpoint(source));
  GrownModel g{src.meta.hparams, src.weights, {}};
  std::string what;
  if (wider) {
    POCKET_ASSIGN_OR_RETURN(g, grow_width(g.hparams, g.weights, w));
    what = "width " + std::to_string(src.meta.hparams.n_embd) + " -> " + std::to_string(g.hparams.n_embd) +
           ", heads " + std::to_string(src.meta.hparams.n_heads) + " -> " + std::to_string(g.hparams.n_heads) +
           ", ffn " + std::to_string(src.meta.hparams.n_ff) + " -> " + std::to_string(g.hparams.n_ff);
  }
  if (req.new_layers > 0) {
    POCKET_ASSIGN_OR_RETURN(g, grow_depth(g.hparams, g.weights, req.new_layers));
    what += std::string(what.empty() ? "" : ", ") + "layers " + std::to_string(src.meta.hparams.n_layers) + " -> " +
            std::to_string(req.new_layers);
  }
  POCKET_RETURN_IF_ERROR(g.hparams.validate());
  POCKET_ASSIGN_OR_RETURN(ImportSummary s,
                          write_initial_checkpoint("grow", g.hparams, g.weights, src.tokenizer,
                                                   src.meta.config.chat_template, src.meta.config.seq_len, run_dir,
                                                   threads));
  s.source_type = "grown: " + what;
  return s;
}

}  // namespace pocket::train
