#include "quabla/runtime/buffer.h"

#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include <sys/sysinfo.h>

namespace qb {

namespace {

// Large blocks are recycled instead of returned to the OS: a fresh multi-megabyte block
// comes from mmap and costs a page fault per 4 KiB on first touch, which dominated eager
// elementwise ops on 1e6 elements. Blocks are kept per exact (page-rounded) size, up to a
// total cap, so a steady-state loop of same-shaped ops allocates nothing new.
constexpr std::size_t kCacheMinBytes = 64 * 1024;
constexpr std::size_t kCacheCapBytes = 256 * 1024 * 1024;
constexpr std::size_t kPage = 4096;

class BlockCache {
 public:
  std::byte* take(std::size_t nbytes) {
    std::lock_guard<std::mutex> lk(m_);
    auto it = free_.find(nbytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    std::byte* p = it->second.back();
    it->second.pop_back();
    cached_ -= nbytes;
    return p;
  }
  bool give(std::byte* p, std::size_t nbytes) {
    std::lock_guard<std::mutex> lk(m_);
    if (cached_ + nbytes > kCacheCapBytes) return false;
    free_[nbytes].push_back(p);
    cached_ += nbytes;
    return true;
  }
  void clear() {
    std::lock_guard<std::mutex> lk(m_);
    for (auto& [size, blocks] : free_)
      for (std::byte* p : blocks) ::operator delete[](p, std::align_val_t{Buffer::kAlignment});
    free_.clear();
    cached_ = 0;
  }
  std::size_t cached_bytes() {
    std::lock_guard<std::mutex> lk(m_);
    return cached_;
  }

 private:
  std::mutex m_;
  std::unordered_map<std::size_t, std::vector<std::byte*>> free_;
  std::size_t cached_ = 0;
};

BlockCache& cache() {
  static BlockCache* c = new BlockCache();  // never destroyed: buffers may be freed at exit
  return *c;
}

// Small blocks (loop bodies over a few scalars allocate one per value per step) are kept
// per thread in a few size classes, so a steady-state loop does not call the allocator.
constexpr std::size_t kSmallBytes = 256, kSmallClass = 64, kSmallKeep = 512;

struct SmallCache {
  std::vector<std::byte*> free[kSmallBytes / kSmallClass];
  ~SmallCache();
};
thread_local bool t_small_cache_gone = false;  // trivially destructible: valid at thread exit

SmallCache::~SmallCache() {
  t_small_cache_gone = true;
  for (auto& list : free)
    for (std::byte* p : list) ::operator delete[](p, std::align_val_t{Buffer::kAlignment});
}

SmallCache* small_cache() {
  if (t_small_cache_gone) return nullptr;
  thread_local SmallCache c;
  return &c;
}

std::size_t block_size(std::size_t nbytes) {
  const std::size_t n = nbytes == 0 ? 1 : nbytes;
  if (n <= kSmallBytes) return (n + kSmallClass - 1) / kSmallClass * kSmallClass;
  return n >= kCacheMinBytes ? (n + kPage - 1) / kPage * kPage : n;
}

}  // namespace

void Buffer::AlignedFree::operator()(std::byte* p) const {
  if (capacity == 0) return;  // wrapped memory: its owner frees it
  if (capacity <= kSmallBytes) {
    if (SmallCache* c = small_cache(); c && c->free[capacity / kSmallClass - 1].size() < kSmallKeep) {
      c->free[capacity / kSmallClass - 1].push_back(p);
      return;
    }
  } else if (capacity >= kCacheMinBytes && cache().give(p, capacity)) {
    return;
  }
  ::operator delete[](p, std::align_val_t{kAlignment});
}

namespace {
// RAM plus swap: a larger request fails at once with std::bad_alloc (MemoryError in Python).
// Under memory overcommit such an allocation could succeed and the process be killed later,
// when its pages are touched; a sanitizer's allocator would abort instead of throwing.
std::size_t machine_memory_bytes() {
  static const std::size_t bytes = [] {
    struct sysinfo si {};
    if (sysinfo(&si) != 0) return SIZE_MAX;
    const unsigned __int128 total = (static_cast<unsigned __int128>(si.totalram) + si.totalswap) * si.mem_unit;
    return total > SIZE_MAX ? SIZE_MAX : static_cast<std::size_t>(total);
  }();
  return bytes;
}
}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(std::size_t nbytes) {
  if (nbytes > machine_memory_bytes()) throw std::bad_alloc();
  const std::size_t capacity = block_size(nbytes);
  std::byte* p = nullptr;
  if (capacity <= kSmallBytes) {
    if (SmallCache* c = small_cache()) {
      auto& list = c->free[capacity / kSmallClass - 1];
      if (!list.empty()) {
        p = list.back();
        list.pop_back();
      }
    }
  } else if (capacity >= kCacheMinBytes) {
    p = cache().take(capacity);
  }
  if (!p) p = static_cast<std::byte*>(::operator new[](capacity, std::align_val_t{kAlignment}));
  // One allocation for the Buffer and its reference count.
  struct Shared : Buffer {
    Shared(std::byte* q, std::size_t n, std::size_t c) : Buffer(q, n, c) {}
  };
  return std::make_shared<Shared>(p, nbytes, capacity);
}

std::shared_ptr<Buffer> Buffer::wrap(std::byte* p, std::size_t nbytes, std::shared_ptr<void> owner) {
  struct Shared : Buffer {
    Shared(std::byte* q, std::size_t n) : Buffer(q, n, 0) {}
  };
  auto b = std::make_shared<Shared>(p, nbytes);
  b->owner_ = std::move(owner);
  return b;
}

void release_cached_buffers() { cache().clear(); }
std::size_t cached_buffer_bytes() { return cache().cached_bytes(); }

}  // namespace qb
