// `pocket convert IN OUT`: import a checkpoint into a .pocket package (llama2.c today).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "commands.h"
#include "convert/llama2c_importer.h"

namespace pocket::cli {

namespace {

struct ConvertArgs {
  std::string in, out, tokenizer, type = "f32", name;
};

// Recognises the source format by its first bytes and name.
std::string detect_format(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  f.read(magic, 8);
  if (std::memcmp(magic, "GGUF", 4) == 0) return "gguf";
  if (std::memcmp(magic, "POCKET\r\n", 8) == 0) return "pocket";
  if (path.size() > 12 && path.substr(path.size() - 12) == ".safetensors") return "safetensors";
  if (path.size() > 4 && path.substr(path.size() - 4) == ".bin") return "llama2c";
  return "unknown";
}

int convert(const ConvertArgs& a) {
  const std::string fmt = detect_format(a.in);
  auto dt = dtype_from_name(a.type);
  if (!dt) return report("convert", invalid_argument("[convert] unknown --type '" + a.type + "' (f32, f16, bf16)"));
  if (fmt == "llama2c") {
    Llama2cImportOptions o;
    o.tokenizer_path = a.tokenizer;
    o.dtype = *dt;
    o.name = a.name;
    if (Status st = import_llama2c(a.in, a.out, o); !st.is_ok()) return report("convert", st);
    std::fprintf(stderr, "pocket convert: wrote %s\n", a.out.c_str());
    return 0;
  }
  return report("convert", unsupported("[convert] source format '" + fmt + "' of '" + a.in +
                                           "' is not supported (supported: llama2.c .bin with --tokenizer tok.bin)"));
}

}  // namespace

void register_convert(CLI::App& app) {
  auto a = std::make_shared<ConvertArgs>();
  CLI::App* c = app.add_subcommand("convert", "Convert a checkpoint (llama2.c .bin) into a .pocket package");
  c->add_option("input", a->in, "Source checkpoint")->required();
  c->add_option("output", a->out, "Output .pocket")->required();
  c->add_option("--tokenizer", a->tokenizer, "llama2.c tokenizer (tok*.bin)");
  c->add_option("--type", a->type, "Weight dtype: f32, f16, bf16");
  c->add_option("--name", a->name, "Model name recorded in the descriptor");
  c->callback([a] {
    if (int rc = convert(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
