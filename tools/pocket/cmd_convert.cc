// `pocket convert IN OUT`: import a checkpoint into a .pocket package (llama2.c, Hugging Face safetensors,
// GGUF), or export a .pocket to GGUF when OUT ends in .gguf.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "commands.h"
#include "convert/gguf_exporter.h"
#include "convert/gguf_importer.h"
#include "convert/llama2c_importer.h"
#include "convert/safetensors_importer.h"
#include <filesystem>

namespace pocket::cli {

namespace {

struct ConvertArgs {
  std::string in, out, tokenizer, type = "f32", name;
  bool type_given = false;
};

// Recognises the source format by its first bytes and name.
std::string detect_format(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  f.read(magic, 8);
  if (std::memcmp(magic, "GGUF", 4) == 0) return "gguf";
  if (std::memcmp(magic, "POCKET\r\n", 8) == 0) return "pocket";
  if (path.size() > 12 && path.substr(path.size() - 12) == ".safetensors") return "safetensors";
  if (path.size() > 11 && path.substr(path.size() - 11) == ".index.json") return "safetensors";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec) && std::filesystem::exists(std::filesystem::path(path) / "config.json", ec)) {
    return "safetensors";
  }
  if (path.size() > 4 && path.substr(path.size() - 4) == ".bin") return "llama2c";
  return "unknown";
}

// pocket → GGUF (`--type keep|f32|f16|q8_0|q4_0`).
int export_to_gguf(const ConvertArgs& a) {
  GgufExportOptions o;
  const std::string t = a.type_given ? a.type : "keep";
  if (t == "keep") o.type = GgufExportType::kKeep;
  else if (t == "f32") o.type = GgufExportType::kF32;
  else if (t == "f16") o.type = GgufExportType::kF16;
  else if (t == "q8_0") o.type = GgufExportType::kQ8_0;
  else if (t == "q4_0") o.type = GgufExportType::kQ4_0;
  else return report("convert", invalid_argument("[convert] GGUF export --type '" + t + "' (keep, f32, f16, q8_0, q4_0)"));
  GgufExportReport rep;
  if (Status st = export_gguf(a.in, a.out, o, &rep); !st.is_ok()) return report("convert", st);
  for (const auto& n : rep.notes) std::fprintf(stderr, "pocket convert: note: %s\n", n.c_str());
  std::fprintf(stderr, "pocket convert: wrote %s (GGUF, architecture %s)\n", a.out.c_str(), rep.arch.c_str());
  return 0;
}

int convert(const ConvertArgs& a) {
  const std::string fmt = detect_format(a.in);
  if (fmt == "pocket" && a.out.size() > 5 && a.out.substr(a.out.size() - 5) == ".gguf") return export_to_gguf(a);
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
  if (fmt == "safetensors") {
    SafetensorsImportOptions o;
    o.dtype = *dt;
    o.name = a.name;
    if (Status st = import_safetensors(a.in, a.out, o); !st.is_ok()) return report("convert", st);
    std::fprintf(stderr, "pocket convert: wrote %s\n", a.out.c_str());
    return 0;
  }
  if (fmt == "gguf") {
    GgufImportOptions o;
    if (a.type_given) o.dtype = *dt;  // default: carry each tensor's type where pocket has it
    o.name = a.name;
    if (Status st = import_gguf(a.in, a.out, o); !st.is_ok()) return report("convert", st);
    std::fprintf(stderr, "pocket convert: wrote %s\n", a.out.c_str());
    return 0;
  }
  return report("convert", unsupported("[convert] source format '" + fmt + "' of '" + a.in +
                                           "' is not supported (supported: llama2.c .bin with --tokenizer tok.bin, "
                                           "a Hugging Face folder with config.json + safetensors, .gguf; "
                                           ".pocket → .gguf export)"));
}

}  // namespace

void register_convert(CLI::App& app) {
  auto a = std::make_shared<ConvertArgs>();
  CLI::App* c = app.add_subcommand("convert", "Convert a checkpoint (llama2.c .bin, HF safetensors folder, .gguf) into a .pocket package, or a .pocket into .gguf");
  c->add_option("input", a->in, "Source checkpoint")->required();
  c->add_option("output", a->out, "Output .pocket")->required();
  c->add_option("--tokenizer", a->tokenizer, "llama2.c tokenizer (tok*.bin)");
  c->add_option("--type", a->type, "Weight dtype: f32, f16, bf16, q8_g32, q4_g32...; GGUF export: keep, f32, f16, q8_0, q4_0")
      ->each([a](const std::string&) { a->type_given = true; });
  c->add_option("--name", a->name, "Model name recorded in the descriptor");
  c->callback([a] {
    if (int rc = convert(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
