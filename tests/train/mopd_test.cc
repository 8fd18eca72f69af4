// MOPD's guarantees: the loss is the reverse KL (and the forward-KL mix) of an independent computation, with
// its gradient; a training step's loss is the KL of its own samples recomputed one sample at a time with
// plain loops; each sample goes to its task's teacher; an interrupted and resumed run ends at the same
// weights; batched greedy answers are those computed one prompt at a time.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "nn/answers.h"
#include "nn/model_facade.h"
#include "nn/mopd.h"
#include "nn/trainer.h"
#include "train_test_util.h"

namespace pocket::train {
namespace {

using pocket::testing::TempDir;

// log softmax of one row, in double.
std::vector<double> log_softmax_row(const float* l, int64_t n) {
  double mx = l[0];
  for (int64_t v = 1; v < n; ++v) mx = std::max(mx, static_cast<double>(l[v]));
  double z = 0;
  for (int64_t v = 0; v < n; ++v) z += std::exp(static_cast<double>(l[v]) - mx);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) out[static_cast<size_t>(v)] = static_cast<double>(l[v]) - mx - std::log(z);
  return out;
}

// sum_v p(v) (log p(v) - log q(v)) with p = exp(lp), q = exp(lq).
double kl(const std::vector<double>& lp, const std::vector<double>& lq) {
  double s = 0;
  for (size_t v = 0; v < lp.size(); ++v) s += std::exp(lp[v]) * (lp[v] - lq[v]);
  return s;
}

std::vector<float> random_logits(std::mt19937& g, size_t n, float scale) {
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// The loss and its gradient through mopd.cc's libtorch code against plain loops in double: reverse KL
// sum_v p_s (log p_s - log p_t) per masked position, d/dz_s = p_s (log p_s - log p_t - KL); the forward part
// sum_v p_t (log p_t - log p_s) has d/dz_s = p_s - p_t. Tolerance 1e-5 relative: float32 softmax and sums
// over 97 entries.
TEST(Mopd, LossIsTheReverseKlOfAnIndependentComputation) {
  std::mt19937 g(7);
  const int64_t n = 9, V = 97;
  const auto s = random_logits(g, static_cast<size_t>(n * V), 2.f);
  const auto t = random_logits(g, static_cast<size_t>(n * V), 2.f);
  const std::vector<uint8_t> mask = {0, 0, 1, 1, 1, 0, 1, 1, 0};
  for (double w : {0.0, 0.25}) {
    auto r = mopd_distill_terms(s, t, V, mask, w);
    ASSERT_TRUE(r.has_value()) << r.status().to_string();
    double want_sum = 0;
    int64_t want_n = 0;
    for (int64_t i = 0; i < n; ++i) {
      const auto ls = log_softmax_row(s.data() + i * V, V), lt = log_softmax_row(t.data() + i * V, V);
      const double rkl = kl(ls, lt), fkl = kl(lt, ls);
      const double want = mask[static_cast<size_t>(i)] ? (1 - w) * rkl + w * fkl : 0.0;
      EXPECT_NEAR(r->per_position[static_cast<size_t>(i)], want, 1e-5 * std::max(1.0, want)) << "position " << i;
      for (int64_t v = 0; v < V; ++v) {
        const double ps = std::exp(ls[static_cast<size_t>(v)]), pt = std::exp(lt[static_cast<size_t>(v)]);
        const double g_rev = ps * (ls[static_cast<size_t>(v)] - lt[static_cast<size_t>(v)] - rkl);
        const double want_g = mask[static_cast<size_t>(i)] ? (1 - w) * g_rev + w * (ps - pt) : 0.0;
        EXPECT_NEAR(r->grad[static_cast<size_t>(i * V + v)], want_g, 1e-6) << i << "," << v;
      }
      want_sum += want;
      want_n += mask[static_cast<size_t>(i)];
    }
    EXPECT_GT(want_sum, 0.5);  // far from trivially zero
    EXPECT_NEAR(r->loss_sum, want_sum, 1e-5 * want_sum) << "w=" << w;
    EXPECT_EQ(r->n_tokens, want_n);
  }
  // Identical distributions give zero loss; shape errors are values, not crashes.
  auto same = mopd_distill_terms(s, s, V, mask, 0.0);
  ASSERT_TRUE(same.has_value());
  EXPECT_NEAR(same->loss_sum, 0.0, 1e-6);
  EXPECT_FALSE(mopd_distill_terms(std::span<const float>(s).first(10), t, V, mask, 0.0).has_value());
}

TEST(Mopd, RouterSendsEachTaskToItsTeacher) {
  auto r = TeacherRouter::create({{"extract", "A"}, {"intent", "B"}, {"tool", "A"}, {"generalist", "G"}});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  ASSERT_EQ(r->checkpoints(), (std::vector<std::string>{"A", "B", "G"}));  // A loaded once
  auto at = [&](TaskKind t) { return r->checkpoints()[*r->route(t)]; };
  EXPECT_EQ(at(TaskKind::kExtract), "A");
  EXPECT_EQ(at(TaskKind::kIntent), "B");
  EXPECT_EQ(at(TaskKind::kTool), "A");
  EXPECT_EQ(at(TaskKind::kRewrite), "G");
  EXPECT_EQ(at(TaskKind::kRoute), "G");
  // Without a generalist a task with no teacher is an error naming it; bad specs are refused.
  auto partial = TeacherRouter::create({{"extract", "A"}});
  ASSERT_TRUE(partial.has_value());
  EXPECT_TRUE(partial->route(TaskKind::kExtract).has_value());
  ASSERT_FALSE(partial->route(TaskKind::kRoute).has_value());
  EXPECT_NE(partial->route(TaskKind::kRoute).status().to_string().find("route"), std::string::npos);
  EXPECT_FALSE(TeacherRouter::create({{"extract", "A"}, {"extract", "B"}}).has_value());
  EXPECT_FALSE(TeacherRouter::create({{"summarise", "A"}}).has_value());
  EXPECT_FALSE(TeacherRouter::create({}).has_value());
  auto bare = parse_teacher_spec("runs/t");
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->domain, "generalist");
  auto named = parse_teacher_spec("tool=runs/t=2");
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(named->domain, "tool");
  EXPECT_EQ(named->checkpoint, "runs/t=2");
  EXPECT_FALSE(parse_teacher_spec("extract=").has_value());
}

// A tiny model trained for a few pretraining steps (a checkpoint with the character tokenizer and chatml).
std::string tiny_checkpoint(const std::string& dir, const std::string& shard, const std::string& name, uint64_t seed,
                            int64_t steps) {
  TrainConfig c;
  c.model.name = "mopd-test";
  c.model.n_vocab = 357;
  c.model.n_embd = 32;
  c.model.n_layers = 2;
  c.model.n_heads = 4;
  c.model.n_kv_heads = 2;
  c.model.head_dim = 8;
  c.model.n_ff = 64;
  c.model.n_ctx_train = 512;
  c.model.rope_style = RopeStyle::kNeox;
  c.data = {shard};
  c.tokenizer = dir + "/tokenizer.bin";
  c.out_dir = dir + "/" + name;
  c.seq_len = 64;
  c.micro_batch = 4;
  c.max_steps = steps;
  c.lr = 1e-2;
  c.warmup_steps = 1;
  c.eval_interval = 0;
  c.threads = 1;
  c.plot = false;
  c.quiet = true;
  c.seed = seed;
  auto r = run_training(c);
  EXPECT_TRUE(r.has_value()) << r.status().to_string();
  return c.out_dir;
}

// English extract and intent prompts (short enough for the test model's 512-token context).
std::string write_prompts(const std::string& path, int n_per_task) {
  std::string lines;
  for (int i = 0; i < n_per_task; ++i) {
    lines += task_example_to_json(generate_task_example(TaskKind::kExtract, Lang::kEn, 100 + i)) + "\n";
    lines += task_example_to_json(generate_task_example(TaskKind::kIntent, Lang::kEn, 200 + i)) + "\n";
  }
  EXPECT_TRUE(write_binary_file(path, std::vector<uint8_t>(lines.begin(), lines.end())).is_ok());
  return path;
}

struct MopdFixture {
  TempDir tmp;
  std::string dir, student, teacher, data;
  MopdFixture() {
    dir = tmp.file("");
    const std::string shard = testing::write_story_data(dir, 60);
    student = tiny_checkpoint(dir, shard, "student", 3, 2);
    teacher = tiny_checkpoint(dir, shard, "teacher", 4, 12);
    data = write_prompts(dir + "/prompts.jsonl", 6);
  }
  MopdConfig config(const std::string& out) const {
    MopdConfig m;
    TrainConfig& c = m.train;
    c.stage = Stage::kSft;
    c.init_from = student;
    c.data = {data};
    c.out_dir = out;
    c.chat_template = "chatml";
    c.micro_batch = 4;
    c.grad_accum = 2;
    c.max_steps = 4;
    c.lr = 5e-3;
    c.min_lr = 5e-4;
    c.warmup_steps = 1;
    c.eval_interval = 0;
    c.log_interval = 1;
    c.threads = 1;
    c.plot = false;
    c.quiet = true;
    c.seed = 11;
    // extract is scored by the student's own weights (KL 0 at step 1), intent by the trained teacher.
    m.teachers = {{"extract", student}, {"intent", teacher}};
    m.max_new_tokens = 6;
    m.temperature = 1.0;
    return m;
  }
};

// Step 1's logged loss is recomputed from its samples alone: each prompt + sampled answer run through the
// student and the routed teacher one sequence at a time (libtorch_logits, no padding or batching), the KL
// summed with the loops above over the answer tokens only. Routing: every extract sample went to teacher 0
// (the student itself: KL 0 up to float noise) and every intent sample to teacher 1.
TEST(Mopd, StepLossIsTheKlOfItsOwnSamplesRecomputedAlone) {
  MopdFixture f;
  MopdConfig m = f.config(f.tmp.file("run"));
  m.train.max_steps = 1;
  m.forward_kl_weight = 0.3;
  auto r = run_mopd(m);
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  ASSERT_EQ(r->steps.size(), 1u);
  ASSERT_EQ(r->samples.size(), 8u);
  auto student = load_checkpoint(f.student);
  auto teacher = load_checkpoint(f.teacher);
  ASSERT_TRUE(student.has_value() && teacher.has_value());
  auto tok = load_tokenizer_section(student->tokenizer);
  ASSERT_TRUE(tok.has_value());
  auto bytes = read_binary_file(f.data);
  auto examples = parse_task_examples_jsonl(std::string(bytes->begin(), bytes->end()), f.data);
  ASSERT_TRUE(examples.has_value());
  double sum = 0;
  int64_t n = 0, n_extract = 0, n_intent = 0;
  for (const MopdSample& s : r->samples) {
    const TaskExample& e = (*examples)[static_cast<size_t>(s.example)];
    EXPECT_EQ(s.task, e.task);
    EXPECT_EQ(s.teacher, e.task == TaskKind::kExtract ? 0u : 1u);
    auto ids = encode_task_prompt(**tok, "chatml", e);
    ASSERT_TRUE(ids.has_value());
    const auto P = static_cast<int64_t>(ids->size());
    std::vector<int32_t> seq = *ids;
    seq.insert(seq.end(), s.answer.begin(), s.answer.end());
    ASSERT_FALSE(s.answer.empty());
    seq.pop_back();  // the last answer token is only a target
    const LoadedCheckpoint& t = s.teacher == 0 ? *student : *teacher;
    auto ls = libtorch_logits(student->meta.hparams, student->weights, seq);
    auto lt = libtorch_logits(t.meta.hparams, t.weights, seq);
    ASSERT_TRUE(ls.has_value() && lt.has_value());
    const int64_t V = student->meta.hparams.n_vocab;
    double sample_kl = 0;
    for (size_t k = 0; k < s.answer.size(); ++k) {  // the logits at column P - 1 + k predict answer token k
      const int64_t col = P - 1 + static_cast<int64_t>(k);
      const auto a = log_softmax_row(ls->data() + col * V, V), b = log_softmax_row(lt->data() + col * V, V);
      sample_kl += 0.7 * kl(a, b) + 0.3 * kl(b, a);
    }
    EXPECT_NEAR(s.kl_sum, sample_kl, 1e-4 * std::max(1.0, sample_kl));
    EXPECT_EQ(s.n_tokens, static_cast<int64_t>(s.answer.size()));
    if (e.task == TaskKind::kExtract) {
      EXPECT_LT(s.kl_sum, 1e-5);
      ++n_extract;
    } else {
      EXPECT_GT(s.kl_sum, 1e-3);
      ++n_intent;
    }
    sum += sample_kl;
    n += static_cast<int64_t>(s.answer.size());
  }
  EXPECT_GT(n_extract, 0);
  EXPECT_GT(n_intent, 0);
  EXPECT_NEAR(r->steps[0].loss, sum / static_cast<double>(n), 1e-4 * (sum / static_cast<double>(n)));
}

double max_weight_diff(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    for (size_t j = 0; j < a[i].data.size(); ++j) m = std::max(m, static_cast<double>(std::fabs(a[i].data[j] - b[i].data[j])));
  }
  return m;
}

