// Package -> training checkpoint (see checkpoint_import.h).
#include "nn/checkpoint_import.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>

#include "nn/llama_torch.h"

namespace pocket::train {

namespace fs = std::filesystem;

Expected<ImportSummary> import_checkpoint(const std::string& package, const std::string& run_dir, int32_t threads) {
  if (run_dir.empty()) return invalid_argument("[import] no output run directory given");
  if (has_checkpoint(run_dir)) {
    return invalid_argument("[import] " + run_dir + " already holds a checkpoint; import into a new directory");
  }
  POCKET_ASSIGN_OR_RETURN(ImportedPackage p, import_package(package));
  POCKET_RETURN_IF_ERROR(p.hparams.validate());
  try {
    ImportSummary s;
    s.source_type = p.dominant_type;
    s.n_params = p.hparams.n_params();
    TrainConfig& c = s.meta.config;
    c.stage = Stage::kSft;
    c.model = p.hparams;
    c.chat_template = p.chat_template.empty() ? "none" : p.chat_template;
    c.out_dir = run_dir;
    c.seq_len = std::min<int64_t>(c.seq_len, p.hparams.n_ctx_train);
    c.threads = threads;
    s.meta.hparams = p.hparams;

    Llama model(p.hparams);
    POCKET_RETURN_IF_ERROR(model->load_named(p.weights));
    // The trainer's optimiser layout (train_state.h make_adamw): matrices decayed, vectors not.
    std::vector<torch::Tensor> decay, no_decay;
    for (auto& t : model->parameters()) (t.dim() >= 2 ? decay : no_decay).push_back(t);
    auto opts = torch::optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.adam_eps).weight_decay(c.weight_decay);
    auto opts_nd = opts;
    opts_nd.weight_decay(0.0);
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(opts));
    groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(opts_nd));
    torch::optim::AdamW opt(std::move(groups), opts);

    std::error_code ec;
    fs::create_directories(run_dir, ec);
    const std::string tmp = run_dir + "/" + checkpoint_name(0) + ".tmp";
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp, ec);
    if (ec) return io_error("[import] cannot create " + tmp + ": " + ec.message());
    torch::save(model, tmp + "/model.pt");
    torch::save(opt, tmp + "/optim.pt");
    torch::manual_seed(c.seed);
    auto gen = at::detail::getDefaultCPUGenerator();
    torch::Tensor rng_state;
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      rng_state = gen.get_state();
    }
    torch::save(rng_state, tmp + "/rng.pt");
    POCKET_RETURN_IF_ERROR(write_checkpoint_meta(tmp, s.meta));
    POCKET_RETURN_IF_ERROR(write_binary_file(tmp + "/tokenizer.bin", p.tokenizer));
    POCKET_RETURN_IF_ERROR(commit_checkpoint(run_dir, tmp, 0));
    s.checkpoint = run_dir + "/" + checkpoint_name(0);
    return s;
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("[import] libtorch: ") + e.what());
  }
}

}  // namespace pocket::train
