// A CUDA device as the executor sees it: memory, modules of generated kernels, launches and
// GEMMs. Two implementations: the GPU through the driver API (driver_device.cc) and the host
// emulator (emulator.cc), which runs the same generated source compiled as C++ on the CPU
// with device memory in host memory, so every plan is testable on a machine without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "quabla/backends/cuda/codegen.h"
#include "quabla/backends/cuda/loader.h"
#include "quabla/ir/dtype.h"

namespace qb::cuda {

class Device;

// Device memory, returned to the device's cache when the last holder lets go. Devices live
// for the whole process (as CUDA contexts do), so a buffer's device pointer never dangles.
struct DeviceBuffer {
  Device* device = nullptr;
  CUdeviceptr ptr = 0;
  std::size_t bytes = 0;  // requested
  std::size_t capacity = 0;  // the size class it came from
  // A view (a loop's x slice) keeps the buffer it points into alive and owns nothing.
  std::shared_ptr<DeviceBuffer> parent;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
};
using DeviceBufferPtr = std::shared_ptr<DeviceBuffer>;

// A loaded module: one entry per kernel, in the order of the KernelSources it was built from.
class Module {
 public:
  virtual ~Module() = default;
};

class Device {
 public:
  virtual ~Device() = default;
  // "cuda:0 (NVIDIA H200, sm_90)" or "cuda:0 (host emulator)".
  virtual std::string description() const = 0;
  virtual bool emulated() const = 0;
  // Compute capability as "sm_90".
  virtual std::string arch() const = 0;

  // A buffer of `bytes` (from the cache when one of its size class is free). Throws
  // DeviceMemoryError naming the bytes requested and held when even an emptied cache
  // cannot make room.
  DeviceBufferPtr allocate(std::size_t bytes);
  // Frees every cached (unused) block.
  void release_cached();
  std::size_t bytes_in_use() const;

  virtual void upload(CUdeviceptr dst, const void* src, std::size_t bytes) = 0;
  virtual void download(void* dst, CUdeviceptr src, std::size_t bytes) = 0;
  virtual void copy(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) = 0;  // device to device
  virtual std::shared_ptr<const Module> load(const std::vector<KernelSource>& kernels) = 0;
  // Runs kernel `index` of `m` over `count` indices; args[0] points at the count, args[k]
  // at the k-th parameter's value (cuLaunchKernel's convention).
  virtual void launch(const Module& m, std::size_t index, std::int64_t count, void** args) = 0;
  // Row-major C[b] = A[b] (m x k) @ B[b] (k x n) for b < batch, contiguous batches.
  virtual void gemm(DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, std::int64_t batch, std::int64_t m,
                    std::int64_t k, std::int64_t n) = 0;
  // Waits for the work queued so far.
  virtual void synchronize() = 0;

 protected:
  // 0 when the device has no room.
  virtual CUdeviceptr raw_allocate(std::size_t bytes) = 0;
  virtual void raw_free(CUdeviceptr p) = 0;

 private:
  friend struct DeviceBuffer;
  void give_back(CUdeviceptr p, std::size_t capacity);
  mutable std::mutex mu_;
  std::multimap<std::size_t, CUdeviceptr> free_;  // capacity -> block
  std::size_t in_use_ = 0, cached_ = 0;
};

// `bytes` of `base` from `offset` on, without copying.
DeviceBufferPtr view(const DeviceBufferPtr& base, std::size_t offset, std::size_t bytes);

// The number of CUDA GPUs (0 when there is no driver or no device).
int gpu_count();
// Why there is no GPU, in one sentence (empty when there is one).
std::string gpu_unavailable_reason();
// Device `ordinal`: the GPU, or the host emulator when `emulate` (always available). Throws
// ValueError naming the reason when the GPU does not exist.
Device& device(int ordinal, bool emulate);

}  // namespace qb::cuda

namespace qb::cuda::detail {
std::unique_ptr<Device> make_gpu(int ordinal);  // driver_device.cc
std::unique_ptr<Device> make_emulator();        // emulator.cc
}  // namespace qb::cuda::detail