// Stopped after 2 of 4 steps and resumed, the run samples the same answers (the draws are seeded by step),
// logs the same losses and ends at the same weights as the uninterrupted run. The same thread count runs
// the same float operations in the same order, so the weights agree bit for bit; 1e-6 is the bound stated
// for the trainer's resume test.
TEST(Mopd, ResumeReproducesTheUninterruptedRun) {
  MopdFixture f;
  auto whole = run_mopd(f.config(f.tmp.file("whole")));
  ASSERT_TRUE(whole.has_value()) << whole.status().to_string();
  ASSERT_EQ(whole->steps.size(), 4u);
  MopdConfig parts = f.config(f.tmp.file("parts"));
  parts.train.stop_after = 2;
  auto p1 = run_mopd(parts);
  ASSERT_TRUE(p1.has_value()) << p1.status().to_string();
  ASSERT_EQ(p1->steps.size(), 2u);
  parts.train.stop_after = 0;
  auto p2 = run_mopd(parts);
  ASSERT_TRUE(p2.has_value()) << p2.status().to_string();
  EXPECT_EQ(p2->first_step, 2);
  ASSERT_EQ(p2->steps.size(), 2u);
  for (size_t i = 0; i < 4; ++i) {
    const StepRecord& got = i < 2 ? p1->steps[i] : p2->steps[i - 2];
    EXPECT_EQ(got.loss, whole->steps[i].loss) << "step " << i + 1;
  }
  ASSERT_EQ(p1->samples.size() + p2->samples.size(), whole->samples.size());
  for (size_t i = 0; i < whole->samples.size(); ++i) {
    const MopdSample& got = i < p1->samples.size() ? p1->samples[i] : p2->samples[i - p1->samples.size()];
    EXPECT_EQ(got.answer, whole->samples[i].answer) << "sample " << i;
  }
  auto a = load_checkpoint(f.tmp.file("whole"));
  auto b = load_checkpoint(f.tmp.file("parts"));
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(b->meta.step, 4);
  EXPECT_LE(max_weight_diff(a->weights, b->weights), 1e-6);
  auto s0 = load_checkpoint(f.student);
  ASSERT_TRUE(s0.has_value());
  EXPECT_GT(max_weight_diff(a->weights, s0->weights), 1e-4);  // training did move the student
}

