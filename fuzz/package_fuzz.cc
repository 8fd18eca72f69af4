// libFuzzer target for the .pocket reader: any bytes must give a Package or an error, never a crash, leak,
// out-of-bounds read or undefined behaviour. Each input is tried as given and again with its checksums
// recomputed, so that mutations reach the structural checks behind the checksums (and the zstd decoder of
// compressed sections: seed zstd-sections.seed).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "format/package.h"
#include "format/package_builder.h"

namespace {

// Reads everything an opened package exposes, tensor bytes included, so that a bad bound shows up here.
void touch(const pocket::Package& pkg) {
  uint64_t sum = 0;
  for (char c : pkg.descriptor_json()) sum += static_cast<uint8_t>(c);
  for (char c : pkg.config_json()) sum += static_cast<uint8_t>(c);
  for (uint8_t b : pkg.tokenizer_bytes()) sum += b;
  for (const auto& s : pkg.sections()) {
    sum += s.size + s.decoded_size;
    // The content of a section it reads, plain or decoded from zstd, is exactly the size the table reports.
    if (s.kind >= 1 && s.kind <= 4 && pkg.section_bytes(static_cast<pocket::SectionKind>(s.kind)).size() != s.decoded_size) {
      __builtin_trap();
    }
  }
  for (const auto& t : pkg.tensors()) {
    sum += t.n_elements() + t.rows() + t.cols();
    for (uint64_t i = 0; i < t.size; ++i) sum += t.data[i];
    if (pkg.find(t.name) == nullptr) __builtin_trap();  // every listed tensor is found by its name
  }
  if (!pkg.verify_checksums().is_ok()) __builtin_trap();  // opened with verify_tensor_data: all sums hold
  volatile uint64_t sink = sum;
  (void)sink;
}

void try_open(const std::vector<uint8_t>& bytes) {
  pocket::OpenOptions opts;
  opts.verify_tensor_data = true;
  auto pkg = pocket::Package::from_bytes(bytes, "fuzz.pocket", opts);
  if (pkg.has_value()) {
    touch(*pkg);
  } else if (pkg.status().message().empty()) {
    __builtin_trap();  // every error explains itself
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A heap copy of exactly `size` bytes, so AddressSanitizer sees any read past the end.
  std::vector<uint8_t> bytes(data, data + size);
  try_open(bytes);
  pocket::testing::reseal(bytes);
  try_open(bytes);
  return 0;
}
