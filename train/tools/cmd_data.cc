// `pocket-train tokenize` (text or chats -> a token shard) and `pocket-train make-data` (generated corpus,
// character tokenizer and shards for smoke runs and tests).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "data/chat_data.h"
#include "data/synthetic.h"
#include "data/token_shard.h"
#include "format/package.h"
#include "run/checkpoint.h"
#include "tokenizer/tokenizer_data.h"

namespace pocket::train::cli {

namespace {

std::string read_text(const std::string& path, Status* st) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *st = io_error("cannot read " + path);
    return {};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A tokenizer from a tokenizer section file, a .pocket package, or a llama2.c tok*.bin (with --vocab).
Expected<std::unique_ptr<Tokenizer>> open_tokenizer(const Args& a) {
  const std::string path = a.str("tokenizer");
  if (path.empty()) return invalid_argument("--tokenizer PATH is required");
  if (path.size() > 7 && path.compare(path.size() - 7, 7, ".pocket") == 0) {
    POCKET_ASSIGN_OR_RETURN(Package pkg, Package::open(path));
    return load_tokenizer_section(pkg.tokenizer_bytes());
  }
  if (a.has("llama2c-vocab")) {
    POCKET_ASSIGN_OR_RETURN(int64_t n, a.i64("llama2c-vocab", 0));
    return load_llama2c_tokenizer(path, static_cast<int32_t>(n));
  }
  POCKET_ASSIGN_OR_RETURN(auto bytes, read_binary_file(path));
  return load_tokenizer_section(bytes);
}

// Documents of a text file: JSONL {"text": ...} lines, or plain text split at blank lines.
std::vector<std::string> split_documents(const std::string& path, const std::string& text) {
  std::vector<std::string> docs;
  const bool jsonl = path.size() > 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0;
  std::istringstream in(text);
  std::string line, cur;
  while (std::getline(in, line)) {
    if (jsonl) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.is_object() && j.contains("text") && j["text"].is_string()) {
        docs.push_back(j["text"].get<std::string>());
      }
      continue;
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) {
      if (!cur.empty()) docs.push_back(cur);
      cur.clear();
    } else {
      cur += (cur.empty() ? "" : "\n") + line;
    }
  }
  if (!cur.empty()) docs.push_back(cur);
  return docs;
}

Status tokenize_text(const Tokenizer& tok, const std::vector<std::string>& docs, const std::string& out) {
  TokenShardWriter w(static_cast<uint32_t>(tok.n_vocab()), false);
  for (const auto& d : docs) {
    std::vector<int32_t> ids;
    POCKET_RETURN_IF_ERROR(tok.encode(d, EncodeOptions{.add_bos = true, .parse_special = false}, &ids));
    if (tok.eos_id() >= 0) ids.push_back(tok.eos_id());
    POCKET_RETURN_IF_ERROR(w.add_document(ids));
  }
  POCKET_RETURN_IF_ERROR(w.write(out));
  std::fprintf(stderr, "tokenize: %llu documents, %llu tokens -> %s\n", (unsigned long long)w.n_docs(),
               (unsigned long long)w.n_tokens(), out.c_str());
  return Status::ok();
}

Status tokenize_chats(const Tokenizer& tok, const std::string& tmpl, const std::vector<Conversation>& convs,
                      const std::string& out) {
  TokenShardWriter w(static_cast<uint32_t>(tok.n_vocab()), true);
  const bool add_bos = tmpl != "llama2" && tmpl != "llama3";  // those render BOS in the text
  uint64_t n_loss = 0;
  for (const auto& c : convs) {
    POCKET_ASSIGN_OR_RETURN(TokenisedChat t, tokenise_chat(tok, tmpl, c, add_bos));
    for (uint8_t m : t.mask) n_loss += m;
    POCKET_RETURN_IF_ERROR(w.add_document(t.tokens, t.mask));
  }
  POCKET_RETURN_IF_ERROR(w.write(out));
  std::fprintf(stderr, "tokenize: %llu conversations, %llu tokens (%llu assistant tokens in the loss) -> %s\n",
               (unsigned long long)w.n_docs(), (unsigned long long)w.n_tokens(), (unsigned long long)n_loss,
               out.c_str());
  return Status::ok();
}

}  // namespace