// Data parallel as pretraining is: two `pocket-train mopd` processes (gloo over a file rendezvous) taking 4
// prompts each of a step reach the weights of one process taking the same 8 prompts as 2 x 4 accumulated.
// Each prompt's draws are seeded by its row in the step's global batch, so both sample the same answers;
// only the summation order of the gradient differs (all-reduced halves vs accumulation), hence 1e-5 as in
// the trainer's data-parallel test.
TEST(Mopd, TwoProcessesMatchOneProcessWithTheSameGlobalBatch) {
  MopdFixture f;
  MopdConfig one = f.config(f.tmp.file("one"));
  one.train.max_steps = 3;
  auto r1 = run_mopd(one);
  ASSERT_TRUE(r1.has_value()) << r1.status().to_string();
  const std::string two = f.tmp.file("two");
  auto rank = [&](int r) {
    return std::string(POCKET_TRAIN_BIN) + " mopd --quiet --no-plot --threads 1 --student " + f.student +
           " --teacher extract=" + f.student + " --teacher intent=" + f.teacher + " --data " + f.data + " --out " + two +
           " --template chatml --batch 4 --accum 1 --steps 3 --lr 5e-3 --min-lr 5e-4 --warmup 1 --wd 0.1" +
           " --eval-interval 0 --log-interval 1 --ckpt-interval 100 --seed 11 --max-new 6 --temperature 1" +
           " --rank " + std::to_string(r) + " --world 2 --rendezvous file:" + f.tmp.file("store");
  };
  const std::string cmd = "(" + rank(1) + ") & p=$!; " + rank(0) + "; a=$?; wait $p; b=$?; exit $((a | b))";
  std::string out;
  ASSERT_EQ(testing::run_command("sh -c '" + cmd + "' 2>&1", &out), 0) << out;
  auto a = load_checkpoint(f.tmp.file("one"));
  auto b = load_checkpoint(two);
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  ASSERT_TRUE(b.has_value()) << b.status().to_string();
  EXPECT_EQ(b->meta.step, 3);
  EXPECT_EQ(b->meta.loader.next_row, a->meta.loader.next_row);
  const double diff = max_weight_diff(a->weights, b->weights);
  std::printf("[mopd data-parallel] max |param diff| after 3 steps, 1 vs 2 processes: %.3g\n", diff);
  EXPECT_LE(diff, 1e-5);

  // --nproc 2 spawns the same two ranks itself.
  const std::string three = f.tmp.file("three");
  std::string cmd3 = rank(0);
  cmd3 = cmd3.substr(0, cmd3.find(" --rank ")) + " --nproc 2";
  const size_t at = cmd3.find(" --out " + two);
  ASSERT_NE(at, std::string::npos);
  cmd3.replace(at, 7 + two.size(), " --out " + three);
  ASSERT_EQ(testing::run_command(cmd3 + " 2>&1", &out), 0) << out;
  auto c = load_checkpoint(three);
  ASSERT_TRUE(c.has_value()) << c.status().to_string();
  EXPECT_EQ(c->meta.step, 3);
  EXPECT_EQ(c->meta.loader.next_row, a->meta.loader.next_row);
  EXPECT_EQ(max_weight_diff(b->weights, c->weights), 0.0) << "--nproc 2 differs from two ranks started by hand";
  EXPECT_FALSE(std::filesystem::exists(three + "/.rendezvous"));
}

