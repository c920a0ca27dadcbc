// Run-time loading of the CUDA libraries (DESIGN: no CUDA at build time). The driver API
// (libcuda.so.1, installed with the NVIDIA driver), NVRTC and cuBLAS are opened with dlopen
// on first use; a CPU-only machine never needs them and gets one sentence saying which
// library is missing. Only the entry points Quabla calls are declared, with the C ABI types
// of the CUDA headers (CUresult and nvrtcResult are ints, handles are opaque pointers).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qb::cuda {

using CUresult = int;
using CUdeviceptr = std::uint64_t;

struct DriverApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(int*, int);
  CUresult (*cuDeviceGetName)(char*, int, int);
  CUresult (*cuDeviceGetAttribute)(int*, int, int);
  CUresult (*cuDevicePrimaryCtxRetain)(void**, int);
  CUresult (*cuCtxSetCurrent)(void*);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadData)(void**, const void*);
  CUresult (*cuModuleUnload)(void*);
  CUresult (*cuModuleGetFunction)(void**, void*, const char*);
  CUresult (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                             void**, void**);
  CUresult (*cuMemAlloc)(CUdeviceptr*, std::size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void*, std::size_t);
  CUresult (*cuMemcpyDtoH)(void*, CUdeviceptr, std::size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, std::size_t);
  CUresult (*cuMemGetInfo)(std::size_t*, std::size_t*);
  CUresult (*cuGetErrorString)(CUresult, const char**);
};

struct NvrtcApi {
  int (*nvrtcVersion)(int*, int*);
  int (*nvrtcCreateProgram)(void**, const char*, const char*, int, const char* const*, const char* const*);
  int (*nvrtcCompileProgram)(void*, int, const char* const*);
  int (*nvrtcGetProgramLogSize)(void*, std::size_t*);
  int (*nvrtcGetProgramLog)(void*, char*);
  int (*nvrtcGetPTXSize)(void*, std::size_t*);
  int (*nvrtcGetPTX)(void*, char*);
  int (*nvrtcGetCUBINSize)(void*, std::size_t*);
  int (*nvrtcGetCUBIN)(void*, char*);
  int (*nvrtcDestroyProgram)(void**);
  const char* (*nvrtcGetErrorString)(int);
};

struct CublasApi {
  int (*cublasCreate)(void**);
  int (*cublasSetMathMode)(void*, int);
  // Column-major strided batched GEMMs (cublasSgemmStridedBatched / Dgemm).
  int (*cublasSgemmStridedBatched)(void*, int, int, int, int, int, const float*, const float*, int, long long,
                                   const float*, int, long long, const float*, float*, int, long long, int);
  int (*cublasDgemmStridedBatched)(void*, int, int, int, int, int, const double*, const double*, int, long long,
                                   const double*, int, long long, const double*, double*, int, long long, int);
};

// NCCL, for qb.distributed on CUDA devices: loaded only when asked for.
struct NcclApi {
  int (*ncclGetVersion)(int*);
  const char* (*ncclGetErrorString)(int);
};

// Directories searched before the system's library path (the lib folders of the nvidia-*
// PyPI wheels, found by the Python package); set before the first load.
void set_library_dirs(std::vector<std::string> dirs);

// The loaded API, or null with `why` set to one sentence naming what is missing.
const DriverApi* driver(std::string* why);
const NvrtcApi* nvrtc(std::string* why);
const CublasApi* cublas(std::string* why);
const NcclApi* nccl(std::string* why);
// NCCL's version ("2.27.7"), or empty with *why set.
std::string nccl_version(std::string* why);

// The driver's message for a result code ("out of memory"), for errors.
std::string driver_error(CUresult r);

}  // namespace qb::cuda
