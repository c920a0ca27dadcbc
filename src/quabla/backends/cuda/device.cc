#include "quabla/backends/cuda/device.h"

#include "quabla/ir/errors.h"

namespace qb::cuda {

namespace {

// Size classes: multiples of 512 bytes up to 1 MiB, then multiples of 1 MiB, so a buffer
// freed by one step serves the next step's buffer of about the same size.
std::size_t size_class(std::size_t bytes) {
  constexpr std::size_t kSmall = 512, kLarge = std::size_t{1} << 20;
  if (bytes <= kLarge) return (bytes + kSmall - 1) / kSmall * kSmall;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

std::string mib(std::size_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; }

}  // namespace

DeviceBuffer::~DeviceBuffer() {
  if (device && ptr && !parent) device->give_back(ptr, capacity);
}

DeviceBufferPtr view(const DeviceBufferPtr& base, std::size_t offset, std::size_t bytes) {
  auto v = std::make_shared<DeviceBuffer>();
  v->device = base->device;
  v->ptr = bytes ? base->ptr + offset : 0;
  v->bytes = bytes;
  v->parent = base;
  return v;
}

DeviceBufferPtr Device::allocate(std::size_t bytes) {
  auto buf = std::make_shared<DeviceBuffer>();
  buf->device = this;
  buf->bytes = bytes;
  if (bytes == 0) return buf;  // no storage: ptr 0, nothing reads it
  const std::size_t cap = size_class(bytes);
  {
    std::lock_guard lock(mu_);
    if (auto it = free_.find(cap); it != free_.end()) {
      buf->ptr = it->second;
      buf->capacity = cap;
      free_.erase(it);
      cached_ -= cap;
      in_use_ += cap;
      return buf;
    }
  }
  CUdeviceptr p = raw_allocate(cap);
  if (!p) {
    release_cached();
    p = raw_allocate(cap);
  }
  if (!p) {
    throw DeviceMemoryError(description() + ": out of device memory allocating " + std::to_string(bytes) +
                            " bytes (" + mib(bytes) + ") while this process holds " + mib(bytes_in_use()) +
                            " in live arrays; free arrays or use smaller batches");
  }
  std::lock_guard lock(mu_);
  buf->ptr = p;
  buf->capacity = cap;
  in_use_ += cap;
  return buf;
}

void Device::give_back(CUdeviceptr p, std::size_t capacity) {
  std::lock_guard lock(mu_);
  free_.emplace(capacity, p);
  in_use_ -= capacity;
  cached_ += capacity;
}

void Device::release_cached() {
  std::multimap<std::size_t, CUdeviceptr> blocks;
  {
    std::lock_guard lock(mu_);
    blocks.swap(free_);
    cached_ = 0;
  }
  for (const auto& [cap, p] : blocks) raw_free(p);
}

std::size_t Device::bytes_in_use() const {
  std::lock_guard lock(mu_);
  return in_use_;
}

namespace {

struct GpuTable {
  int count = 0;
  std::string reason;
};

const GpuTable& gpus() {
  static const GpuTable t = [] {
    GpuTable g;
    const DriverApi* d = driver(&g.reason);
    if (!d) return g;
    if (const CUresult r = d->cuDeviceGetCount(&g.count); r != 0) {
      g.count = 0;
      g.reason = "the NVIDIA driver could not count devices (" + driver_error(r) + ")";
    } else if (g.count == 0) {
      g.reason = "the NVIDIA driver reports no CUDA device";
    }
    return g;
  }();
  return t;
}

}  // namespace

int gpu_count() { return gpus().count; }

std::string gpu_unavailable_reason() { return gpus().count > 0 ? std::string() : gpus().reason; }

Device& device(int ordinal, bool emulate) {
  // Devices are created once and never destroyed (buffers and modules may outlive any
  // program that made them).
  static std::mutex mu;
  static auto* table = new std::map<int, std::unique_ptr<Device>>();
  std::lock_guard lock(mu);
  const int key = emulate ? -1 : ordinal;
  if (auto it = table->find(key); it != table->end()) return *it->second;
  if (!emulate) {
    if (gpu_count() == 0) throw ValueError("CUDA is not available: " + gpu_unavailable_reason());
    if (ordinal < 0 || ordinal >= gpu_count()) {
      throw ValueError("cuda:" + std::to_string(ordinal) + " does not exist: this machine has " +
                       std::to_string(gpu_count()) + " CUDA device(s) (cuda:0 .. cuda:" + std::to_string(gpu_count() - 1) +
                       ")");
    }
  }
  auto dev = emulate ? detail::make_emulator() : detail::make_gpu(ordinal);
  return *table->emplace(key, std::move(dev)).first->second;
}

}  // namespace qb::cuda
