// TrainConfig JSON round trip, validation, and the learning-rate schedule.
#include "run/train_config.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace pocket::train {

using json = nlohmann::json;

const char* stage_name(Stage s) { return s == Stage::kSft ? "sft" : "pretrain"; }

Status TrainConfig::validate() const {
  auto need = [](bool ok, const std::string& what) { return ok ? Status::ok() : invalid_argument("[config] " + what); };
  POCKET_RETURN_IF_ERROR(need(!data.empty(), "no training data (token shards) given"));
  POCKET_RETURN_IF_ERROR(need(!out_dir.empty(), "no output directory given"));
  POCKET_RETURN_IF_ERROR(need(seq_len >= 1, "seq_len must be >= 1"));
  POCKET_RETURN_IF_ERROR(need(micro_batch >= 1 && grad_accum >= 1, "micro_batch and grad_accum must be >= 1"));
  POCKET_RETURN_IF_ERROR(need(max_steps >= 1, "max_steps must be >= 1"));
  POCKET_RETURN_IF_ERROR(need(lr > 0 && min_lr >= 0 && min_lr <= lr, "need 0 <= min_lr <= lr, lr > 0"));
  POCKET_RETURN_IF_ERROR(need(warmup_steps >= 0, "warmup_steps must be >= 0"));
  POCKET_RETURN_IF_ERROR(need(heldout_fraction >= 0 && heldout_fraction < 1, "heldout_fraction must be in [0, 1)"));
  POCKET_RETURN_IF_ERROR(need(log_interval >= 1 && ckpt_interval >= 1, "log_interval and ckpt_interval must be >= 1"));
  {
    bool ok = device == "cpu" || device == "cuda";
    if (!ok && device.rfind("cuda:", 0) == 0 && device.size() > 5 && device.size() <= 7) {
      ok = device.find_first_not_of("0123456789", 5) == std::string::npos;
    }
    POCKET_RETURN_IF_ERROR(need(ok, "device must be cpu, cuda or cuda:N, not '" + device + "'"));
  }
  if (init_from.empty()) {
    POCKET_RETURN_IF_ERROR(model.validate());
    if (seq_len > model.n_ctx_train) {
      return invalid_argument("[config] seq_len " + std::to_string(seq_len) + " exceeds the model's n_ctx_train " +
                              std::to_string(model.n_ctx_train));
    }
  }
  return Status::ok();
}

std::string TrainConfig::to_json() const {
  json j = {{"stage", stage_name(stage)},
            {"model", json::parse(model.to_json())},
            {"data", data},
            {"tokenizer", tokenizer},
            {"chat_template", chat_template},
            {"out_dir", out_dir},
            {"init_from", init_from},
            {"seq_len", seq_len},
            {"micro_batch", micro_batch},
            {"grad_accum", grad_accum},
            {"max_steps", max_steps},
            {"lr", lr},
            {"min_lr", min_lr},
            {"warmup_steps", warmup_steps},
            {"weight_decay", weight_decay},
            {"beta1", beta1},
            {"beta2", beta2},
            {"adam_eps", adam_eps},
            {"grad_clip", grad_clip},
            {"seed", seed},
            {"heldout_fraction", heldout_fraction},
            {"eval_interval", eval_interval},
            {"eval_rows", eval_rows},
            {"log_interval", log_interval},
            {"ckpt_interval", ckpt_interval},
            {"threads", threads},
            {"device", device},
            {"sft_eval_examples", sft_eval_examples},
            {"sft_eval_data", sft_eval_data}};
  return j.dump(1);
}

Expected<TrainConfig> TrainConfig::from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return corrupt_file("[config] not a JSON object");
  TrainConfig c;
  auto get = [&](const char* key, auto* out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return;
    using T = std::remove_pointer_t<decltype(out)>;
    if constexpr (std::is_same_v<T, std::string>) {
      if (it->is_string()) *out = it->template get<std::string>();
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      if (it->is_array()) *out = it->template get<std::vector<std::string>>();
    } else {
      if (it->is_number()) *out = it->template get<T>();
    }
  };
  std::string stage = "pretrain";
  get("stage", &stage);
  if (stage == "sft") c.stage = Stage::kSft;
  else if (stage != "pretrain") return corrupt_file("[config] unknown stage '" + stage + "'");
  if (auto it = j.find("model"); it != j.end() && it->is_object()) {
    POCKET_ASSIGN_OR_RETURN(c.model, HParams::from_json(it->dump()));
  }
  get("data", &c.data);
  get("tokenizer", &c.tokenizer);
  get("chat_template", &c.chat_template);
  get("out_dir", &c.out_dir);
  get("init_from", &c.init_from);
  get("seq_len", &c.seq_len);
  get("micro_batch", &c.micro_batch);
  get("grad_accum", &c.grad_accum);
  get("max_steps", &c.max_steps);
  get("lr", &c.lr);
  get("min_lr", &c.min_lr);
  get("warmup_steps", &c.warmup_steps);
  get("weight_decay", &c.weight_decay);
  get("beta1", &c.beta1);
  get("beta2", &c.beta2);
  get("adam_eps", &c.adam_eps);
  get("grad_clip", &c.grad_clip);
  get("seed", &c.seed);
  get("heldout_fraction", &c.heldout_fraction);
  get("eval_interval", &c.eval_interval);
  get("eval_rows", &c.eval_rows);
  get("log_interval", &c.log_interval);
  get("ckpt_interval", &c.ckpt_interval);
  get("threads", &c.threads);
  get("device", &c.device);
  get("sft_eval_examples", &c.sft_eval_examples);
  get("sft_eval_data", &c.sft_eval_data);
  return c;
}

double lr_at(const TrainConfig& c, int64_t step) {
  if (c.warmup_steps > 0 && step < c.warmup_steps) {
    return c.lr * static_cast<double>(step + 1) / static_cast<double>(c.warmup_steps);
  }
  const int64_t decay_steps = std::max<int64_t>(1, c.max_steps - c.warmup_steps);
  const double t = std::min(1.0, static_cast<double>(step - c.warmup_steps) / static_cast<double>(decay_steps));
  return c.min_lr + 0.5 * (c.lr - c.min_lr) * (1.0 + std::cos(M_PI * t));
}

}  // namespace pocket::train
