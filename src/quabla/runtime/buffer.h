// Host storage: aligned, refcounted through std::shared_ptr, written once by the kernel that
// produces it and immutable afterwards (arrays, reshape views and constants share it).
#pragma once
#include <cstddef>
#include <memory>

namespace qb {

class Buffer {
 public:
  static constexpr std::size_t kAlignment = 64;  // a cache line; also the widest SIMD register

  // Uninitialised storage of nbytes (at least one byte is allocated, so data() is never null).
  static std::shared_ptr<Buffer> allocate(std::size_t nbytes);

  // Memory that something else owns (a DLPack import), kept alive by `owner` until the
  // last reference goes; it is never recycled, and never written (the executor only
  // reuses buffers it allocated).
  static std::shared_ptr<Buffer> wrap(std::byte* p, std::size_t nbytes, std::shared_ptr<void> owner);
  bool external() const { return owner_ != nullptr; }

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  std::size_t nbytes() const { return nbytes_; }

  template <class T>
  T* as() { return reinterpret_cast<T*>(data_.get()); }
  template <class T>
  const T* as() const { return reinterpret_cast<const T*>(data_.get()); }

 private:
  struct AlignedFree {
    std::size_t capacity;  // 0: not ours (wrap)
    void operator()(std::byte* p) const;
  };
  Buffer(std::byte* p, std::size_t nbytes, std::size_t capacity) : data_(p, AlignedFree{capacity}), nbytes_(nbytes) {}
  std::unique_ptr<std::byte[], AlignedFree> data_;
  std::size_t nbytes_;
  std::shared_ptr<void> owner_;
};

using BufferPtr = std::shared_ptr<Buffer>;

// Large freed blocks are kept for reuse (up to 256 MiB); these return them to the system
// and report how much is kept.
void release_cached_buffers();
std::size_t cached_buffer_bytes();

}  // namespace qb
