// NVRTC: generated CUDA C to PTX for one architecture. Needs no GPU, so every generated
// module is compile-checked on any machine with NVRTC (tests/python/test_cuda_codegen.py).
#pragma once
#include <string>

namespace qb::cuda {

// NVRTC's version as "13.0", or empty with *why set when NVRTC is not available.
std::string nvrtc_version(std::string* why = nullptr);

// PTX for `arch` ("sm_90"), compiled with IEEE semantics (no FMA contraction, precise
// division and square root, no flush to zero). Cached in memory and on disk under
// <cache>/cuda, keyed by the source, NVRTC's version and the architecture. Throws
// ValueError when NVRTC is missing, InternalError with NVRTC's log when the source does
// not compile (generated code that does not compile is a bug).
std::string compile_ptx(const std::string& source, const std::string& arch);

// The same source as machine code (a cubin) for the real architecture `arch`: what the GPU
// loads, so the driver never JIT-compiles PTX (whose ISA version a driver older than NVRTC
// would refuse). Cached as compile_ptx is.
std::string compile_cubin(const std::string& source, const std::string& arch);

}  // namespace qb::cuda
