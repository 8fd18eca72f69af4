// libFuzzer target for the GGUF reader and the ggml dequantisers: any bytes give a parsed file or an error
// with a message, never a crash, leak, out-of-bounds read or undefined behaviour. Accepted files have every
// metadata value read through the typed accessors and every tensor's bytes touched and (bounded) decoded.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "convert/ggml_dequant.h"
#include "convert/gguf_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  auto g = pocket::GgufFile::parse(bytes, "fuzz.gguf");
  if (!g.has_value()) {
    if (g.status().message().empty()) __builtin_trap();
    return 0;
  }
  uint64_t sum = 0;
  for (std::string_view key : g->keys()) {
    const pocket::GgufValue* v = g->find(key);
    if (v == nullptr) __builtin_trap();
    if (auto s = g->get_string(key)) sum += s->size();
    if (auto i = g->get_int(key)) sum += static_cast<uint64_t>(*i);
    if (auto a = g->get_string_array(key)) {
      for (auto s : *a) sum += s.size();
    }
    if (auto a = g->get_f32_array(key)) sum += a->size();
    if (auto a = g->get_i32_array(key)) sum += a->size();
  }
  std::vector<float> out(4096);
  for (const auto& t : g->tensors()) {
    const uint8_t* p = g->bytes().data() + g->data_offset() + t.offset;
    for (uint64_t i = 0; i < t.n_bytes; ++i) sum += p[i];
    uint64_t bb = 0, be = 0;
    if (pocket::ggml_can_dequantize(t.ggml_type) && pocket::ggml_type_size(t.ggml_type, &bb, &be, nullptr)) {
      // The first row, at most 4096 elements (whole blocks).
      uint64_t n = t.dims[0] < 4096 ? t.dims[0] : 4096;
      n -= n % be;
      if (n > 0 && pocket::ggml_dequantize_row(t.ggml_type, p, static_cast<int64_t>(n), out.data()).is_ok()) sum += out[0] == out[0];
    }
  }
  volatile uint64_t sink = sum;
  (void)sink;
  return 0;
}
