// CUDA C generation for the kernels of a device plan (lowering.h). Every generated kernel
// has one shape: a grid-stride loop over an index space `qb_n`, each index computed alone
// by one thread, with no shared memory, barriers or atomics. That keeps reductions
// deterministic (a fixed split into partial sums, then a fixed-order combine) and lets the
// host emulator (emulator.cc) run the very same source as C++ on the CPU: the source is
// the prelude of its target followed by the kernels, identical for both.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "quabla/ir/graph.h"

namespace qb::cuda {

enum class Target { Cuda, Host };

// The C type of a dtype in generated code (qb_i64, qb_u8, ...).
const char* c_type(DType d);
// The definitions every kernel relies on: fixed-width types, the helper functions of the
// elementwise ops (NaN-propagating max, overflow-free softplus, XLA's integer division...)
// and, for the host target, the thread-index shim.
std::string prelude(Target t);

// The C expression of elementwise `op` on operand expressions `args` (of the operand
// dtypes: `in` for value operands, qb_u8 for a select's predicate). Throws
// UnsupportedOperation for anything that is not an elementwise op.
std::string elementwise_expr(Op op, DType in, DType out, const std::vector<std::string>& args);

struct KernelParam {
  std::string type;  // "const float* __restrict__", "qb_i64"
  std::string name;
};
// One kernel: `body` is run for every index `i` in [0, qb_n).
struct KernelSource {
  std::string name;
  std::vector<KernelParam> params;  // after the leading `qb_i64 qb_n`
  std::string body;
};

// The whole module for a target: prelude, then each kernel as an extern "C" __global__
// function; the host target adds one `void <name>_host(void** args)` per kernel that
// unpacks the arguments as cuLaunchKernel would and runs the grid-stride loop on one thread.
std::string module_source(const std::vector<KernelSource>& kernels, Target t);

}  // namespace qb::cuda
