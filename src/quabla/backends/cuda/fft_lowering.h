// The discrete Fourier transform on the CUDA backend, as generated kernels (no cuFFT: the
// kernels are the emulator's too, so CI runs them). The lowered fft node (ops.def, the
// CPU's fft.cc) transforms `rows` rows of n values, planar complex or real, into planar
// rows of `width` values (n, or n / 2 + 1 for a half spectrum). Every row is transformed
// in double whatever the dtype, as on the CPU: a power-of-two length by log2(n) radix-2
// stages (one kernel launch each, one thread per butterfly of every row, so a batch of
// short rows and one long row both fill the device); any other length by Bluestein's
// identity over a power-of-two length m >= 2n - 1, with the chirp and the filter's
// spectrum computed on the host once, when the plan is built. Twiddles are the CPU's
// table, read from a constant array rather than recomputed with the device's sin and cos.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quabla/backends/cuda/codegen.h"
#include "quabla/backends/cuda/lowering.h"

namespace qb::cuda {

struct FftKernelLaunch {
  std::vector<KernelParam> params;
  std::string body;
  std::int64_t count = 0;
  // Temp: the step's temporaries; Blob: an index into FftLowering::blobs; Value: `in`/`out`.
  std::vector<Arg> args;
};

struct FftLowering {
  std::vector<std::size_t> temp_bytes;
  std::vector<std::vector<std::int64_t>> blobs;  // doubles, by their bits
  std::vector<FftKernelLaunch> launches;
};

struct FftShape {
  DType part = DType::f64;  // of the input and output values (f32 or f64)
  std::int64_t rows = 0, n = 0, width = 0;
  bool real_input = false, inverse = false;
};

FftLowering lower_fft(const FftShape& shape, ValueId in, ValueId out);

}  // namespace qb::cuda
