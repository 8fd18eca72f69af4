// AdamW construction and checkpoint save/restore for stages with their own training loop (train_state.h).
#include "nn/train_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/serialize.h>

#include <filesystem>
#include <fstream>
#include <mutex>

namespace pocket::train {

namespace fs = std::filesystem;

std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<torch::Tensor>& params, double lr, double beta1,
                                                double beta2, double eps, double weight_decay) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : params) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto opts = torch::optim::AdamWOptions(lr).betas({beta1, beta2}).eps(eps).weight_decay(weight_decay);
  auto opts_nd = opts;
  opts_nd.weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(opts));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(opts_nd));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), opts);
}

std::unique_ptr<torch::optim::AdamW> make_adamw(Llama& model, const TrainConfig& c) {
  return make_adamw(model->parameters(), c.lr, c.beta1, c.beta2, c.adam_eps, c.weight_decay);
}

Status save_train_state(const std::string& run_dir, Llama& model, torch::optim::AdamW& opt, const CheckpointMeta& meta,
                        const std::vector<uint8_t>& tokenizer,
                        const std::vector<std::pair<std::string, std::string>>& extra_files, std::string* committed) {
  const std::string tmp = run_dir + "/" + checkpoint_name(meta.step) + ".tmp";
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return io_error("[train] cannot create " + tmp + ": " + ec.message());
  torch::save(model, tmp + "/model.pt");
  torch::save(opt, tmp + "/optim.pt");
  auto gen = at::detail::getDefaultCPUGenerator();
  torch::Tensor rng_state;
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    rng_state = gen.get_state();
  }
  torch::save(rng_state, tmp + "/rng.pt");
  POCKET_RETURN_IF_ERROR(write_checkpoint_meta(tmp, meta));
  POCKET_RETURN_IF_ERROR(write_binary_file(tmp + "/tokenizer.bin", tokenizer));
  for (const auto& [name, text] : extra_files) {
    std::ofstream out(tmp + "/" + name);
    out << text;
    if (!out) return io_error("[train] cannot write " + tmp + "/" + name);
  }
  POCKET_RETURN_IF_ERROR(commit_checkpoint(run_dir, tmp, meta.step));
  *committed = run_dir + "/" + checkpoint_name(meta.step);
  return Status::ok();
}

Status load_train_state(const std::string& dir, Llama& model, torch::optim::AdamW& opt, torch::Device device) {
  torch::load(model, dir + "/model.pt", device);
  torch::load(opt, dir + "/optim.pt", device);
  torch::Tensor rng_state;
  torch::load(rng_state, dir + "/rng.pt");
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(rng_state);
  return Status::ok();
}

std::vector<int32_t> end_of_turn_ids(const Tokenizer& tok) {
  std::vector<int32_t> s;
  if (tok.eos_id() >= 0) s.push_back(tok.eos_id());
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.token_type(id) != TokenType::kControl) continue;
    const std::string_view p = tok.piece_text(id);
    if ((p == "<|im_end|>" || p == "<|eot_id|>") && id != tok.eos_id()) s.push_back(id);
  }
  return s;
}

}  // namespace pocket::train
