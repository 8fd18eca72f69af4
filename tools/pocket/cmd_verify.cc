// `pocket verify`: every checksum, then a NaN/Inf scan of every float tensor; exit code 1 on any problem.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "commands.h"
#include "core/half.h"
#include "format/package.h"
#include "model/model.h"
#include "quant/blocks.h"

namespace pocket::cli {

namespace {

// Counts non-finite values; block types are scanned through their f16 scale fields.
uint64_t count_non_finite(const TensorInfo& t) {
  uint64_t bad = 0;
  const uint64_t n = t.n_elements();
  switch (t.dtype) {
    case DType::kF32: {
      const auto* p = reinterpret_cast<const float*>(t.data);
      for (uint64_t i = 0; i < n; ++i) bad += !std::isfinite(p[i]);
      return bad;
    }
    case DType::kF16: {
      const auto* p = reinterpret_cast<const uint16_t*>(t.data);
      for (uint64_t i = 0; i < n; ++i) bad += (p[i] & 0x7c00u) == 0x7c00u;
      return bad;
    }
    case DType::kBF16: {
      const auto* p = reinterpret_cast<const uint16_t*>(t.data);
      for (uint64_t i = 0; i < n; ++i) bad += (p[i] & 0x7f80u) == 0x7f80u;
      return bad;
    }
    case DType::kQ4G32R8: {  // 8 rows' f16 scales, then their 128 nibble bytes, per 144-byte group
      const uint64_t groups = t.size / sizeof(quant::BlockQ4G32R8);
      for (uint64_t g = 0; g < groups; ++g) {
        uint16_t d[8];
        std::memcpy(d, t.data + g * sizeof(quant::BlockQ4G32R8), sizeof(d));
        for (uint16_t h : d) bad += (h & 0x7c00u) == 0x7c00u;
      }
      return bad;
    }
    case DType::kQ4G32A: {  // f16 scale and f16 min
      const uint64_t blocks = t.size / sizeof(quant::BlockQ4G32A);
      for (uint64_t b = 0; b < blocks; ++b) {
        uint16_t dm[2];
        std::memcpy(dm, t.data + b * sizeof(quant::BlockQ4G32A), sizeof(dm));
        bad += ((dm[0] & 0x7c00u) == 0x7c00u) + ((dm[1] & 0x7c00u) == 0x7c00u);
      }
      return bad;
    }
    default: {
      auto info = dtype_info(static_cast<uint32_t>(t.dtype));
      const uint64_t blocks = t.size / info->block_bytes;
      for (uint64_t b = 0; b < blocks; ++b) {
        uint16_t d;
        std::memcpy(&d, t.data + b * info->block_bytes, 2);  // Q8G32, Q4G32, Q4G64 start with their f16 scale
        bad += (d & 0x7c00u) == 0x7c00u;
      }
      return bad;
    }
  }
}

int verify(const std::string& path) {
  OpenOptions o;
  o.verify_tensor_data = true;
  auto pkg = Package::open(path, o);
  if (!pkg) return report("verify", pkg.status());
  std::printf("checksums   ok (%zu sections)\n", pkg->sections().size());
  uint64_t total_bad = 0;
  for (const auto& t : pkg->tensors()) {
    const uint64_t bad = count_non_finite(t);
    if (bad > 0) std::printf("NaN/Inf     %-32s %llu values\n", t.name.c_str(), static_cast<unsigned long long>(bad));
    total_bad += bad;
  }
  if (total_bad > 0) {
    std::printf("values      FAILED: %llu non-finite values\n", static_cast<unsigned long long>(total_bad));
    return 1;
  }
  std::printf("values      ok (no NaN/Inf in %zu tensors)\n", pkg->tensors().size());
  auto model = Model::from_package(std::move(*pkg));
  if (!model) return report("verify", model.status());
  std::printf("model       ok (%s, %lld layers, vocab %lld)\n", (*model)->hparams().family.c_str(),
              static_cast<long long>((*model)->hparams().n_layers), static_cast<long long>((*model)->hparams().n_vocab));
  return 0;
}

}  // namespace

void register_verify(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  CLI::App* c = app.add_subcommand("verify", "Check every checksum and scan weights for NaN/Inf");
  c->add_option("model", *path, "Model package (.pocket)")->required();
  c->callback([path] {
    if (int rc = verify(*path); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
