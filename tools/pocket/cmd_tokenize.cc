// `pocket tokenize -m MODEL_OR_TOKENIZER [--ids|--pieces] TEXT`: shows how a model's tokenizer splits text.
// MODEL_OR_TOKENIZER: a .pocket package, a Hugging Face tokenizer.json, a .gguf, or a llama2.c tok*.bin.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "convert/gguf_tokenizer.h"
#include "format/package.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/hf_loader.h"
#include "tokenizer/tokenizer.h"

namespace pocket {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Expected<std::unique_ptr<Tokenizer>> open_tokenizer(const std::string& path, int32_t n_vocab) {
  if (ends_with(path, ".json")) return load_hf_tokenizer(path);
  if (ends_with(path, ".gguf")) return load_gguf_tokenizer(path);
  if (ends_with(path, ".bin")) {
    if (n_vocab <= 0) return invalid_argument("[tokenize] a llama2.c tokenizer needs --vocab N: " + path);
    return load_llama2c_tokenizer(path, n_vocab);
  }
  POCKET_ASSIGN_OR_RETURN(Package pkg, Package::open(path));
  return load_tokenizer_section(pkg.tokenizer_bytes());
}

// A piece with control characters made visible.
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out;
}

int tokenize(const std::string& model, const std::string& text, bool ids_only, bool pieces_only, bool special,
             bool bos, int32_t n_vocab, bool chat) {
  auto tok = open_tokenizer(model, n_vocab);
  if (!tok) return cli::report("tokenize", tok.status());
  std::string input = text;
  if (chat) {
    const std::string tmpl((*tok)->chat_template_name());
    const ChatMessage msg{"user", text};
    auto rendered = apply_chat_template(tmpl, std::span(&msg, 1), true);
    if (!rendered) return cli::report("tokenize", rendered.status());
    input = *rendered;
    special = true;
  }
  std::vector<int32_t> ids;
  Status st = (*tok)->encode(input, {.add_bos = bos, .parse_special = special}, &ids);
  if (!st.is_ok()) return cli::report("tokenize", st);
  if (ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? " " : "", ids[i]);
    std::printf("\n");
    return 0;
  }
  if (pieces_only) {
    for (size_t i = 0; i < ids.size(); ++i) {
      std::printf("%s'%s'", i ? " " : "", printable((*tok)->token_bytes(ids[i])).c_str());
    }
    std::printf("\n");
    return 0;
  }
  for (int32_t id : ids) {
    std::printf("%8d  %-24s '%s'\n", id, printable((*tok)->piece_text(id)).c_str(),
                printable((*tok)->token_bytes(id)).c_str());
  }
  std::printf("%zu tokens, %zu bytes\n", ids.size(), input.size());
  return 0;
}

}  // namespace

void register_tokenize(CLI::App& app) {
  struct Args {
    std::string model, text;
    bool ids = false, pieces = false, special = false, bos = false, chat = false;
    int32_t n_vocab = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Show the tokens of TEXT under a model's tokenizer");
  cmd->add_option("-m,--model", a->model, "a .pocket package, tokenizer.json, .gguf or llama2.c tok*.bin")->required();
  cmd->add_option("text", a->text, "the text to tokenize")->required();
  auto* ids = cmd->add_flag("--ids", a->ids, "print only the ids");
  cmd->add_flag("--pieces", a->pieces, "print only the pieces (the bytes each token stands for)")->excludes(ids);
  cmd->add_flag("--special", a->special, "text spelling a special token becomes that token");
  cmd->add_flag("--bos", a->bos, "prepend BOS when the vocabulary has one");
  cmd->add_flag("--chat", a->chat, "wrap TEXT as a user turn with the model's chat template");
  cmd->add_option("--vocab", a->n_vocab, "vocabulary size of a llama2.c tok*.bin");
  cmd->callback([a] {
    const int rc = tokenize(a->model, a->text, a->ids, a->pieces, a->special, a->bos, a->n_vocab, a->chat);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket
