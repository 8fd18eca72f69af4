// `pocket inspect`: header, sections, descriptor, inference config, tensor table and sizes of a package.
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "commands.h"
#include "format/package.h"
#include "model/hparams.h"

namespace pocket::cli {

namespace {

int inspect(const std::string& path, bool tensors) {
  OpenOptions lazy;
  lazy.load = FileLoad::kMapLazy;  // the header, sections and directory only: do not fault the weights in
  auto pkg = Package::open(path, lazy);
  if (!pkg) return report("inspect", pkg.status());
  std::printf("file        %s\nsize        %llu bytes (%s)\nversion     %u\n", path.c_str(),
              static_cast<unsigned long long>(pkg->file_size()), format_bytes(pkg->file_size()).c_str(), pkg->version());
  // `size` is what the section takes in the file; a ZSTD section also shows what it decodes to at open.
  std::printf("\nsections\n");
  for (const auto& s : pkg->sections()) {
    std::string note;
    if (s.flags & kSectionZstd) {
      note = s.decoded_size == 0 ? "  zstd (not decoded: unknown optional section)"
                                 : "  zstd, decoded " + std::to_string(s.decoded_size) + " bytes";
    }
    if (s.flags & kSectionLazyChecksum) note += "  (checked by verify)";
    std::printf("  %-18s offset %12llu  size %12llu  xxh3 %016llx%s\n", section_kind_name(s.kind),
                static_cast<unsigned long long>(s.offset), static_cast<unsigned long long>(s.size),
                static_cast<unsigned long long>(s.checksum), note.c_str());
  }
  std::printf("\ndescriptor\n%.*s\n", static_cast<int>(pkg->descriptor_json().size()), pkg->descriptor_json().data());
  std::printf("\ninference config\n%.*s\n", static_cast<int>(pkg->config_json().size()), pkg->config_json().data());
  if (auto h = HParams::from_json(pkg->descriptor_json())) {
    std::printf("\nparameters  %llu (%.2fM)\n", static_cast<unsigned long long>(h->n_params()), h->n_params() / 1e6);
  }
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_type;  // dtype -> (count, bytes)
  for (const auto& t : pkg->tensors()) {
    auto& e = by_type[std::string(dtype_name(t.dtype))];
    e.first++;
    e.second += t.size;
  }
  std::printf("\ntensors     %zu\n", pkg->tensors().size());
  for (const auto& [name, e] : by_type) {
    std::printf("  %-8s %5llu tensors  %s\n", name.c_str(), static_cast<unsigned long long>(e.first), format_bytes(e.second).c_str());
  }
  if (tensors) {
    std::printf("\n  %-32s %-8s %-20s %12s %12s\n", "name", "dtype", "shape", "offset", "bytes");
    for (const auto& t : pkg->tensors()) {
      std::string shape = "[";
      for (size_t i = 0; i < t.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape[i]);
      shape += "]";
      std::printf("  %-32s %-8s %-20s %12llu %12llu\n", t.name.c_str(), std::string(dtype_name(t.dtype)).c_str(),
                  shape.c_str(), static_cast<unsigned long long>(t.offset), static_cast<unsigned long long>(t.size));
    }
  }
  return 0;
}

}  // namespace

void register_inspect(CLI::App& app) {
  struct Args {
    std::string model;
    bool brief = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* c = app.add_subcommand("inspect", "Show a package's header, descriptor, config and tensor table");
  c->add_option("model", a->model, "Model package (.pocket)")->required();
  c->add_flag("--brief", a->brief, "Omit the per-tensor table");
  c->callback([a] {
    if (int rc = inspect(a->model, !a->brief); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
