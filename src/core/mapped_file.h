// A read-only file in memory: mapped (the default), or read into anonymous memory. Owns it; move-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace pocket {

// How a file's bytes come into memory.
enum class FileLoad {
  kMap,   // mmap: pages shared with the page cache and other processes, evictable; huge pages requested and the
          // whole file faulted in at open (MADV_POPULATE_READ, like llama.cpp's MAP_POPULATE): one sequential
          // read on a cold cache, whose 2 MiB folios are then mapped with one entry each
  kMapLazy,  // mmap, pages loaded on first touch (readers of a header: inspect, plan)
  kRead,  // read into a 2 MiB-aligned anonymous mapping with transparent huge pages requested (madvise):
          // fewer TLB misses, and hardware prefetchers that stop at 4 KiB page ends run across the weights;
          // costs a full read at open and memory the kernel cannot evict (llama.cpp's --no-mmap)
};

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;

  // The whole file, read-only (kRead: written once, then mprotect'ed). An empty file is an empty span.
  static Expected<MappedFile> open(const std::string& path, FileLoad how = FileLoad::kMap);

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  void* map_ = nullptr;  // the mapping to release (kRead: starts before data_ for the 2 MiB alignment)
  uint64_t map_len_ = 0;
  std::string path_;
};

}  // namespace pocket
