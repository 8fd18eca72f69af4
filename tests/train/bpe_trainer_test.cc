// Byte-level BPE training (train/data/bpe_trainer.h): hand-checked merges on tiny corpora, determinism, the
// prefix property the vocabulary study relies on, lossless round trips, and agreement between the runtime
// tokenizer built from the result and the trainer's own segmentation.
#include "data/bpe_trainer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "tokenizer/normalizer.h"
#include "tokenizer/tokenizer_io.h"
#include "tokenizer/utf8.h"

namespace pocket::train {
namespace {

constexpr int32_t kFirstByte = 3;  // ids 0..2: <|endoftext|>, <|im_start|>, <|im_end|>
constexpr int32_t kFirstMerge = 259;

int32_t byte_id(char c) {
  return kFirstByte + static_cast<uint8_t>(c);
}

std::unique_ptr<BpeTrainer> trained(const std::vector<std::string>& texts, int32_t vocab,
                                    int64_t min_freq = 2) {
  BpeTrainOptions o;
  o.vocab_size = vocab;
  o.min_frequency = min_freq;
  auto t = BpeTrainer::create(o);
  EXPECT_TRUE(t.has_value()) << t.status().to_string();
  for (const std::string& s : texts) {
    Status st = (*t)->add_text(s);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  Status st = (*t)->train();
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return std::move(*t);
}

std::unique_ptr<Tokenizer> build(const TokenizerData& d) {
  auto t = build_tokenizer(d);
  EXPECT_TRUE(t.has_value()) << t.status().to_string();
  return t.has_value() ? std::move(*t) : nullptr;
}

// A deterministic mixed Chinese/English corpus: sentences drawn from small lists, with numbers.
std::string mixed_corpus(uint64_t seed, int n_sentences) {
  static const std::vector<std::string> en = {"The cat sat on the mat.",
                                              "I can't find my phone, can you help?",
                                              "Tokenizers turn text into numbers.",
                                              "We trained a small model on two cores.",
                                              "She said: \"hello, world!\"",
                                              "Prices rose by 12% in 2024.",
                                              "Read the file, then write the result.",
                                              "My iPhone手机 is new."};
  static const std::vector<std::string> zh = {
      "今天天气很好，我们去公园散步。", "这个模型在两个处理器核心上训练。",
      "他说：“你好，世界！”",           "分词器把文本变成数字。",
      "我用iPhone拍了3张照片。",        "价格在2024年上涨了12%。",
      "请先读取文件，然后写出结果。",   "小猫坐在垫子上。"};
  std::mt19937_64 rng(seed);
  std::string out;
  for (int i = 0; i < n_sentences; ++i) {
    const auto& pool = (rng() % 2) ? en : zh;
    out += pool[rng() % pool.size()];
    out += (rng() % 5 == 0) ? "\n\n" : (rng() % 2 ? " " : "");
  }
  return out;
}

TEST(BpeTrainer, TinyCorpusGivesTheHandCheckedMerges) {
  // Words: "ab" x1, " ab" x2, " abc" x1. Pair counts: (a,b) 4, (' ',a) 3, (b,c) 1 -> merge "ab" first;
  // then (' ',ab) 3 -> " ab"; then (" ab",c) is seen once, under --min-freq 2.
  auto t = trained({"ab ab ab abc"}, 400);
  const TokenizerData d = t->tokenizer_data();
  ASSERT_EQ(d.merges.size(), 2u);
  EXPECT_EQ(d.merges[0], std::make_pair(byte_id('a'), byte_id('b')));
  EXPECT_EQ(d.merges[1], std::make_pair(byte_id(' '), kFirstMerge));
  ASSERT_EQ(d.pieces.size(), 261u);
  EXPECT_EQ(d.pieces[kFirstMerge], "ab");
  EXPECT_EQ(d.pieces[kFirstMerge + 1],
            "\xC4\xA0"
            "ab");  // GPT-2 spells the space as U+0120
  EXPECT_TRUE(t->stats().stopped_by_min_frequency);
  EXPECT_EQ(t->stats().n_distinct_words, 3);
  EXPECT_EQ(t->stats().n_words, 4);

  // With --min-freq 1 the third merge is made.
  auto t1 = trained({"ab ab ab abc"}, 400, 1);
  ASSERT_EQ(t1->tokenizer_data().merges.size(), 3u);
  EXPECT_EQ(t1->tokenizer_data().merges[2], std::make_pair(kFirstMerge + 1, byte_id('c')));
}

TEST(BpeTrainer, TiesGoToTheSmallerPair) {
  // Words "xy" and " zw", every pair seen once: (' ',z) < (x,y) < (" z",w) by (left id, right id).
  auto t = trained({"xy zw"}, 400, 1);
  const TokenizerData d = t->tokenizer_data();
  ASSERT_EQ(d.merges.size(), 3u);
  EXPECT_EQ(d.merges[0], std::make_pair(byte_id(' '), byte_id('z')));
  EXPECT_EQ(d.merges[1], std::make_pair(byte_id('x'), byte_id('y')));
  EXPECT_EQ(d.merges[2], std::make_pair(kFirstMerge, byte_id('w')));
}

TEST(BpeTrainer, OverlappingPairsAreCountedOnce) {
  // "aaaa" x3: (a,a) occurs 3 times per word but merges twice (aa aa), then (aa,aa) -> "aaaa".
  auto t = trained({"aaaa\naaaa\naaaa"}, 400);
  const TokenizerData d = t->tokenizer_data();
  ASSERT_GE(d.merges.size(), 2u);
  EXPECT_EQ(d.merges[0], std::make_pair(byte_id('a'), byte_id('a')));
  EXPECT_EQ(d.merges[1], std::make_pair(kFirstMerge, kFirstMerge));
  std::vector<int32_t> ids;
  ASSERT_TRUE(t->segment("aaaa", &ids).is_ok());
  EXPECT_EQ(ids, std::vector<int32_t>{kFirstMerge + 1});
}

TEST(BpeTrainer, SameTextSameVocabularyWhateverTheOrder) {
  const std::string a = mixed_corpus(1, 300) + "\n\n", b = mixed_corpus(2, 300);
  const TokenizerData d1 = trained({a, b}, 700)->tokenizer_data();
  const TokenizerData d2 = trained({b, a}, 700)->tokenizer_data();
  const TokenizerData d3 = trained({a, b}, 700)->tokenizer_data();
  EXPECT_EQ(d1.pieces, d2.pieces);
  EXPECT_EQ(d1.merges, d2.merges);
  EXPECT_EQ(d1.pieces, d3.pieces);
  EXPECT_EQ(d1.merges, d3.merges);
}

TEST(BpeTrainer, FirstMergesOfABigRunAreTheSmallRun) {
  const std::string text = mixed_corpus(3, 2000);
  auto big = trained({text}, 560);
  auto small = trained({text}, 420);
  ASSERT_EQ(big->tokenizer_data().pieces.size(), 560u);
  auto cut = bpe_vocabulary_prefix(big->tokenizer_data(), 420);
  ASSERT_TRUE(cut.has_value()) << cut.status().to_string();
  const TokenizerData s = small->tokenizer_data();
  EXPECT_EQ(cut->pieces, s.pieces);
  EXPECT_EQ(cut->merges, s.merges);
  EXPECT_EQ(cut->types, s.types);
  EXPECT_EQ(cut->merges.size(), 420u - kFirstMerge);
  // And the cut tokenizer encodes like the small one.
  auto tc = build(*cut), ts = build(s);
  ASSERT_TRUE(tc && ts);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(tc->encode(text, {}, &a).is_ok());
  ASSERT_TRUE(ts->encode(text, {}, &b).is_ok());
  EXPECT_EQ(a, b);
  EXPECT_FALSE(bpe_vocabulary_prefix(big->tokenizer_data(), 561).has_value());
  EXPECT_FALSE(bpe_vocabulary_prefix(big->tokenizer_data(), 0).has_value());
}

TEST(BpeTrainer, RuntimeEncodingEqualsTheTrainersSegmentation) {
  const std::string text = mixed_corpus(4, 3000);
  auto t = trained({text}, 1200);
  auto tok = build(t->tokenizer_data());
  ASSERT_TRUE(tok);
  std::vector<int32_t> mine, runtime;
  ASSERT_TRUE(t->segment(text, &mine).is_ok());
  ASSERT_TRUE(tok->encode(text, {}, &runtime).is_ok());
  EXPECT_EQ(runtime, mine);
  EXPECT_LT(runtime.size(), text.size() / 3);  // it did learn something
  EXPECT_EQ(tok->decode(runtime), text);
  std::vector<int32_t> unknown;
  EXPECT_FALSE(t->segment("zebra", &unknown).is_ok());
}

TEST(BpeTrainer, AnyInputRoundTripsLosslessly) {
  auto t = trained({mixed_corpus(5, 1000)}, 800);
  auto tok = build(t->tokenizer_data());
  ASSERT_TRUE(tok);
  for (int b = 0; b < 256; ++b) {  // the byte fallback: every byte is a token of its own
    EXPECT_EQ(tok->token_bytes(kFirstByte + b), std::string(1, static_cast<char>(b)));
  }
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 64);
    for (int i = 0; i < n; ++i) {
      switch (rng() % 4) {
        case 0:
          text.push_back(static_cast<char>(rng() % 256));
          break;  // arbitrary bytes, often invalid
        case 1:
          append_utf8(static_cast<uint32_t>(rng() % 0x110000), &text);
          break;
        case 2:
          text += mixed_corpus(rng(), 1);
          break;
        default:
          text.push_back(static_cast<char>(rng() % 128));
          break;
      }
    }
    std::string storage, expect;
    ASSERT_TRUE(append_nfc(sanitize_utf8(text, &storage), &expect).is_ok());
    std::vector<int32_t> ids;
    ASSERT_TRUE(tok->encode(text, {}, &ids).is_ok());
    EXPECT_EQ(tok->decode(ids), expect);
  }
}

TEST(BpeTrainer, SpecialTokensParsedOnlyWhenAsked) {
  auto t = trained({mixed_corpus(6, 500)}, 600);
  const TokenizerData d = t->tokenizer_data();
  EXPECT_EQ(d.pieces[0], "<|endoftext|>");
  EXPECT_EQ(d.pieces[1], "<|im_start|>");
  EXPECT_EQ(d.pieces[2], "<|im_end|>");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(d.types[i], TokenType::kControl);
  EXPECT_EQ(d.eos_id, 0);
  EXPECT_EQ(d.bos_id, -1);
  EXPECT_EQ(d.chat_template, "chatml");
  EXPECT_EQ(d.pre_tokenizer, "pocket");
  EXPECT_EQ(d.normalizer, "nfc");
  auto tok = build(d);
  ASSERT_TRUE(tok);
  const std::string chat = "<|im_start|>user\n你好<|im_end|>\n";
  std::vector<int32_t> plain, special;
  ASSERT_TRUE(tok->encode(chat, {.add_bos = true, .parse_special = false}, &plain).is_ok());
  for (int32_t id : plain) EXPECT_GT(id, 2);
  EXPECT_EQ(tok->decode(plain), chat);
  ASSERT_TRUE(tok->encode(chat, {.add_bos = false, .parse_special = true}, &special).is_ok());
  ASSERT_GE(special.size(), 4u);
  EXPECT_EQ(special.front(), 1);
  EXPECT_EQ(std::count(special.begin(), special.end(), 2), 1);
}

TEST(BpeTrainer, SectionFileRoundTripsAndEncodesAlike) {
  const std::string text = mixed_corpus(7, 800);
  auto t = trained({text}, 700);
  auto tok = build(t->tokenizer_data());
  ASSERT_TRUE(tok);
  const std::vector<uint8_t> bytes = tok->serialize();
  auto parsed = parse_tokenizer_section(bytes, "trained");
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
  EXPECT_EQ(parsed->pre_tokenizer, "pocket");
  auto loaded = load_tokenizer_section(bytes);
  ASSERT_TRUE(loaded.has_value()) << loaded.status().to_string();
  std::vector<int32_t> a, b;
  ASSERT_TRUE(tok->encode(text, {}, &a).is_ok());
  ASSERT_TRUE((*loaded)->encode(text, {}, &b).is_ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ((*loaded)->chat_template_name(), "chatml");
}

TEST(BpeTrainer, LongRepeatsTrainInBoundedTime) {
  // One 200 KB word of one character, plus one of a two-character cycle: merges double the run each time.
  const auto t0 = std::chrono::steady_clock::now();
  auto t = trained({std::string(200000, 'a') + " " + std::string(100000, 'x') + std::string(1, 'y')}, 300);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 10.0);
  EXPECT_EQ(t->tokenizer_data().merges[0], std::make_pair(byte_id('a'), byte_id('a')));
  auto tok = build(t->tokenizer_data());
  ASSERT_TRUE(tok);
  std::vector<int32_t> ids;
  ASSERT_TRUE(tok->encode(std::string(200000, 'a'), {}, &ids).is_ok());
  EXPECT_LT(ids.size(), 200000u / 64 + 10);  // tokens of at most max_token_bytes (64)
  EXPECT_EQ(tok->token_bytes(ids[0]), std::string(64, 'a'));
  EXPECT_GT(t->stats().n_skipped_long, 0);
}

TEST(BpeTrainer, RejectsBadOptions) {
  BpeTrainOptions o;
  o.vocab_size = 100;  // fewer than the specials + 256 bytes
  EXPECT_FALSE(BpeTrainer::create(o).has_value());
  o.vocab_size = 1000;
  o.pre_tokenizer = "nonesuch";
  EXPECT_FALSE(BpeTrainer::create(o).has_value());
  o.pre_tokenizer = "pocket";
  o.eos_token = "<eos>";
  EXPECT_FALSE(BpeTrainer::create(o).has_value());
}

TEST(BpeTrainer, SamplesWholeLinesFromAcrossTheFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "bpe_trainer_sample_test.txt").string();
  std::set<std::string> lines;
  {
    std::ofstream f(path, std::ios::binary);
    for (int i = 0; i < 20000; ++i) {
      const std::string line = "line " + std::to_string(i) + " 第" + std::to_string(i) + "行";
      lines.insert(line);
      f << line << "\n";
    }
  }
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(path));
  auto all = read_training_text({path}, 0);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(static_cast<int64_t>(all->size()), size);
  auto sample = read_training_text({path}, size / 10);
  ASSERT_TRUE(sample.has_value());
  EXPECT_LE(static_cast<int64_t>(sample->size()), size / 10);
  EXPECT_GT(static_cast<int64_t>(sample->size()), size / 12);
  std::istringstream in(*sample);
  std::string line;
  bool first = false, late = false;
  while (std::getline(in, line)) {
    EXPECT_TRUE(lines.count(line)) << "not a whole line: " << line;
    first |= line == "line 0 第0行";
    late |= line.rfind("line 19", 0) == 0 && line.size() > 10 && std::stoi(line.substr(5)) >= 19000;
  }
  EXPECT_TRUE(first);
  EXPECT_TRUE(late);
  std::filesystem::remove(path);
  EXPECT_FALSE(read_training_text({path}, 0).has_value());
}

}  // namespace
}  // namespace pocket::train
