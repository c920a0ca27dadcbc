// A Graph lowered to a CUDA plan: the kernels to generate and the steps that launch them.
// Fusion is the CPU planner's (cpu::plan_fusion): each fused kernel (an elementwise chain
// with its broadcasts and loads, and a sum epilogue) becomes one generated kernel; every
// other op is one or two generated kernels (movement, reductions, cumsum) or a cuBLAS GEMM.
// Ops the backend has no kernel for raise UnsupportedOperation when the plan is built,
// never at run time.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quabla/backends/cuda/codegen.h"
#include "quabla/ir/graph.h"

namespace qb::cuda {

// A kernel argument: a value's buffer, a temporary of the step, or an integer.
struct Arg {
  // Blob: a constant int64 array of the plan (a gather's static indices), on the device.
  enum Kind : std::uint8_t { Value, Temp, Int, Blob } kind = Value;
  ValueId value = 0;
  int temp = -1;  // Temp and Blob: the index
  std::int64_t imm = 0;
};

struct Launch {
  int kernel = -1;
  std::int64_t count = 0;  // qb_n, the kernel's index space
  std::vector<Arg> args;
};

struct Step {
  // Region: a cond, loop or custom-rule node whose bodies run as programs of their own,
  // driven from the host (program.cc); its outputs are set by the bodies, not allocated.
  // ExampleWhile: a vmapped while loop as one kernel, one thread per example
  // (loop_kernel.h), launched again on its own outputs while an example is still running.
  // A vmapped scan's kernel is an ordinary Kernels step.
  enum Kind : std::uint8_t { Kernels, Gemm, Alias, Region, ExampleWhile } kind = Kernels;
  std::uint32_t node = 0;
  std::vector<ValueId> outputs;            // allocated before the step (fresh buffers)
  std::vector<std::size_t> temp_bytes;     // temporaries, freed after the step
  std::vector<Launch> launches;            // Kernels: in order
  // Gemm: outputs[0] = a @ b over `batch` row-major (m x k) @ (k x n) products.
  ValueId a = 0, b = 0;
  DType dtype = DType::f32;
  std::int64_t batch = 0, m = 0, k = 0, n = 0;
  // Alias: outputs[0] shares the storage of `a` (a reshape).
  std::vector<ValueId> release;            // values dead after this step
};

struct Plan {
  std::shared_ptr<const Graph> graph;
  std::vector<KernelSource> kernels;
  std::vector<Step> steps;
  std::vector<std::vector<std::int64_t>> blobs;
  int fused_kernels = 0;  // kernels that stand for several nodes
  int loop_kernels = 0;   // vmapped loops run as one kernel each
};

// Iterations of an ExampleWhile kernel per launch: between launches the host polls for
// Ctrl-C, so a loop that never ends can still be interrupted.
constexpr std::int64_t kExampleWhileSteps = 1 << 14;

// `device` names the target in errors ("cuda", "cuda:0").
Plan lower(std::shared_ptr<const Graph> graph, const std::string& device);

}  // namespace qb::cuda
