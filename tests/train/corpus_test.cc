// Tests of the corpus builder (train/data/corpus_builder.h): the .mo parser on hand-built catalogs of both
// byte orders and on hostile ones, the cleaning rules, dedupe, the held-out split and the manifest counts.
#include "data/corpus_builder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace pocket::train {
namespace {

namespace fs = std::filesystem;

// A GNU .mo catalog of `pairs` (the header entry first, as msgfmt writes it), in either byte order.
std::vector<uint8_t> make_mo(const std::vector<std::pair<std::string, std::string>>& pairs, bool big_endian) {
  const uint32_t n = static_cast<uint32_t>(pairs.size());
  const uint32_t orig = 28, trans = orig + 8 * n, strings = trans + 8 * n;
  std::vector<uint8_t> b(strings);
  auto put = [&](size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) b[at + k] = static_cast<uint8_t>(v >> (big_endian ? 8 * (3 - k) : 8 * k));
  };
  put(0, 0x950412de);
  put(4, 0);
  put(8, n);
  put(12, orig);
  put(16, trans);
  put(20, 0);
  put(24, 0);
  auto add = [&](size_t slot, const std::string& s) {
    put(slot, static_cast<uint32_t>(s.size()));
    put(slot + 4, static_cast<uint32_t>(b.size()));
    b.insert(b.end(), s.begin(), s.end());
    b.push_back(0);
  };
  for (uint32_t i = 0; i < n; ++i) add(orig + 8 * i, pairs[i].first);
  for (uint32_t i = 0; i < n; ++i) add(trans + 8 * i, pairs[i].second);
  return b;
}

const std::vector<std::pair<std::string, std::string>> kPairs = {
    {"", "Content-Type: text/plain; charset=UTF-8\n"},
    {"Open file", "打开文件"},
    {"menu\x04Quit", "退出"},
    {std::string("%d file\0%d files", 16), std::string("%d 个文件\0", 13)},
    {"Untranslated", ""},
};

TEST(CorpusMo, ParsesLittleAndBigEndian) {
  for (bool be : {false, true}) {
    const auto bytes = make_mo(kPairs, be);
    auto r = parse_mo(bytes, "t.mo");
    ASSERT_TRUE(r.has_value()) << r.status().message();
    ASSERT_EQ(r->size(), 3u) << "header and untranslated entries are skipped";
    EXPECT_EQ((*r)[0].msgid, "Open file");
    EXPECT_EQ((*r)[0].msgstr, "打开文件");
    EXPECT_EQ((*r)[1].msgid, "Quit") << "context removed";
    EXPECT_EQ((*r)[1].msgstr, "退出");
    EXPECT_EQ((*r)[2].msgid, "%d file") << "singular form only";
    EXPECT_EQ((*r)[2].msgstr, "%d 个文件");
  }
}

TEST(CorpusMo, RejectsEveryTruncation) {
  const auto bytes = make_mo(kPairs, false);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = parse_mo(std::span(bytes.data(), n), "cut.mo");
    ASSERT_FALSE(r.has_value()) << "truncated at " << n;
    EXPECT_NE(r.status().message().find("cut.mo"), std::string::npos) << r.status().message();
  }
}

