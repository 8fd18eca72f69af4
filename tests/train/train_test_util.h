// Helpers for the train/ tests: the character tokenizer, small shards written on the fly, running binaries.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "data/chat_data.h"
#include "data/synthetic.h"
#include "data/token_shard.h"
#include "run/checkpoint.h"
#include "test_util.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket::train::testing {

inline std::unique_ptr<Tokenizer> char_tokenizer() {
  auto t = build_tokenizer(char_vocabulary());
  EXPECT_TRUE(t.has_value()) << t.status().to_string();
  return std::move(*t);
}

// Writes tokenizer.bin and a story shard of `n_docs` documents into `dir`; returns the shard path.
inline std::string write_story_data(const std::string& dir, int64_t n_docs, uint64_t seed = 1) {
  auto tok = char_tokenizer();
  EXPECT_TRUE(write_binary_file(dir + "/tokenizer.bin", tok->serialize()).is_ok());
  TokenShardWriter w(static_cast<uint32_t>(tok->n_vocab()), false);
  for (const auto& s : synthetic_stories(seed, n_docs)) {
    std::vector<int32_t> ids;
    EXPECT_TRUE(tok->encode(s, EncodeOptions{.add_bos = true}, &ids).is_ok());
    ids.push_back(tok->eos_id());
    EXPECT_TRUE(w.add_document(ids).is_ok());
  }
  const std::string path = dir + "/stories.shard";
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

// Writes tokenizer.bin and a shard of `n_chats` masked chat examples (the "opposites" task, chatml) into
// `dir`; returns the shard path.
inline std::string write_chat_data(const std::string& dir, int64_t n_chats, uint64_t seed = 1) {
  auto tok = char_tokenizer();
  EXPECT_TRUE(write_binary_file(dir + "/tokenizer.bin", tok->serialize()).is_ok());
  TokenShardWriter w(static_cast<uint32_t>(tok->n_vocab()), true);
  for (const auto& conv : synthetic_opposites(seed, n_chats)) {
    auto t = tokenise_chat(*tok, "chatml", conv, true);
    EXPECT_TRUE(t.has_value()) << t.status().to_string();
    if (t.has_value()) {
      EXPECT_TRUE(w.add_document(t->tokens, t->mask).is_ok());
    }
  }
  const std::string path = dir + "/chats.shard";
  EXPECT_TRUE(w.write(path).is_ok());
  return path;
}

// Runs a shell command, returning its exit code and stdout.
inline int run_command(const std::string& cmd, std::string* out) {
  std::FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
    if (out != nullptr) out->append(buf, n);
  }
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace pocket::train::testing
