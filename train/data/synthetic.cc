// Character vocabulary and generated corpora (see synthetic.h).
#include "data/synthetic.h"

#include <cstdio>
#include <random>

namespace pocket::train {

TokenizerData char_vocabulary() {
  TokenizerData d;
  d.model = TokenizerModel::kSentencePiece;
  d.space_marker = " ";
  d.add_dummy_prefix = false;
  d.add_bos = true;
  d.chat_template = "chatml";
  auto add = [&](std::string piece, TokenType t) {
    d.pieces.push_back(std::move(piece));
    d.types.push_back(t);
    d.scores.push_back(0.0f);
  };
  add("<unk>", TokenType::kUnknown);
  add("<s>", TokenType::kControl);
  add("</s>", TokenType::kControl);
  add("<|im_start|>", TokenType::kControl);
  add("<|im_end|>", TokenType::kControl);
  d.unk_id = 0;
  d.bos_id = 1;
  d.eos_id = 2;
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, TokenType::kByte);
  }
  add("\n", TokenType::kNormal);
  for (int c = 32; c < 127; ++c) add(std::string(1, static_cast<char>(c)), TokenType::kNormal);
  d.source = "char_vocabulary";
  return d;
}

std::vector<std::string> synthetic_stories(uint64_t seed, int64_t n_docs) {
  static const std::vector<std::string> names = {"tom", "mia", "sam", "lily", "ben", "anna"};
  static const std::vector<std::string> animals = {"cat", "dog", "bird", "fish", "frog", "fox"};
  static const std::vector<std::string> colours = {"red", "blue", "green", "yellow", "black", "white"};
  static const std::vector<std::string> things = {"ball", "hat", "box", "cup", "kite", "book"};
  static const std::vector<std::string> places = {"park", "garden", "house", "river", "school", "shop"};
  static const std::vector<std::string> feelings = {"happy", "sad", "tired", "glad", "calm"};
  std::mt19937_64 rng(seed * 7919 + 17);
  auto pick = [&](const std::vector<std::string>& v) -> const std::string& { return v[rng() % v.size()]; };
  std::vector<std::string> docs;
  docs.reserve(static_cast<size_t>(n_docs));
  for (int64_t i = 0; i < n_docs; ++i) {
    const std::string who = pick(names), pet = pick(animals), col = pick(colours), thing = pick(things);
    std::string s = who + " has a " + col + " " + thing + ".";
    const int n = 2 + static_cast<int>(rng() % 3);
    for (int k = 0; k < n; ++k) {
      switch (rng() % 5) {
        case 0: s += " " + who + " goes to the " + pick(places) + "."; break;
        case 1: s += " the " + pet + " sees the " + col + " " + thing + "."; break;
        case 2: s += " " + who + " is " + pick(feelings) + "."; break;
        case 3: s += " " + who + " and the " + pet + " play with the " + thing + "."; break;
        default: s += " the " + thing + " is " + col + "."; break;
      }
    }
    docs.push_back(std::move(s));
  }
  return docs;
}

const std::vector<std::pair<std::string, std::string>>& opposite_pairs() {
  static const std::vector<std::pair<std::string, std::string>> pairs = {
      {"hot", "cold"}, {"big", "small"}, {"up", "down"}, {"fast", "slow"}, {"day", "night"},
      {"old", "new"},  {"wet", "dry"},   {"open", "shut"}, {"good", "bad"}, {"black", "white"}};
  return pairs;
}

std::vector<Conversation> synthetic_opposites(uint64_t seed, int64_t n_examples) {
  const auto& pairs = opposite_pairs();
  std::mt19937_64 rng(seed * 104729 + 3);
  std::vector<Conversation> out;
  for (int64_t i = 0; i < n_examples; ++i) {
    const auto& p = pairs[rng() % pairs.size()];
    const bool flip = rng() % 2 != 0;
    const std::string& a = flip ? p.second : p.first;
    const std::string& b = flip ? p.first : p.second;
    out.push_back({{"user", "opposite of " + a + "?"}, {"assistant", b}});
  }
  return out;
}

}  // namespace pocket::train
