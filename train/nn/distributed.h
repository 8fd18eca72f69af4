// Data parallelism over torch's own c10d process groups (gloo backend, CPU): rendezvous through a FileStore
// or a TCPStore, then all-reduce of gradients and counts. Internal to train/; the gloo headers stay in
// distributed.cc.
#pragma once

#include <memory>
#include <vector>

#include "core/status.h"
#include "run/train_config.h"

namespace at {
class Tensor;
}

namespace pocket::train {

class DistGroup {
 public:
  // world == 1 gives a group whose collectives do nothing.
  static Expected<std::unique_ptr<DistGroup>> create(const DistOptions& opts);
  ~DistGroup();

  int rank() const { return rank_; }
  int world() const { return world_; }
  // Sums `t` in place across all processes (blocking).
  void all_reduce_sum(at::Tensor& t);
  // Sums a flat list of tensors in place, packed into one buffer so there is one collective per call.
  void all_reduce_sum(std::vector<at::Tensor>& ts);
  void barrier();

 private:
  struct Impl;
  DistGroup() = default;
  int rank_ = 0, world_ = 1;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pocket::train
