// DistGroup over c10d::ProcessGroupGloo (see distributed.h).
#include "nn/distributed.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include <chrono>

namespace pocket::train {

struct DistGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg;
};

DistGroup::~DistGroup() = default;

Expected<std::unique_ptr<DistGroup>> DistGroup::create(const DistOptions& o) {
  std::unique_ptr<DistGroup> g(new DistGroup());
  g->rank_ = o.rank;
  g->world_ = o.world;
  if (o.world < 1 || o.rank < 0 || o.rank >= o.world) {
    return invalid_argument("[dist] rank " + std::to_string(o.rank) + " is outside a world of " + std::to_string(o.world));
  }
  if (o.world == 1) return g;
  g->impl_ = std::make_unique<Impl>();
  try {
    const std::string& r = o.rendezvous;
    if (r.rfind("file:", 0) == 0) {
      g->impl_->store = c10::make_intrusive<c10d::FileStore>(r.substr(5), o.world);
    } else if (r.rfind("tcp:", 0) == 0) {
      const std::string hp = r.substr(4);
      const size_t colon = hp.rfind(':');
      if (colon == std::string::npos) return invalid_argument("[dist] rendezvous '" + r + "' needs tcp:HOST:PORT");
      c10d::TCPStoreOptions so;
      so.port = static_cast<uint16_t>(std::stoi(hp.substr(colon + 1)));
      so.isServer = o.rank == 0;
      so.numWorkers = o.world;
      so.waitWorkers = true;
      g->impl_->store = c10::make_intrusive<c10d::TCPStore>(hp.substr(0, colon), so);
    } else {
      return invalid_argument("[dist] rendezvous '" + r + "' must be file:PATH or tcp:HOST:PORT");
    }
    auto opts = c10d::ProcessGroupGloo::Options::create(std::chrono::minutes(30));
    // Loopback by default; POCKET_DIST_HOST names the interface's address on a real cluster.
    const char* host = std::getenv("POCKET_DIST_HOST");
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(host != nullptr ? host : "127.0.0.1"));
    g->impl_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(g->impl_->store, o.rank, o.world, opts);
  } catch (const std::exception& e) {
    return Status(ErrorCode::kIoError, std::string("[dist] process group setup failed: ") + e.what());
  }
  return g;
}

void DistGroup::all_reduce_sum(at::Tensor& t) {
  if (world_ == 1) return;
  std::vector<at::Tensor> v{t};
  impl_->pg->allreduce(v)->wait();
}

void DistGroup::all_reduce_sum(std::vector<at::Tensor>& ts) {
  if (world_ == 1 || ts.empty()) return;
  std::vector<at::Tensor> flat_views;
  for (auto& t : ts) flat_views.push_back(t.reshape({-1}));
  auto flat = torch::cat(flat_views).to(torch::kCPU);  // gloo reduces host memory (the grads may be on a GPU)
  all_reduce_sum(flat);
  int64_t at = 0;
  for (auto& t : ts) {
    const int64_t n = t.numel();
    t.copy_(flat.narrow(0, at, n).view(t.sizes()));
    at += n;
  }
}

void DistGroup::barrier() {
  if (world_ == 1) return;
  impl_->pg->barrier()->wait();
}

}  // namespace pocket::train
