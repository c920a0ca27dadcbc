// Vmapped small loops as one kernel: a scan or while loop that vmap batched (its
// ExampleLoop record) whose per-example bodies have a self-contained scalar form (the loop
// compiler's tier 0, cpu/scalar_loop.h) runs as one generated kernel with one thread per
// example, its carries in registers, instead of a host-driven loop of kernel launches.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "quabla/backends/cuda/codegen.h"
#include "quabla/ir/graph.h"

namespace qb::cuda {

// The kernel of node n (a Scan or While with a valid ExampleLoop), run for every example
// i in [0, batch). Parameters, in order: `in<k>` per operand, `out<j>` per output; a while
// loop also takes `qb_i64 max_steps` and `qb_u8* pending` (per example: 1 when it stopped
// after max_steps with its condition still true; the carries it wrote continue from there
// when the carry operands are given the outputs of the previous launch).
struct LoopKernel {
  std::vector<KernelParam> params;
  std::string body;
  std::int64_t batch = 0;
};

// The kernel, or nullopt when the loop does not qualify (a body with a kernel call or a
// large value, types that do not match the record, QUABLA_CUDA_LOOP_KERNELS=0).
std::optional<LoopKernel> example_loop_kernel(const Graph& g, const Node& n);

}  // namespace qb::cuda
