// Batched answer sampling over the libtorch model (sampler.h) and checkpoint answers to task prompts (answers.h).
#include "nn/sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <numeric>

#include "data/chat_data.h"
#include "nn/answers.h"
#include "nn/train_state.h"
#include "nn/trainer.h"

namespace pocket::train {

namespace {

torch::Tensor long_tensor(const std::vector<int64_t>& v, int64_t rows, int64_t cols) {
  return torch::tensor(v, torch::kInt64).view({rows, cols});
}

}  // namespace

SampledBatch sample_batch(Llama& model, const std::vector<std::vector<int32_t>>& prompts, const SampleOptions& o,
                          const std::vector<uint64_t>& row_seeds) {
  torch::NoGradGuard no_grad;
  const auto B = static_cast<int64_t>(prompts.size());
  TORCH_CHECK(o.temperature <= 0 || row_seeds.size() == prompts.size(), "[sampler] one seed per prompt");
  std::vector<at::Generator> gens;
  if (o.temperature > 0) {
    for (uint64_t s : row_seeds) gens.push_back(at::make_generator<at::CPUGeneratorImpl>(s));
  }
  const int64_t n_ctx = model->hparams().n_ctx_train;
  int64_t P = 0;
  for (const auto& p : prompts) P = std::max(P, static_cast<int64_t>(p.size()));
  // Each row's answer budget: what the request allows and the context still holds.
  std::vector<int64_t> budget(static_cast<size_t>(B));
  int64_t max_budget = 0;
  for (int64_t b = 0; b < B; ++b) {
    const auto len = static_cast<int64_t>(prompts[static_cast<size_t>(b)].size());
    budget[static_cast<size_t>(b)] = std::clamp<int64_t>(n_ctx - len, 0, o.max_new_tokens);
    max_budget = std::max(max_budget, budget[static_cast<size_t>(b)]);
  }
  const int64_t W = P + max_budget;  // the widest the batch can grow
  std::vector<int64_t> tok(static_cast<size_t>(B * W), 0), pos(static_cast<size_t>(B * W)), seg(static_cast<size_t>(B * W));
  std::vector<int64_t> pad(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const auto& p = prompts[static_cast<size_t>(b)];
    const int64_t n_pad = P - static_cast<int64_t>(p.size());
    pad[static_cast<size_t>(b)] = n_pad;
    for (int64_t c = 0; c < W; ++c) {
      const auto k = static_cast<size_t>(b * W + c);
      const bool is_pad = c < n_pad;
      pos[k] = is_pad ? c : c - n_pad;
      seg[k] = is_pad ? 0 : 1;
      if (!is_pad && c < P) tok[k] = p[static_cast<size_t>(c - n_pad)];
    }
  }
  SampledBatch out;
  out.answers.assign(static_cast<size_t>(B), {});
  out.stopped.assign(static_cast<size_t>(B), false);
  std::vector<bool> done(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) done[static_cast<size_t>(b)] = budget[static_cast<size_t>(b)] == 0;
  const torch::Device dev = model->device();
  auto all_tok = long_tensor(tok, B, W), all_pos = long_tensor(pos, B, W).to(dev), all_seg = long_tensor(seg, B, W).to(dev);
  // Incremental decoding: the prompt columns in one cached pass, then one column per new token.
  KvCache cache;
  for (int64_t i = 0; i < max_budget; ++i) {
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    const int64_t cur = P + i;  // the column this iteration fills
    const int64_t from = cache.len, n = cur - from;  // the columns not read yet: the prompt, then the last token
    auto logits = model->forward_cached(all_tok.narrow(1, from, n).to(dev), all_pos.narrow(1, from, n),
                                        all_seg.narrow(1, from, n), &cache)
                      .to(torch::kCPU, torch::kFloat32);  // [B, n_vocab]
    torch::Tensor next;
    if (o.temperature <= 0) {
      next = logits.argmax(-1);
    } else {
      auto probs = torch::softmax(logits / o.temperature, -1);
      next = torch::empty({B}, torch::kInt64);
      for (int64_t b = 0; b < B; ++b) {
        if (!done[static_cast<size_t>(b)]) next[b] = torch::multinomial(probs[b], 1, false, gens[static_cast<size_t>(b)])[0];
      }
    }
    auto next_a = next.accessor<int64_t, 1>();
    auto tok_a = all_tok.accessor<int64_t, 2>();
    for (int64_t b = 0; b < B; ++b) {
      const auto bi = static_cast<size_t>(b);
      if (done[bi]) continue;  // filler stays 0
      const auto id = static_cast<int32_t>(next_a[b]);
      tok_a[b][cur] = id;
      out.answers[bi].push_back(id);
      if (std::find(o.stop_ids.begin(), o.stop_ids.end(), id) != o.stop_ids.end()) {
        out.stopped[bi] = true;
        done[bi] = true;
      } else if (static_cast<int64_t>(out.answers[bi].size()) >= budget[bi]) {
        done[bi] = true;
      }
    }
  }
  int64_t g_max = 0;
  for (const auto& a : out.answers) g_max = std::max(g_max, static_cast<int64_t>(a.size()));
  // Inputs are the columns whose logits are needed: up to the one before the longest answer's last token.
  const int64_t T = std::max<int64_t>(1, P + g_max - 1);
  std::vector<float> mask(static_cast<size_t>(B * T), 0.f);
  for (int64_t b = 0; b < B; ++b) {
    const auto n = static_cast<int64_t>(out.answers[static_cast<size_t>(b)].size());
    for (int64_t k = 0; k < n; ++k) mask[static_cast<size_t>(b * T + P - 1 + k)] = 1.f;
    out.n_tokens += static_cast<int64_t>(prompts[static_cast<size_t>(b)].size()) + n;
  }
  out.inputs = all_tok.narrow(1, 0, T).contiguous();
  out.positions = all_pos.narrow(1, 0, T).to(torch::kCPU).contiguous();
  out.segments = all_seg.narrow(1, 0, T).to(torch::kCPU).contiguous();
  out.mask = torch::tensor(mask, torch::kFloat32).view({B, T});
  return out;
}

Expected<std::vector<int32_t>> encode_task_prompt(const Tokenizer& tok, const std::string& chat_template,
                                                  const TaskExample& e) {
  const Conversation c = {{"user", e.prompt}, {"assistant", e.answer}};
  POCKET_ASSIGN_OR_RETURN(std::string text, render_prompt(chat_template, c));
  const bool add_bos = chat_template != "llama2" && chat_template != "llama3";  // those render BOS in the text
  std::vector<int32_t> ids;
  POCKET_RETURN_IF_ERROR(tok.encode(text, EncodeOptions{.add_bos = add_bos, .parse_special = true}, &ids));
  return ids;
}

Expected<std::vector<std::string>> checkpoint_answers(const std::string& checkpoint,
                                                      const std::vector<TaskExample>& examples,
                                                      const AnswerOptions& o) {
  if (o.batch < 1 || o.max_new_tokens < 1) return invalid_argument("[answers] batch and max_new_tokens must be >= 1");
  try {
    POCKET_ASSIGN_OR_RETURN(LoadedCheckpoint ck, load_checkpoint(checkpoint));
    POCKET_ASSIGN_OR_RETURN(auto tok, load_tokenizer_section(ck.tokenizer));
    if (o.threads > 0) torch::set_num_threads(o.threads);
    Llama model(ck.meta.hparams);
    POCKET_RETURN_IF_ERROR(model->load_named(ck.weights));
    model->eval();
    const std::string tmpl = ck.meta.config.chat_template;
    std::vector<std::vector<int32_t>> prompts;
    for (const auto& e : examples) {
      POCKET_ASSIGN_OR_RETURN(auto ids, encode_task_prompt(*tok, tmpl, e));
      prompts.push_back(std::move(ids));
    }
    // Batches of similar lengths; answers go back to the examples' order.
    std::vector<size_t> order(prompts.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return prompts[a].size() < prompts[b].size(); });
    SampleOptions so;
    so.max_new_tokens = o.max_new_tokens;
    so.temperature = o.temperature;
    so.stop_ids = end_of_turn_ids(*tok);
    std::vector<std::string> out(prompts.size());
    for (size_t start = 0; start < order.size(); start += static_cast<size_t>(o.batch)) {
      const size_t end = std::min(order.size(), start + static_cast<size_t>(o.batch));
      std::vector<std::vector<int32_t>> batch;
      std::vector<uint64_t> seeds;
      for (size_t k = start; k < end; ++k) {
        batch.push_back(prompts[order[k]]);
        seeds.push_back(o.seed + order[k]);  // per example, whatever batch it lands in
      }
      SampledBatch s = sample_batch(model, batch, so, seeds);
      for (size_t k = start; k < end; ++k) {
        std::vector<int32_t> ans = s.answers[k - start];
        if (s.stopped[k - start]) ans.pop_back();
        out[order[k]] = tok->decode(ans);
      }
    }
    return out;
  } catch (const std::exception& e) {
    return Status(ErrorCode::kInternal, std::string("[answers] libtorch: ") + e.what());
  }
}

}  // namespace pocket::train
