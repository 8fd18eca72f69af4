// libFuzzer target for the safetensors reader: any bytes give a parsed file or an error with a message,
// never a crash, leak, out-of-bounds read or undefined behaviour; every accepted tensor is read in full.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "convert/safetensors_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A heap copy of exactly `size` bytes, so AddressSanitizer sees any read past the end.
  std::vector<uint8_t> bytes(data, data + size);
  auto f = pocket::SafetensorsFile::parse(bytes, "fuzz.safetensors");
  if (!f.has_value()) {
    if (f.status().message().empty()) __builtin_trap();  // every error explains itself
    return 0;
  }
  uint64_t sum = 0;
  for (const auto& t : f->tensors()) {
    if (f->find(t.name) != &t) __builtin_trap();  // names are unique and found
    for (uint8_t b : t.data) sum += b;
    if (t.dtype == pocket::StDType::kF32 || t.dtype == pocket::StDType::kF16 || t.dtype == pocket::StDType::kBF16) {
      std::vector<float> row(t.n_elements < 4096 ? t.n_elements : 4096);
      pocket::st_read_f32(t, t.n_elements - row.size(), row.size(), row.data());
      for (float x : row) sum += x == x;
    }
  }
  volatile uint64_t sink = sum;
  (void)sink;
  return 0;
}
