#include "quabla/backends/cuda/loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace qb::cuda {

namespace {

std::mutex& dirs_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& extra_dirs() {
  static std::vector<std::string> d;
  return d;
}

// dlopen of the first of `names` found in the extra directories, then on the system's path,
// then under the CUDA toolkit's usual prefix. `system_only`: the driver, which comes with
// the kernel module and must never be a toolkit stub.
void* open_library(const std::vector<std::string>& names, bool system_only) {
  std::vector<std::string> dirs;
  if (!system_only) {
    std::lock_guard lock(dirs_mutex());
    dirs = extra_dirs();
  }
  for (const auto& d : dirs)
    for (const auto& n : names)
      if (void* h = ::dlopen((d + "/" + n).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  for (const auto& n : names)
    if (void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  if (system_only) return nullptr;
  std::vector<std::string> prefixes;
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) prefixes.push_back(std::string(home) + "/lib64");
  prefixes.push_back("/usr/local/cuda/lib64");
  for (const auto& d : prefixes)
    for (const auto& n : names)
      if (void* h = ::dlopen((d + "/" + n).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

template <class F>
bool bind(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  return fn != nullptr;
}

// A library loaded once per process (handles are never closed: kernels and modules may be
// live until exit).
template <class Api, class Load>
const Api* load_once(Load load, std::string* why) {
  static std::once_flag once;
  static Api api{};
  static bool ok = false;
  static std::string reason;
  std::call_once(once, [&] { ok = load(api, reason); });
  if (!ok && why) *why = reason;
  return ok ? &api : nullptr;
}

std::string error_text(const DriverApi& a, CUresult r) {
  const char* s = nullptr;
  if (a.cuGetErrorString && a.cuGetErrorString(r, &s) == 0 && s) return std::string(s) + " (" + std::to_string(r) + ")";
  return "CUDA error " + std::to_string(r);
}

}  // namespace

void set_library_dirs(std::vector<std::string> dirs) {
  std::lock_guard lock(dirs_mutex());
  extra_dirs() = std::move(dirs);
}

const DriverApi* driver(std::string* why) {
  return load_once<DriverApi>(
      [](DriverApi& a, std::string& reason) {
        void* lib = open_library({"libcuda.so.1"}, true);
        if (!lib) {
          reason = "no NVIDIA driver: libcuda.so.1 was not found on the library path";
          return false;
        }
        const bool all = bind(lib, a.cuInit, "cuInit") && bind(lib, a.cuDriverGetVersion, "cuDriverGetVersion") &&
                         bind(lib, a.cuDeviceGetCount, "cuDeviceGetCount") && bind(lib, a.cuDeviceGet, "cuDeviceGet") &&
                         bind(lib, a.cuDeviceGetName, "cuDeviceGetName") &&
                         bind(lib, a.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
                         bind(lib, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
                         bind(lib, a.cuCtxSetCurrent, "cuCtxSetCurrent") &&
                         bind(lib, a.cuCtxSynchronize, "cuCtxSynchronize") &&
                         bind(lib, a.cuModuleLoadData, "cuModuleLoadData") &&
                         bind(lib, a.cuModuleUnload, "cuModuleUnload") &&
                         bind(lib, a.cuModuleGetFunction, "cuModuleGetFunction") &&
                         bind(lib, a.cuLaunchKernel, "cuLaunchKernel") && bind(lib, a.cuMemAlloc, "cuMemAlloc_v2") &&
                         bind(lib, a.cuMemFree, "cuMemFree_v2") && bind(lib, a.cuMemcpyHtoD, "cuMemcpyHtoD_v2") &&
                         bind(lib, a.cuMemcpyDtoH, "cuMemcpyDtoH_v2") && bind(lib, a.cuMemcpyDtoD, "cuMemcpyDtoD_v2") &&
                         bind(lib, a.cuMemGetInfo, "cuMemGetInfo_v2") &&
                         bind(lib, a.cuGetErrorString, "cuGetErrorString");
        if (!all) {
          reason = "the NVIDIA driver's libcuda.so.1 lacks entry points Quabla needs (a driver older than CUDA 11?)";
          return false;
        }
        if (const CUresult r = a.cuInit(0); r != 0) {
          reason = "the NVIDIA driver did not initialise (cuInit: " + error_text(a, r) + "); is a GPU present?";
          return false;
        }
        return true;
      },
      why);
}

const NvrtcApi* nvrtc(std::string* why) {
  return load_once<NvrtcApi>(
      [](NvrtcApi& a, std::string& reason) {
        void* lib = open_library({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}, false);
        if (!lib) {
          reason = "NVRTC (libnvrtc.so) was not found: install the CUDA toolkit or pip install quabla[cuda]";
          return false;
        }
        const bool all = bind(lib, a.nvrtcVersion, "nvrtcVersion") &&
                         bind(lib, a.nvrtcCreateProgram, "nvrtcCreateProgram") &&
                         bind(lib, a.nvrtcCompileProgram, "nvrtcCompileProgram") &&
                         bind(lib, a.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize") &&
                         bind(lib, a.nvrtcGetProgramLog, "nvrtcGetProgramLog") &&
                         bind(lib, a.nvrtcGetPTXSize, "nvrtcGetPTXSize") && bind(lib, a.nvrtcGetPTX, "nvrtcGetPTX") &&
                         bind(lib, a.nvrtcGetCUBINSize, "nvrtcGetCUBINSize") &&
                         bind(lib, a.nvrtcGetCUBIN, "nvrtcGetCUBIN") &&
                         bind(lib, a.nvrtcDestroyProgram, "nvrtcDestroyProgram") &&
                         bind(lib, a.nvrtcGetErrorString, "nvrtcGetErrorString");
        if (!all) reason = "the NVRTC library found lacks entry points Quabla needs";
        return all;
      },
      why);
}

const CublasApi* cublas(std::string* why) {
  return load_once<CublasApi>(
      [](CublasApi& a, std::string& reason) {
        void* lib = open_library({"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}, false);
        if (!lib) {
          reason = "cuBLAS (libcublas.so) was not found: install the CUDA toolkit or pip install quabla[cuda]";
          return false;
        }
        const bool all = bind(lib, a.cublasCreate, "cublasCreate_v2") &&
                         bind(lib, a.cublasSetMathMode, "cublasSetMathMode") &&
                         bind(lib, a.cublasSgemmStridedBatched, "cublasSgemmStridedBatched") &&
                         bind(lib, a.cublasDgemmStridedBatched, "cublasDgemmStridedBatched");
        if (!all) reason = "the cuBLAS library found lacks entry points Quabla needs";
        return all;
      },
      why);
}

const NcclApi* nccl(std::string* why) {
  return load_once<NcclApi>(
      [](NcclApi& a, std::string& reason) {
        void* lib = open_library({"libnccl.so.2", "libnccl.so"}, false);
        if (!lib) {
          reason = "NCCL (libnccl.so.2) was not found: install NCCL (the nvidia-nccl wheel, or the system package)";
          return false;
        }
        const bool all = bind(lib, a.ncclGetVersion, "ncclGetVersion") &&
                         bind(lib, a.ncclGetErrorString, "ncclGetErrorString");
        if (!all) reason = "the NCCL library found lacks entry points Quabla needs";
        return all;
      },
      why);
}

std::string nccl_version(std::string* why) {
  const NcclApi* api = nccl(why);
  if (!api) return {};
  int v = 0;
  if (api->ncclGetVersion(&v) != 0) {
    if (why) *why = "ncclGetVersion failed";
    return {};
  }
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string driver_error(CUresult r) {
  const DriverApi* d = driver(nullptr);
  return d ? error_text(*d, r) : "CUDA error " + std::to_string(r);
}

}  // namespace qb::cuda
