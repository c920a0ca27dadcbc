// A GPU through the driver API: the device's primary context, modules from NVRTC's PTX,
// launches of 256-thread blocks on the default stream (so kernels run in plan order and a
// copy back waits for them), GEMMs through cuBLAS in its default (non-TF32) math mode.
#include <algorithm>

#include "quabla/backends/cuda/device.h"
#include "quabla/backends/cuda/nvrtc.h"
#include "quabla/ir/errors.h"

namespace qb::cuda {

namespace {

constexpr int kBlock = 256;
// Enough blocks to fill any current GPU many times over; larger index spaces loop.
constexpr std::int64_t kMaxBlocks = 65535;

// CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR.
constexpr int kAttrMajor = 75, kAttrMinor = 76;

class GpuModule : public Module {
 public:
  const DriverApi* api = nullptr;
  void* module = nullptr;
  std::vector<void*> functions;
  ~GpuModule() override {
    if (module) api->cuModuleUnload(module);
  }
};

class Gpu final : public Device {
 public:
  explicit Gpu(int ordinal) : ordinal_(ordinal) {
    std::string why;
    api_ = driver(&why);
    if (!api_) throw ValueError("CUDA is not available: " + why);
    check(api_->cuDeviceGet(&dev_, ordinal), "cuDeviceGet");
    char name[256] = {};
    check(api_->cuDeviceGetName(name, sizeof name - 1, dev_), "cuDeviceGetName");
    name_ = name;
    int major = 0, minor = 0;
    check(api_->cuDeviceGetAttribute(&major, kAttrMajor, dev_), "cuDeviceGetAttribute");
    check(api_->cuDeviceGetAttribute(&minor, kAttrMinor, dev_), "cuDeviceGetAttribute");
    arch_ = "sm_" + std::to_string(major) + std::to_string(minor);
    check(api_->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
  }

  std::string description() const override {
    return "cuda:" + std::to_string(ordinal_) + " (" + name_ + ", " + arch_ + ")";
  }
  bool emulated() const override { return false; }
  std::string arch() const override { return arch_; }

  void upload(CUdeviceptr dst, const void* src, std::size_t bytes) override {
    if (!bytes) return;
    current();
    check(api_->cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
  }
  void download(void* dst, CUdeviceptr src, std::size_t bytes) override {
    if (!bytes) return;
    current();
    check(api_->cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
  }

  void copy(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes) override {
    if (!bytes) return;
    current();
    check(api_->cuMemcpyDtoD(dst, src, bytes), "cuMemcpyDtoD");
  }

  std::shared_ptr<const Module> load(const std::vector<KernelSource>& kernels) override {
    auto m = std::make_shared<GpuModule>();
    m->api = api_;
    if (kernels.empty()) return m;
    const std::string image = compile_cubin(module_source(kernels, Target::Cuda), arch_);
    current();
    check(api_->cuModuleLoadData(&m->module, image.data()), "cuModuleLoadData");
    for (const KernelSource& k : kernels) {
      void* f = nullptr;
      check(api_->cuModuleGetFunction(&f, m->module, k.name.c_str()), "cuModuleGetFunction");
      m->functions.push_back(f);
    }
    return m;
  }

  void launch(const Module& m, std::size_t index, std::int64_t count, void** args) override {
    if (count <= 0) return;
    current();
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((count + kBlock - 1) / kBlock, kMaxBlocks));
    void* f = static_cast<const GpuModule&>(m).functions.at(index);
    check(api_->cuLaunchKernel(f, blocks, 1, 1, kBlock, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel");
  }

  void gemm(DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, std::int64_t batch, std::int64_t m,
            std::int64_t k, std::int64_t n) override {
    current();
    void* h = blas();
    // Row-major C = A B is column-major C^T = B^T A^T: B (n x k, ld n) times A (k x m, ld k).
    const int N = 0;  // CUBLAS_OP_N
    const auto im = static_cast<int>(m), ik = static_cast<int>(k), in = static_cast<int>(n);
    // Leading dimensions must be at least 1 even for empty operands (k = 0 gives C = 0).
    const int ldb = std::max(in, 1), lda = std::max(ik, 1), ldc = std::max(in, 1);
    const long long sa = m * k, sb = k * n, sc = m * n;
    const auto bt = static_cast<int>(batch);
    int r = 0;
    if (dtype == DType::f32) {
      const float one = 1, zero = 0;
      r = blas_->cublasSgemmStridedBatched(h, N, N, in, im, ik, &one, reinterpret_cast<const float*>(b), ldb, sb,
                                           reinterpret_cast<const float*>(a), lda, sa, &zero,
                                           reinterpret_cast<float*>(c), ldc, sc, bt);
    } else if (dtype == DType::f64) {
      const double one = 1, zero = 0;
      r = blas_->cublasDgemmStridedBatched(h, N, N, in, im, ik, &one, reinterpret_cast<const double*>(b), ldb, sb,
                                           reinterpret_cast<const double*>(a), lda, sa, &zero,
                                           reinterpret_cast<double*>(c), ldc, sc, bt);
    } else {
      throw UnsupportedOperation("matmul of " + std::string(dtype_name(dtype)) + " arrays is not supported on CUDA",
                                 "matmul", "cuda");
    }
    if (r != 0) throw DeviceError(description() + ": cuBLAS gemm failed (status " + std::to_string(r) + ")");
  }

  void synchronize() override {
    current();
    check(api_->cuCtxSynchronize(), "cuCtxSynchronize");
  }

 protected:
  CUdeviceptr raw_allocate(std::size_t bytes) override {
    current();
    CUdeviceptr p = 0;
    const CUresult r = api_->cuMemAlloc(&p, bytes);
    if (r == 2) return 0;  // CUDA_ERROR_OUT_OF_MEMORY: the caller frees its cache and retries
    check(r, "cuMemAlloc");
    return p;
  }
  void raw_free(CUdeviceptr p) override {
    current();
    api_->cuMemFree(p);
  }

 private:
  void current() const { check(api_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }
  void check(CUresult r, const char* what) const {
    if (r != 0) throw DeviceError("cuda:" + std::to_string(ordinal_) + ": " + what + " failed: " + driver_error(r));
  }
  void* blas() {
    if (blas_handle_) return blas_handle_;
    std::string why;
    blas_ = cublas(&why);
    if (!blas_) throw UnsupportedOperation("matmul on CUDA needs cuBLAS: " + why, "matmul", "cuda");
    if (int r = blas_->cublasCreate(&blas_handle_); r != 0) {
      throw DeviceError(description() + ": cublasCreate failed (status " + std::to_string(r) + ")");
    }
    blas_->cublasSetMathMode(blas_handle_, 0);  // CUBLAS_DEFAULT_MATH: full float32, no TF32
    return blas_handle_;
  }

  int ordinal_;
  const DriverApi* api_ = nullptr;
  int dev_ = 0;
  void* ctx_ = nullptr;
  std::string name_, arch_;
  const CublasApi* blas_ = nullptr;
  void* blas_handle_ = nullptr;
};

}  // namespace

std::unique_ptr<Device> detail::make_gpu(int ordinal) { return std::make_unique<Gpu>(ordinal); }

}  // namespace qb::cuda
