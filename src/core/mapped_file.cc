// POSIX mmap implementation of MappedFile.
#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace pocket {

MappedFile::~MappedFile() { reset(); }

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(o.data_), size_(o.size_), map_(o.map_), map_len_(o.map_len_), path_(std::move(o.path_)) {
  o.data_ = nullptr;
  o.size_ = 0;
  o.map_ = nullptr;
  o.map_len_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = o.data_;
    size_ = o.size_;
    map_ = o.map_;
    map_len_ = o.map_len_;
    path_ = std::move(o.path_);
    o.data_ = nullptr;
    o.size_ = 0;
    o.map_ = nullptr;
    o.map_len_ = 0;
  }
  return *this;
}

void MappedFile::reset() {
  if (map_ != nullptr && map_len_ > 0) munmap(map_, map_len_);
  data_ = nullptr;
  size_ = 0;
  map_ = nullptr;
  map_len_ = 0;
}

namespace {

constexpr uint64_t kHugePage = 2ull << 20;

// Reads size bytes of fd into a fresh anonymous mapping whose data starts on a kHugePage boundary.
Status read_into_memory(int fd, const std::string& path, uint64_t size, void** map, uint64_t* map_len,
                        const uint8_t** data) {
  const uint64_t len = (size + kHugePage - 1) / kHugePage * kHugePage + kHugePage;  // room to align
  void* raw = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return Status(ErrorCode::kOutOfMemory, "[read] cannot allocate " + std::to_string(size >> 20) + " MiB for '" +
                                               path + "': " + std::strerror(errno));
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(raw);
  auto* p = reinterpret_cast<uint8_t*>((base + kHugePage - 1) / kHugePage * kHugePage);
#ifdef MADV_HUGEPAGE
  // A hint, for the whole huge pages the file fills: the tail stays in 4 KiB pages, so resident memory is
  // the file's size and not up to 2 MiB more (a huge page is allocated whole on its first touch).
  if (size >= kHugePage) (void)madvise(p, size / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
  uint64_t done = 0;
  while (done < size) {
    const ssize_t r = pread(fd, p + done, size - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const std::string why = r < 0 ? std::strerror(errno) : "the file ended early (truncated while reading?)";
      munmap(raw, len);
      return io_error("[read] cannot read '" + path + "' at byte " + std::to_string(done) + ": " + why);
    }
    done += static_cast<uint64_t>(r);
  }
  if (mprotect(raw, len, PROT_READ) != 0) {
    const int e = errno;
    munmap(raw, len);
    return io_error("[read] cannot make the copy of '" + path + "' read-only: " + std::strerror(e));
  }
  *map = raw;
  *map_len = len;
  *data = p;
  return Status::ok();
}

}  // namespace

Expected<MappedFile> MappedFile::open(const std::string& path, FileLoad how) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("[mmap] cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return io_error("[mmap] cannot stat '" + path + "': " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("[mmap] '" + path + "' is not a regular file");
  }
  MappedFile f;
  f.path_ = path;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > 0 && how == FileLoad::kRead) {
    const Status s = read_into_memory(fd, path, size, &f.map_, &f.map_len_, &f.data_);
    ::close(fd);
    if (!s.is_ok()) return s;
    f.size_ = size;
    return f;
  }
  if (size > 0) {
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return io_error("[mmap] cannot map '" + path + "': " + std::strerror(e));
    }
    f.map_ = p;
    f.map_len_ = size;
    f.data_ = static_cast<const uint8_t*>(p);
    f.size_ = size;
  }
  ::close(fd);
  return f;
}

}  // namespace pocket
