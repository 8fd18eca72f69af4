// NamedTensor: a float32 weight with its runtime name and shape — the torch-free currency between the
// libtorch model, checkpoints, the exporter and the tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pocket::train {

struct NamedTensor {
  std::string name;            // the runtime's name: "blk.3.attn_q.weight"
  std::vector<int64_t> shape;  // outermost first; [rows, cols] row-major for matrices (torch Linear layout)
  std::vector<float> data;
};

}  // namespace pocket::train