TEST(CorpusMo, RejectsHostileHeaders) {
  auto bytes = make_mo(kPairs, true);
  auto with = [&](size_t at, uint32_t v) {
    auto b = bytes;
    for (int k = 0; k < 4; ++k) b[at + k] = static_cast<uint8_t>(v >> (8 * (3 - k)));
    return parse_mo(b, "evil.mo");
  };
  EXPECT_FALSE(with(0, 0x12345678).has_value());                      // magic
  EXPECT_EQ(with(4, 2u << 16).status().code(), ErrorCode::kUnsupported);  // future major revision
  for (uint32_t n : {0x10000000u, 0xFFFFFFFFu}) {                     // counts the file cannot hold
    auto r = with(8, n);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.status().message().find("runs past the end"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(with(12, 0xFFFFFFF0u).has_value());  // table offset past the end
  EXPECT_FALSE(with(16, 0xFFFFFFF0u).has_value());
  // A string whose offset + length wraps a 32-bit sum, and one without its NUL.
  EXPECT_FALSE(with(28 + 8, 0xFFFFFFFFu).has_value());
  EXPECT_FALSE(with(28 + 8 + 4, 0xFFFFFFF0u).has_value());
  std::vector<uint8_t> no_nul(bytes.begin(), bytes.end() - 1);  // the last msgstr loses its NUL
  no_nul.push_back('x');
  auto r = parse_mo(no_nul, "nonul.mo");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("NUL"), std::string::npos);
}

TEST(CorpusClean, Utf8Validation) {
  EXPECT_TRUE(pocket::is_valid_utf8("plain 中文 ✓ 𠀀"));
  EXPECT_FALSE(pocket::is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(pocket::is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(pocket::is_valid_utf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(pocket::is_valid_utf8("ab\xE4\xB8"));        // truncated
  EXPECT_FALSE(pocket::is_valid_utf8("\xFF"));
}

TEST(CorpusClean, LineRules) {
  EXPECT_EQ(clean_line("  a \t  b\xC2\xA0\xC2\xA0 c  "), "a b c");
  EXPECT_EQ(clean_line("\x1b[1;31mred\x1b[0m text\x07"), "red text");
  EXPECT_EQ(clean_line("\xE3\x80\x80\xE3\x80\x80第一章　开始"), "第一章开始") << "U+3000 collapsed, CJK spacing removed";
  EXPECT_EQ(clean_line("使用 apt 安装 软件"), "使用 apt 安装软件") << "spaces next to Latin stay";
  EXPECT_EQ(clean_line("e\xCC\x81"), "\xC3\xA9") << "NFC";
  EXPECT_EQ(clean_line("zero\xE2\x80\x8Bwidth\xEF\xBB\xBF"), "zerowidth");

  const CleanRules rules;
  EXPECT_EQ(judge_line("", rules), LineVerdict::kEmpty);
  EXPECT_EQ(judge_line("----------------", rules), LineVerdict::kTooShort);
  EXPECT_EQ(judge_line("12", rules), LineVerdict::kTooShort);
  EXPECT_EQ(judge_line("| a | b | 1 | 2 | 3 |", rules), LineVerdict::kMostlySymbols);
  EXPECT_EQ(judge_line("Prev Up Next", rules), LineVerdict::kBoilerplate);
  EXPECT_EQ(judge_line("上一页下一页", rules), LineVerdict::kBoilerplate);
  EXPECT_EQ(judge_line("* Next5. Contributing", rules), LineVerdict::kBoilerplate);
  EXPECT_EQ(judge_line("Download the ebook", rules), LineVerdict::kBoilerplate);
  EXPECT_EQ(judge_line("Next, install the package.", rules), LineVerdict::kKeep);
  EXPECT_EQ(judge_line("床前明月光，疑是地上霜。", rules), LineVerdict::kKeep);
  EXPECT_EQ(judge_line("$ apt-get install -y foo", rules), LineVerdict::kKeep);
}

TEST(CorpusClean, ScriptsAndLicences) {
  const ScriptCounts c = count_scripts("Debian 系统 123 ü");
  EXPECT_EQ(c.han, 2u);
  EXPECT_EQ(c.latin, 7u);
  EXPECT_STREQ(dominant_script(c), "en") << "6 bytes of Han against 7 Latin letters";
}

TEST(CorpusClean, DominantScriptThreshold) {
  EXPECT_STREQ(dominant_script(count_scripts("apt 软件")), "zh");
  EXPECT_STREQ(dominant_script(count_scripts("install the 软件")), "en");
  EXPECT_STREQ(dominant_script(count_scripts("123 !!")), "");
  EXPECT_EQ(licence_summary("Format: https://x\n\nFiles: *\nLicense: GPL-2+\n\nFiles: a\nLicense: MIT\n"
                            "License: GPL-2+\n This program is free software\n"),
            "GPL-2+, MIT");
  EXPECT_EQ(licence_summary("This text is in the public domain.\n"), "This text is in the public domain.");
  EXPECT_EQ(licence_summary("no words of note\n"), "unknown");
  EXPECT_EQ(licence_summary("The license statement:\n  This program falls under the BSD copyright:\n"),
            "This program falls under the BSD copyright:");
}

TEST(CorpusSplit, StableAndDisjoint) {
  int held = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string doc = "document number " + std::to_string(i);
    const bool h = is_heldout(doc, 7, 0.05);
    EXPECT_EQ(h, is_heldout(doc, 7, 0.05));
    held += h;
  }
  EXPECT_GT(held, 800);
  EXPECT_LT(held, 1200);
  EXPECT_FALSE(is_heldout("x", 7, 0.0));
  EXPECT_EQ(dedupe_hash("Hello  World\n"), dedupe_hash("hello world"));
  EXPECT_NE(dedupe_hash("hello world"), dedupe_hash("hello word"));
}

// A raw directory with two text sources and one catalog source.
class CorpusBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("pocket_corpus_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    write("raw/a-en/meta.json", R"({"kind": "text", "packages": [{"name": "a", "version": "1.0"}]})");
    write("raw/a-en/copyright/a", "Files: *\nLicense: GPL-2+\n");
    std::string en;
    for (int i = 0; i < 40; ++i) {
      en += "Document " + std::to_string(i) +
            " says something about packages and their maintainers, and how they build them.\n" +
            "A long shared footer paragraph that every page of this manual repeats at its very end.\n\f\n";
    }
    // An exact duplicate of document 0, a document too short, one with nothing left after cleaning.
    en += "Document 0 says something about packages and their maintainers, and how they build them.\n\f\n";
    en += "tiny\n\f\n";
    en += "----------\n| 1 | 2 |\nPrev Up Next\n\xFF\xFE broken\n\f\n";
    write("raw/a-en/a.txt", en);
    write("raw/b-zh/meta.json", R"({"kind": "text", "packages": [{"name": "b"}], "licence": "MIT"})");
    write("raw/b-zh/b.txt", "静夜思\n李白\n床前明月光，疑是地上霜。\n举头望明月，低头思故乡。\n\f\n"
                            "春晓\n孟浩然\n春眠不觉晓，处处闻啼鸟。\n夜来风雨声，花落知多少。\n");
    write("raw/c-mo/meta.json", R"({"kind": "mo", "packages": [{"name": "c", "version": "2"}]})");
    const auto mo = make_mo({{"", "header"},
                             {"Open file", "打开文件"},
                             {"_Save", "保存(_S)"},
                             {"Open file", "打开文件"},  // duplicate pair
                             {"%d", "%d"},
                             {"Quit", "Quit"}},
                            false);
    write("raw/c-mo/mo/c.mo", std::string(mo.begin(), mo.end()));
    opts_.raw_dir = (root_ / "raw").string();
    opts_.out_dir = (root_ / "out").string();
    opts_.heldout_frac = 0.2;
    opts_.seed = 3;
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel, std::ios::binary) << text;
  }
  std::string read(const std::string& rel) {
    std::ifstream in(root_ / rel, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  fs::path root_;
  CorpusOptions opts_;
};

TEST_F(CorpusBuild, CountsDedupeAndSplit) {
  auto r = build_corpus(opts_);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  ASSERT_EQ(r->sources.size(), 3u);
  const SourceStats& a = r->sources[0];
  EXPECT_EQ(a.name, "a-en");
  EXPECT_EQ(a.licence, "GPL-2+");
  EXPECT_EQ(a.n_documents, 40u);
  EXPECT_EQ(a.duplicate_documents, 1u);
  EXPECT_EQ(a.duplicate_paragraphs, 39u) << "the footer is kept once";
  EXPECT_EQ(a.short_documents, 1u);
  EXPECT_EQ(a.invalid_utf8_lines, 1u);
  EXPECT_EQ(a.han, 0u);
  const SourceStats& b = r->sources[1];
  EXPECT_EQ(b.licence, "MIT");
  EXPECT_EQ(b.n_documents, 2u);
  EXPECT_EQ(b.han, 50u);
  EXPECT_EQ(b.packages[0].second, "unknown");
  const SourceStats& c = r->sources[2];
  EXPECT_EQ(c.n_pairs, 2u);
  EXPECT_EQ(c.duplicate_paragraphs, 1u);
  EXPECT_EQ(c.n_documents, 1u);

  const std::string train = read("out/train.txt"), held = read("out/heldout.txt");
  EXPECT_EQ(r->totals.n_documents, 43u);
  EXPECT_EQ(r->totals.kept_bytes, train.size() + held.size());
  EXPECT_EQ(r->totals.zh_bytes + r->totals.en_bytes, r->totals.kept_bytes - r->totals.n_documents)
      << "every kept line (and its newline) is Chinese or English here; the blank separators are not";
  // Disjoint: no document in both; together they are all the documents.
  size_t n_train = 0, n_held = 0;
  for (size_t p = 0; (p = train.find("\n\n", p)) != std::string::npos; p += 2) ++n_train;
  for (size_t p = 0; (p = held.find("\n\n", p)) != std::string::npos; p += 2) ++n_held;
  EXPECT_EQ(n_train + n_held, 43u);
  EXPECT_EQ(n_held, r->totals.n_heldout);
  EXPECT_GT(n_held, 0u);
  EXPECT_EQ(train.find("tiny"), std::string::npos);
  EXPECT_EQ(train.find("Prev Up Next"), std::string::npos);
  EXPECT_EQ(read("out/heldout_zh.txt").size() + read("out/heldout_en.txt").size(), held.size());

  std::istringstream pj(read("out/parallel.jsonl"));
  std::string line;
  std::vector<nlohmann::json> pairs;
  while (std::getline(pj, line)) pairs.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[1]["en"], "Save") << "access keys stripped";
  EXPECT_EQ(pairs[1]["zh"], "保存");
  EXPECT_EQ(pairs[1]["catalog"], "c");

  auto m = nlohmann::json::parse(read("out/manifest.json"));
  EXPECT_EQ(m["totals"]["documents"], 43);
  EXPECT_EQ(m["sources"][0]["packages"][0]["version"], "1.0");
  EXPECT_EQ(m["sources"][2]["parallel_pairs"], 2);
}

TEST_F(CorpusBuild, DeterministicAndSeeded) {
  ASSERT_TRUE(build_corpus(opts_).has_value());
  const std::string t1 = read("out/train.txt"), m1 = read("out/manifest.json");
  ASSERT_TRUE(build_corpus(opts_).has_value());
  EXPECT_EQ(read("out/train.txt"), t1);
  EXPECT_EQ(read("out/manifest.json"), m1);
  opts_.seed = 4;
  ASSERT_TRUE(build_corpus(opts_).has_value());
  EXPECT_NE(read("out/train.txt"), t1) << "another seed, another order and split";
}

TEST_F(CorpusBuild, ErrorsNameTheFile) {
  write("raw/c-mo/mo/evil.mo", std::string("\xde\x12\x04\x95\0\0\0\0\xff\xff\xff\x0f", 12) + std::string(16, '\0'));
  auto r = build_corpus(opts_);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("evil.mo"), std::string::npos) << r.status().message();

  CorpusOptions bad = opts_;
  bad.raw_dir = (root_ / "missing").string();
  EXPECT_FALSE(build_corpus(bad).has_value());
  bad = opts_;
  bad.heldout_frac = 1.5;
  EXPECT_EQ(build_corpus(bad).status().code(), ErrorCode::kInvalidArgument);
  write("raw/a-en/meta.json", "{not json");
  bad = opts_;
  r = build_corpus(bad);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("meta.json"), std::string::npos);
}

}  // namespace
}  // namespace pocket::train
