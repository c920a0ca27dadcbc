// The host emulator of the CUDA device: device memory is host memory, a module is the
// generated source (codegen.h, host target) built by the system C++ compiler into a shared
// object (cached on disk under <cache>/cuda-emulator), a launch calls the kernel's host
// wrapper, which runs its grid-stride loop on one thread, and GEMMs are the CPU backend's.
// It exists to test the CUDA plans, generated kernels and executor on machines without a
// GPU; it is not a fast path. QUABLA_CXX names the compiler (default c++).
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/backends/cuda/device.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/native_build.h"

namespace qb::cuda {

namespace {

using HostKernel = void (*)(void**);

class EmulatedModule : public Module {
 public:
  std::vector<HostKernel> kernels;
};

std::string compiler() {
  const char* v = std::getenv("QUABLA_CXX");
  return v && *v ? std::string(v) : std::string("c++");
}

// No contraction into fused multiply-adds, as the CPU kernels and --fmad=false on the GPU.
constexpr const char* kFlags = "-std=c++17 -O1 -ffp-contract=off -fno-strict-aliasing -fPIC -shared -w";

class Emulator final : public Device {
 public:
  std::string description() const override { return "cuda (host emulator)"; }
  bool emulated() const override { return true; }
  std::string arch() const override { return "sm_90"; }

  void upload(CUdeviceptr dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  }
  void download(void* dst, CUdeviceptr src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  }

  void copy(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) override {
    if (bytes) std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  }

  std::shared_ptr<const Module> load(const std::vector<KernelSource>& kernels) override {
    auto m = std::make_shared<EmulatedModule>();
    if (kernels.empty()) return m;
    const std::string source = module_source(kernels, Target::Host);
    const native::Build b = native::build_shared_object(source, compiler(), kFlags, "cuda-emulator", ".cc", {"-lm"});
    if (!b.handle) {
      throw DeviceError("the CUDA host emulator could not build its kernels (" + b.error +
                        "); it needs a C++ compiler (set QUABLA_CXX)");
    }
    for (const KernelSource& k : kernels) {
      void* f = ::dlsym(b.handle, (k.name + "_host").c_str());
      if (!f) throw InternalError("cuda emulator: " + k.name + "_host missing from " + b.path);
      m->kernels.push_back(reinterpret_cast<HostKernel>(f));
    }
    return m;
  }

  void launch(const Module& m, std::size_t index, std::int64_t count, void** args) override {
    if (count > 0) static_cast<const EmulatedModule&>(m).kernels.at(index)(args);
  }

  void gemm(DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, std::int64_t batch, std::int64_t m,
            std::int64_t k, std::int64_t n) override {
    cpu::matmul(dtype, reinterpret_cast<const std::byte*>(a), reinterpret_cast<const std::byte*>(b),
                reinterpret_cast<std::byte*>(c), batch, m, k, n);
  }

  void synchronize() override {}

 protected:
  CUdeviceptr raw_allocate(std::size_t bytes) override {
    return reinterpret_cast<CUdeviceptr>(std::aligned_alloc(256, (bytes + 255) / 256 * 256));
  }
  void raw_free(CUdeviceptr p) override { std::free(reinterpret_cast<void*>(p)); }
};

}  // namespace

std::unique_ptr<Device> detail::make_emulator() { return std::make_unique<Emulator>(); }

}  // namespace qb::cuda
