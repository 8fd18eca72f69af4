// Chunked row conversion; see row_fill.h.
#include "convert/row_fill.h"

#include <algorithm>
#include <vector>

#include "quant/quantize.h"

namespace pocket {

Status fill_rows(DType dst, int64_t rows, int64_t cols, const RowReader& read, std::span<uint8_t> out) {
  const auto rb = row_bytes(dst, static_cast<uint64_t>(cols));
  if (!rb || rows < 0 || cols <= 0) return invalid_argument("[convert] cannot write a [" + std::to_string(rows) + ", " +
                                                            std::to_string(cols) + "] " + std::string(dtype_name(dst)) + " tensor");
  if (out.size() != *rb * static_cast<uint64_t>(rows)) {
    return invalid_argument("[convert] output of " + std::to_string(out.size()) + " bytes does not fit a [" +
                         std::to_string(rows) + ", " + std::to_string(cols) + "] " + std::string(dtype_name(dst)) + " tensor");
  }
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(rows, (int64_t{1} << 22) / cols));  // ~16 MB of floats
  std::vector<float> buf(static_cast<size_t>(chunk * cols));
  for (int64_t r = 0; r < rows; r += chunk) {
    const int64_t n = std::min(chunk, rows - r);
    POCKET_RETURN_IF_ERROR(read(r, n, buf.data()));
    POCKET_RETURN_IF_ERROR(quant::quantize_tensor(dst, buf.data(), n, cols, out.subspan(static_cast<uint64_t>(r) * *rb, static_cast<uint64_t>(n) * *rb)));
  }
  return Status::ok();
}

}  // namespace pocket