int cmd_tokenize(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("out")) {
    std::printf("usage: pocket-train tokenize --tokenizer tokenizer.bin|model.pocket|tok.bin [--llama2c-vocab N]\n"
                "         [--chat --template chatml] -o out.shard INPUT...\n");
    return a.has("help") ? 0 : 1;
  }
  if (std::string u = a.unknown({"tokenizer", "llama2c-vocab", "chat", "template", "out", "help"}); !u.empty()) {
    return report("tokenize", invalid_argument("unknown flag(s) " + u));
  }
  auto tok = open_tokenizer(a);
  if (!tok) return report("tokenize", tok.status());
  Status st;
  if (a.has("chat")) {
    std::vector<Conversation> all;
    for (const auto& p : a.all("")) {
      const std::string text = read_text(p, &st);
      if (!st.is_ok()) return report("tokenize", st);
      auto c = parse_conversations_jsonl(text, p);
      if (!c) return report("tokenize", c.status());
      all.insert(all.end(), c->begin(), c->end());
    }
    std::string tmpl = a.str("template", std::string((*tok)->chat_template_name()));
    if (tmpl.empty()) tmpl = "chatml";
    st = tokenize_chats(**tok, tmpl, all, a.str("out"));
  } else {
    std::vector<std::string> docs;
    for (const auto& p : a.all("")) {
      const std::string text = read_text(p, &st);
      if (!st.is_ok()) return report("tokenize", st);
      auto d = split_documents(p, text);
      docs.insert(docs.end(), d.begin(), d.end());
    }
    st = tokenize_text(**tok, docs, a.str("out"));
  }
  return st.is_ok() ? 0 : report("tokenize", st);
}

int cmd_make_data(int argc, char** argv) {
  Args a(argc, argv, 2);
  if (a.has("help") || !a.has("out")) {
    std::printf("usage: pocket-train make-data -o DIR [--docs N] [--chats N] [--seed S]\n"
                "  writes DIR/tokenizer.bin (357-token character vocabulary, chatml), stories.txt + stories.shard,\n"
                "  chats.jsonl + chats.shard (the 'opposite of X?' task) and chats_eval.jsonl\n");
    return a.has("help") ? 0 : 1;
  }
  auto n_docs = a.i64("docs", 4000);
  auto n_chats = a.i64("chats", 2000);
  auto seed = a.i64("seed", 1);
  if (!n_docs || !n_chats || !seed) return report("make-data", invalid_argument("bad --docs/--chats/--seed"));
  const std::string dir = a.str("out");
  std::filesystem::create_directories(dir);
  auto tok = build_tokenizer(char_vocabulary());
  if (!tok) return report("make-data", tok.status());
  Status st = write_binary_file(dir + "/tokenizer.bin", (*tok)->serialize());
  if (!st.is_ok()) return report("make-data", st);
  const auto stories = synthetic_stories(static_cast<uint64_t>(*seed), *n_docs);
  {
    std::ofstream out(dir + "/stories.txt");
    for (const auto& s : stories) out << s << "\n\n";
  }
  st = tokenize_text(**tok, stories, dir + "/stories.shard");
  if (!st.is_ok()) return report("make-data", st);
  const auto chats = synthetic_opposites(static_cast<uint64_t>(*seed), *n_chats);
  const auto eval = synthetic_opposites(static_cast<uint64_t>(*seed) + 1000, 40);
  {
    std::ofstream out(dir + "/chats.jsonl");
    for (const auto& c : chats) out << conversation_to_json(c) << "\n";
    std::ofstream ev(dir + "/chats_eval.jsonl");
    for (const auto& c : eval) ev << conversation_to_json(c) << "\n";
  }
  st = tokenize_chats(**tok, "chatml", chats, dir + "/chats.shard");
  return st.is_ok() ? 0 : report("make-data", st);
}

}  // namespace pocket::train::cli