// The sampler's KV-cached decoding computes the logits the full forward pass computes at each column.
TEST(Mopd, CachedDecodingMatchesTheFullForwardPass) {
  HParams h;
  h.name = "cache-test";
  h.n_vocab = 64;
  h.n_embd = 32;
  h.n_layers = 2;
  h.n_heads = 4;
  h.n_kv_heads = 2;
  h.head_dim = 8;
  h.n_ff = 48;
  h.n_ctx_train = 64;
  h.rope_style = RopeStyle::kNeox;
  for (bool qk_norm : {false, true}) {
    h.qk_norm = qk_norm;
    h.qkv_bias = qk_norm;
    auto w = init_model_weights(h, 5);
    ASSERT_TRUE(w.has_value()) << w.status().to_string();
    std::vector<int32_t> tokens(30);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 37 + 11) % 64);
    auto full = libtorch_logits(h, *w, tokens);
    ASSERT_TRUE(full.has_value()) << full.status().to_string();
    for (int64_t prefill : {1, 12, 30}) {
      auto cached = libtorch_logits_cached(h, *w, tokens, prefill);
      ASSERT_TRUE(cached.has_value()) << cached.status().to_string();
      ASSERT_EQ(cached->size(), static_cast<size_t>((30 - prefill + 1) * 64));
      float max_err = 0;
      for (size_t i = 0; i < cached->size(); ++i) {
        max_err = std::max(max_err, std::abs((*cached)[i] - (*full)[static_cast<size_t>((prefill - 1) * 64) + i]));
      }
      EXPECT_LT(max_err, 1e-5f) << "prefill " << prefill << (qk_norm ? ", qk-norm" : "");
    }
    EXPECT_FALSE(libtorch_logits_cached(h, *w, tokens, 0).has_value());
    EXPECT_FALSE(libtorch_logits_cached(h, *w, tokens, 31).has_value());
  }
}

