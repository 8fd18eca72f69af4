// Token shards (format validation), the batch loader (split, shuffle, packing, segments and positions of
// packed examples, state, data-parallel slices), SFT masks through the chat template, the learning-rate
// schedule and checkpoint metadata.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "data/batch_loader.h"
#include "data/chat_data.h"
#include "run/train_config.h"
#include "train_test_util.h"

namespace pocket::train {
namespace {

using pocket::testing::TempDir;
using pocket::testing::read_file;
using pocket::testing::write_file;

TEST(TokenShard, RoundTripsDocumentsAndMasks) {
  TempDir tmp;
  TokenShardWriter w(10, true);
  ASSERT_TRUE(w.add_document(std::vector<int32_t>{1, 2, 3}, std::vector<uint8_t>{0, 1, 1}).is_ok());
  ASSERT_TRUE(w.add_document(std::vector<int32_t>{4, 5}).is_ok());
  EXPECT_FALSE(w.add_document(std::vector<int32_t>{10}).is_ok());  // outside the vocabulary
  ASSERT_TRUE(w.write(tmp.file("a.shard")).is_ok());
  auto s = TokenShard::open(tmp.file("a.shard"));
  ASSERT_TRUE(s.has_value()) << s.status().to_string();
  ASSERT_EQ(s->n_docs(), 2u);
  EXPECT_EQ(s->n_tokens(), 5u);
  EXPECT_EQ(s->doc(1)[1], 5);
  EXPECT_EQ(s->doc_mask(0)[0], 0);
  EXPECT_EQ(s->doc_mask(1)[1], 1);
}

TEST(TokenShard, RejectsCorruptFiles) {
  TempDir tmp;
  TokenShardWriter w(10, false);
  ASSERT_TRUE(w.add_document(std::vector<int32_t>{1, 2, 3}).is_ok());
  ASSERT_TRUE(w.write(tmp.file("a.shard")).is_ok());
  const auto good = read_file(tmp.file("a.shard"));
  auto expect_bad = [&](std::vector<uint8_t> bytes, const char* what) {
    write_file(tmp.file("b.shard"), bytes);
    auto s = TokenShard::open(tmp.file("b.shard"));
    ASSERT_FALSE(s.has_value()) << what;
    EXPECT_EQ(s.status().code(), ErrorCode::kCorruptFile) << what;
    EXPECT_NE(s.status().message().find("b.shard"), std::string::npos) << "the error names the file";
  };
  auto b = good;
  b[0] = 'X';
  expect_bad(b, "magic");
  b = good;
  b.pop_back();
  expect_bad(b, "truncated");
  b = good;
  const uint64_t huge = 1ull << 60;
  std::memcpy(b.data() + 24, &huge, 8);
  expect_bad(b, "n_tokens overflow");
  b = good;
  const int32_t bad_token = 99;
  std::memcpy(b.data() + 48 + 16, &bad_token, 4);
  expect_bad(b, "token out of range");
  b = good;
  const uint64_t bad_offset = 2;
  std::memcpy(b.data() + 48 + 8, &bad_offset, 8);
  expect_bad(b, "offsets");
  expect_bad(std::vector<uint8_t>(good.begin(), good.begin() + 20), "short header");
}

TEST(BatchLoader, SplitIsDisjointAndShuffleIsSeeded) {
  TempDir tmp;
  const std::string shard = testing::write_story_data(tmp.file(""), 200);
  LoaderOptions o;
  o.seq_len = 32;
  o.heldout_fraction = 0.1;
  auto train = BatchLoader::create({shard}, o);
  ASSERT_TRUE(train.has_value()) << train.status().to_string();
  o.split = Split::kHeldOut;
  auto held = BatchLoader::create({shard}, o);
  ASSERT_TRUE(held.has_value());
  EXPECT_EQ((*train)->n_docs() + (*held)->n_docs(), 200u);
  EXPECT_GT((*held)->n_docs(), 5u);

  o.split = Split::kTrain;
  auto a = BatchLoader::create({shard}, o);
  auto b = BatchLoader::create({shard}, o);
  o.seed = 2;
  auto c = BatchLoader::create({shard}, o);
  const Batch ba = (*a)->next(4), bb = (*b)->next(4), bc = (*c)->next(4);
  EXPECT_EQ(ba.inputs, bb.inputs);
  EXPECT_NE(ba.inputs, bc.inputs);
  for (int64_t i = 0; i + 1 < ba.cols; ++i) EXPECT_EQ(ba.targets[i], ba.inputs[i + 1]);  // shifted by one
  EXPECT_FALSE(ba.has_segments());  // pretraining rows are one causal sequence each
  EXPECT_TRUE(ba.positions.empty());
}

// A hand-built packed row: each example and each stretch of padding is its own segment, numbered from 0
// left to right, and positions restart at 0 at every segment start.
TEST(BatchLoader, PackedExamplesGetSegmentsAndRestartedPositions) {
  TempDir tmp;
  TokenShardWriter w(100, true);
  ASSERT_TRUE(w.add_document(std::vector<int32_t>{10, 11, 12, 13, 14}, std::vector<uint8_t>{0, 0, 1, 1, 1}).is_ok());
  ASSERT_TRUE(w.add_document(std::vector<int32_t>{20, 21, 22, 23}).is_ok());  // no mask: every target learned
  ASSERT_TRUE(w.add_document(std::vector<int32_t>{30, 31, 32}, std::vector<uint8_t>{0, 1, 1}).is_ok());
  ASSERT_TRUE(w.add_document(std::vector<int32_t>{40, 41, 42, 43, 44, 45, 46}).is_ok());  // does not fit row 0
  ASSERT_TRUE(w.add_document(std::vector<int32_t>{50}).is_ok());  // no target: skipped
  ASSERT_TRUE(w.write(tmp.file("p.shard")).is_ok());
  LoaderOptions o;
  o.seq_len = 12;
  o.packing = Packing::kExamples;
  o.heldout_fraction = 0;
  o.shuffle = false;
  auto l = BatchLoader::create({tmp.file("p.shard")}, o);
  ASSERT_TRUE(l.has_value()) << l.status().to_string();
  ASSERT_EQ((*l)->rows_per_epoch(), 2u);
  const Batch b = (*l)->next(2);
  ASSERT_TRUE(b.has_segments());
  ASSERT_EQ(b.segments.size(), 24u);
  ASSERT_EQ(b.positions.size(), 24u);
  // Row 0: example 0 (4 inputs), a padding column, example 1 (3), padding, example 2 (2), padding.
  // Row 1: example 3 (6 inputs), then 6 columns of padding.
  const std::vector<int32_t> in = {10, 11, 12, 13, 0, 20, 21, 22, 0, 30, 31, 0,
                                   40, 41, 42, 43, 44, 45, 0, 0, 0, 0, 0, 0};
  const std::vector<int32_t> tgt = {11, 12, 13, 14, 0, 21, 22, 23, 0, 31, 32, 0,
                                    41, 42, 43, 44, 45, 46, 0, 0, 0, 0, 0, 0};
  const std::vector<uint8_t> mask = {0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0,
                                     1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  const std::vector<int32_t> seg = {0, 0, 0, 0, 1, 2, 2, 2, 3, 4, 4, 5,
                                    0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
  const std::vector<int32_t> pos = {0, 1, 2, 3, 0, 0, 1, 2, 0, 0, 1, 0,
                                    0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
  EXPECT_EQ(b.inputs, in);
  EXPECT_EQ(b.targets, tgt);
  EXPECT_EQ(b.mask, mask);
  EXPECT_EQ(b.segments, seg);
  EXPECT_EQ(b.positions, pos);
  // A data-parallel slice carries its own rows' segments and positions.
  (*l)->set_state({});
  const Batch second = (*l)->next(2, 1, 1);
  EXPECT_EQ(second.segments, std::vector<int32_t>(seg.begin() + 12, seg.end()));
  EXPECT_EQ(second.positions, std::vector<int32_t>(pos.begin() + 12, pos.end()));
}

TEST(BatchLoader, StateResumesAndSlicesMatchTheGlobalBatch) {
  TempDir tmp;
  const std::string shard = testing::write_story_data(tmp.file(""), 60);
  LoaderOptions o;
  o.seq_len = 48;
  auto a = BatchLoader::create({shard}, o);
  ASSERT_TRUE(a.has_value());
  const uint64_t per_epoch = (*a)->rows_per_epoch();
  // Run past an epoch boundary, remember the state, and check a fresh loader continues identically.
  for (uint64_t i = 0; i < per_epoch + 3; ++i) (void)(*a)->next(1);
  EXPECT_EQ((*a)->state().epoch, 1u);
  const LoaderState st = (*a)->state();
  const Batch expect = (*a)->next(6);
  auto b = BatchLoader::create({shard}, o);
  (*b)->set_state(st);
  EXPECT_EQ((*b)->next(6).inputs, expect.inputs);
  // Two ranks taking halves of the same global rows see exactly the full batch.
  (*b)->set_state(st);
  auto c = BatchLoader::create({shard}, o);
  (*c)->set_state(st);
  const Batch r0 = (*b)->next(6, 0, 3), r1 = (*c)->next(6, 3, 3);
  std::vector<int32_t> joined = r0.inputs;
  joined.insert(joined.end(), r1.inputs.begin(), r1.inputs.end());
  EXPECT_EQ(joined, expect.inputs);
}

TEST(ChatData, MasksAssistantTurnsOnlyAndPacksExamples) {
  auto tok = testing::char_tokenizer();
  Conversation c = {{"system", "be brief"}, {"user", "opposite of hot?"}, {"assistant", "cold"},
                    {"user", "and up?"}, {"assistant", "down"}};
  auto t = tokenise_chat(*tok, "chatml", c, true);
  ASSERT_TRUE(t.has_value()) << t.status().to_string();
  ASSERT_EQ(t->tokens.size(), t->mask.size());
  EXPECT_EQ(t->tokens[0], tok->bos_id());
  std::vector<int32_t> masked;
  for (size_t i = 0; i < t->tokens.size(); ++i) {
    if (t->mask[i]) masked.push_back(t->tokens[i]);
  }
  // The learned text is each answer and its end-of-turn marker, nothing of the prompts.
  EXPECT_EQ(tok->decode(masked), "cold\ndown\n");
  int n_end = 0;
  for (size_t i = 0; i < t->tokens.size(); ++i) n_end += t->mask[i] && tok->piece_text(t->tokens[i]) == "<|im_end|>";
  EXPECT_EQ(n_end, 2);
  // The prompt part is what `pocket run --special` would encode from the rendered prompt.
  auto prompt = render_prompt("chatml", Conversation(c.begin(), c.begin() + 3));
  ASSERT_TRUE(prompt.has_value());
  std::vector<int32_t> ids;
  ASSERT_TRUE(tok->encode(*prompt, EncodeOptions{.add_bos = true, .parse_special = true}, &ids).is_ok());
  EXPECT_TRUE(std::equal(ids.begin(), ids.end(), t->tokens.begin()));

  TempDir tmp;
  TokenShardWriter w(static_cast<uint32_t>(tok->n_vocab()), true);
  for (const auto& conv : synthetic_opposites(1, 30)) {
    auto tc = tokenise_chat(*tok, "chatml", conv, true);
    ASSERT_TRUE(tc.has_value());
    ASSERT_TRUE(w.add_document(tc->tokens, tc->mask).is_ok());
  }
  ASSERT_TRUE(w.write(tmp.file("chat.shard")).is_ok());
  LoaderOptions o;
  o.seq_len = 96;
  o.packing = Packing::kExamples;
  o.heldout_fraction = 0;
  auto l = BatchLoader::create({tmp.file("chat.shard")}, o);
  ASSERT_TRUE(l.has_value()) << l.status().to_string();
  EXPECT_LT((*l)->rows_per_epoch(), 30u);  // several examples share a row
  const Batch b = (*l)->next(2);
  EXPECT_GT(b.n_loss_tokens(), 0);
  EXPECT_LT(b.n_loss_tokens(), b.rows * b.cols / 2);  // prompts and padding are not learned
  // Segments count up by one exactly where positions restart; each row holds several examples (a segment
  // starting with BOS) and no learned target lies in a padding segment (one starting with token 0).
  ASSERT_TRUE(b.has_segments());
  for (int64_t r = 0; r < b.rows; ++r) {
    int n_examples = 0;
    int32_t first = -1;
    for (int64_t j = 0; j < b.cols; ++j) {
      const size_t i = static_cast<size_t>(r * b.cols + j);
      const bool starts = j == 0 || b.segments[i] != b.segments[i - 1];
      EXPECT_EQ(b.segments[i], j == 0 ? 0 : b.segments[i - 1] + (starts ? 1 : 0)) << "row " << r << " col " << j;
      EXPECT_EQ(b.positions[i], starts ? 0 : b.positions[i - 1] + 1) << "row " << r << " col " << j;
      if (starts) {
        first = b.inputs[i];
        n_examples += first == tok->bos_id();
      }
      if (first != tok->bos_id()) {
        EXPECT_EQ(b.mask[i], 0) << "row " << r << " col " << j;
      }
    }
    EXPECT_GE(n_examples, 2) << "row " << r;
  }
}

TEST(Schedule, WarmsUpThenDecaysToTheFloor) {
  TrainConfig c;
  c.lr = 1e-3;
  c.min_lr = 1e-4;
  c.warmup_steps = 10;
  c.max_steps = 110;
  EXPECT_NEAR(lr_at(c, 0), 1e-4, 1e-12);
  EXPECT_NEAR(lr_at(c, 9), 1e-3, 1e-12);
  EXPECT_NEAR(lr_at(c, 60), 0.5 * (1e-3 + 1e-4), 1e-9);  // half-way down the cosine
  EXPECT_NEAR(lr_at(c, 110), 1e-4, 1e-12);
  for (int s = 10; s < 110; ++s) EXPECT_LE(lr_at(c, s + 1), lr_at(c, s) + 1e-15);
}

TEST(TrainConfig, JsonRoundTrip) {
  TrainConfig c;
  c.stage = Stage::kSft;
  c.model = *architecture_preset("tiny");
  c.data = {"a.shard", "b.shard"};
  c.out_dir = "run";
  c.lr = 0.002;
  c.grad_accum = 3;
  auto d = TrainConfig::from_json(c.to_json());
  ASSERT_TRUE(d.has_value()) << d.status().to_string();
  EXPECT_EQ(d->stage, Stage::kSft);
  EXPECT_EQ(d->data, c.data);
  EXPECT_EQ(d->grad_accum, 3);
  EXPECT_DOUBLE_EQ(d->lr, 0.002);
  EXPECT_EQ(d->model.n_embd, c.model.n_embd);
  EXPECT_EQ(d->device, "cpu");
}

TEST(TrainConfig, DeviceNamesAreCheckedUpFront) {
  TrainConfig c;
  c.model = *architecture_preset("tiny");
  c.data = {"a.shard"};
  c.out_dir = "run";
  c.seq_len = 16;
  for (const char* ok : {"cpu", "cuda", "cuda:0", "cuda:12"}) {
    c.device = ok;
    EXPECT_TRUE(c.validate().is_ok()) << ok;
    auto d = TrainConfig::from_json(c.to_json());
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->device, ok);
  }
  for (const char* bad : {"gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda:1234", "mps", ""}) {
    c.device = bad;
    const Status st = c.validate();
    EXPECT_FALSE(st.is_ok()) << bad;
    EXPECT_NE(st.to_string().find("device"), std::string::npos) << st.to_string();
  }
}

}  // namespace
}  // namespace pocket::train
