// POSIX mmap implementation of MappedFile.
#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/huge_pages.h"

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

// MADV_POPULATE_READ (Linux 5.14); defined here for older headers. Older kernels answer EINVAL: ignored.
constexpr int kMadvPopulateRead = 22;

// Reads size bytes of fd into a fresh huge-page-aligned anonymous mapping (core/huge_pages.h), read-only after.
Status read_into_memory(int fd, const std::string& path, uint64_t size, void** map, uint64_t* map_len,
                        const uint8_t** data) {
  auto m = map_huge_aligned(size);
  if (!m) return Status(m.status().code(), m.status().message() + " to read '" + path + "'");
  uint8_t* p = m->data;
  uint64_t done = 0;
  while (done < size) {
    const ssize_t r = pread(fd, p + done, size - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const std::string why = r < 0 ? std::strerror(errno) : "the file ended early (truncated while reading?)";
      munmap(m->map, m->len);
      return io_error("[read] cannot read '" + path + "' at byte " + std::to_string(done) + ": " + why);
    }
    done += static_cast<uint64_t>(r);
  }
  if (mprotect(m->map, m->len, PROT_READ) != 0) {
    const int e = errno;
    munmap(m->map, m->len);
    return io_error("[read] cannot make the copy of '" + path + "' read-only: " + std::strerror(e));
  }
  *map = m->map;
  *map_len = m->len;
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
    // Ask for the mapping to be backed by huge pages where the page cache holds 2 MiB folios (the kernel
    // then maps them with one PMD entry: 80 page walks per pass over pocket-0.3b instead of 40,000, and the
    // prefetchers do not stop every 4 KiB). Filesystems with large folios fill a VM_HUGEPAGE mapping's page
    // cache in 2 MiB folios when it is first read through the mapping; pages already cached in small folios
    // stay 4 KiB. A hint: ignored where unsupported, and nothing changes but the page size.
    advise_huge_pages(p, size);
    // Fault the whole file in now, in order (Linux 5.14+; a hint elsewhere): every page of a model is read
    // by its first forward pass anyway, and faults in use order (a layer's tensors, an embedding row) leave
    // parts of a cold cache in small folios: pocket-0.3b had 92 of 158.5 MiB in 2 MiB pages after a bench
    // run without this and all of it with it; 0.18 s at open from a cold cache, nothing when cached.
    if (how == FileLoad::kMap) (void)madvise(p, size, kMadvPopulateRead);
    f.map_ = p;
    f.map_len_ = size;
    f.data_ = static_cast<const uint8_t*>(p);
    f.size_ = size;
  }
  ::close(fd);
  return f;
}

}  // namespace pocket