// The sampler's left padding and per-row segments leave each prompt's answer as it is alone.
TEST(Mopd, BatchedGreedyAnswersMatchOneAtATime) {
  MopdFixture f;
  std::vector<TaskExample> ex;
  for (int i = 0; i < 5; ++i) ex.push_back(generate_task_example(i % 2 ? TaskKind::kIntent : TaskKind::kRoute, Lang::kEn, 300 + i));
  AnswerOptions o;
  o.max_new_tokens = 8;
  o.threads = 1;
  o.batch = 5;
  auto batched = checkpoint_answers(f.teacher, ex, o);
  o.batch = 1;
  auto single = checkpoint_answers(f.teacher, ex, o);
  ASSERT_TRUE(batched.has_value() && single.has_value()) << batched.status().to_string();
  EXPECT_EQ(*batched, *single);
  for (const auto& s : *batched) EXPECT_FALSE(s.empty());
}

// A task without a teacher, a missing student and a forward-KL weight outside [0, 1] are clear errors.
TEST(Mopd, BadConfigurationsAreErrors) {
  MopdFixture f;
  MopdConfig m = f.config(f.tmp.file("bad"));
  m.teachers = {{"extract", f.student}};  // intent has no teacher
  auto r = run_mopd(m);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().to_string().find("intent"), std::string::npos) << r.status().to_string();
  m = f.config(f.tmp.file("bad2"));
  m.train.init_from = f.tmp.file("nowhere");
  EXPECT_FALSE(run_mopd(m).has_value());
  m = f.config(f.tmp.file("bad3"));
  m.forward_kl_weight = 1.5;
  EXPECT_FALSE(run_mopd(m).has_value());
}

// The command line refuses what it cannot run, with a message naming the problem and exit code 1.
TEST(Mopd, CommandLineErrorsAreClear) {
  MopdFixture f;
  const std::string base = std::string(POCKET_TRAIN_BIN) + " mopd --quiet --no-plot --threads 1 --data " + f.data +
                           " --out " + f.tmp.file("cli") + " --steps 1";
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {" --student " + f.student, "no teacher"},
      {" --teacher generalist=" + f.teacher, "--student"},
      {" --student " + f.student + " --teacher generalist=" + f.teacher + " --fkl 1.5", "forward_kl_weight"},
      {" --student " + f.student + " --teacher generalist=" + f.teacher + " --temprature 1", "--temprature"},
  };
  for (const auto& c : cases) {
    std::string out;
    EXPECT_EQ(testing::run_command(base + c.args + " 2>&1", &out), 1) << c.args << "\n" << out;
    EXPECT_NE(out.find(c.message), std::string::npos) << c.args << "\n" << out;
  }
  EXPECT_FALSE(has_checkpoint(f.tmp.file("cli")));
}

}  // namespace
}  // namespace pocket::train
