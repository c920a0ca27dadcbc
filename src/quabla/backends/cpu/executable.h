// A Graph compiled for the CPU: a plan of kernel calls over host buffers.
#pragma once
#include <array>
#include <memory>
#include <span>
#include <vector>

#include "quabla/backends/cpu/fusion.h"
#include "quabla/ir/graph.h"
#include "quabla/runtime/buffer.h"

namespace qb::cpu {

class ScalarBody;        // scalar_loop.h
struct StartedHostCalls;  // executable.cc: the host calls a run has started

// What a compiled plan does, for tests and users (`jit(f).lower(...).compile().stats()`).
struct PlanStats {
  int kernels = 0;               // kernel launches per run (views, constants and parameters excluded)
  int buffers = 0;               // buffers the plan allocates per run
  std::int64_t peak_bytes = 0;   // most bytes live at once: arguments, intermediates, results and
                                 // what region bodies (loops, cond, checkpoint) hold while they run
  std::int64_t matmul_flops = 0; // 2 m k n per matrix product (batches included), per run
  int loops = 0;                 // scan and while nodes, nested ones included
  int scalar_loops = 0;          // of those, the ones whose bodies run as scalar code (scalar_loop.h)
};

class Executable {
 public:
  explicit Executable(std::shared_ptr<const Graph> graph);

  // Runs the program on one buffer per parameter (each of the parameter's type) and returns
  // one buffer per result. Thread-safe: run keeps its state on the stack.
  std::vector<BufferPtr> run(std::span<const BufferPtr> args) const;
  // The same, taking the arguments over: a buffer only the program holds may then be
  // updated in place (loop carries between iterations).
  std::vector<BufferPtr> run_owned(std::vector<BufferPtr> args) const;

  // Small programs (every value at most 16 KiB, no regions; loop bodies over a few values)
  // also have an allocation-free plan: values at fixed offsets of one caller-owned arena of
  // arena_bytes(). run_small reads parameter i at params[i]; result j is then at
  // result_data(j, ...) (in the arena, a parameter or a constant). Same results as run.
  bool is_small() const { return small_; }
  std::size_t arena_bytes() const { return arena_bytes_; }
  void run_small(std::span<const std::byte* const> params, std::byte* arena) const;
  const std::byte* result_data(std::size_t j, std::span<const std::byte* const> params, const std::byte* arena) const;

  struct Location {
    enum Kind : std::uint8_t { Param, Arena, Const } kind = Arena;
    std::size_t index = 0, offset = 0;
    const std::byte* data = nullptr;
  };
  static const std::byte* locate(const Location& l, std::span<const std::byte* const> params, const std::byte* arena);

  // The program as given (complex parameters and results with their complex types; the plan
  // runs its lowered form, transforms/lower_complex.h, on the same buffers).
  const Graph& graph() const { return *interface_; }
  const PlanStats& stats() const { return stats_; }
  // Whether running the program may call into Python (host_call nodes, regions included):
  // the bindings then let go of the GIL while it runs, so a communication thread can run
  // the collectives the program started while the rest of it computes.
  bool has_host_calls() const { return has_host_calls_; }
  // The plan as text: one line per kernel, fused kernels with their member nodes.
  std::string plan_text() const;

 private:
  struct Step {
    std::uint32_t node;
    // A fused elementwise kernel standing for several nodes (fusion.h), or null.
    std::shared_ptr<const FusedKernel> fused;
    // Values whose buffers can be released after this step (their last use).
    std::vector<ValueId> release;
    // Per operand: reads a one-element buffer for every index (elementwise ops only).
    std::vector<bool> scalar_operand;
    // A broadcast of a scalar consumed only by elementwise ops: passes the scalar through.
    bool virtual_broadcast = false;
    // Region ops: the compiled bodies (cond: false, true; scan: body; while: cond, body).
    std::vector<std::shared_ptr<const Executable>> regions;
    // A swap of the last two axes read only by matmuls: a view; the matmul passes BLAS a
    // transpose flag for that operand (trans_a / trans_b) instead of copying.
    bool virtual_transpose = false;
    bool trans_a = false, trans_b = false;
    // A contiguous, aligned slice (fusion.h: contiguous_slice_offset): a view of its operand.
    bool virtual_slice = false;
    // A transpose around an fft that reads or writes it strided instead (strided_ffts): a
    // view; and the fft's row layouts (kernels.h: fft).
    bool fft_view = false;
    std::int64_t fft_in_inner = 1, fft_out_inner = 1;
    // Scan and while: per region, its scalar form when it has one (null otherwise).
    std::vector<std::shared_ptr<const ScalarBody>> scalar{};
    // Results of host calls started earlier that this step is the first to read: they are
    // finished (waited for) before it runs.
    std::vector<ValueId> waits{};
  };
  using Users = std::vector<std::vector<std::uint32_t>>;
  struct StridedFfts {
    std::vector<bool> view;                         // by node: a transpose the fft reads or writes through
    std::vector<std::int64_t> in_inner, out_inner;  // by node: an fft's row layouts
  };
  static StridedFfts strided_ffts(const Graph& g, const Users& users);
  // The step of node i outside fused kernels (views, scalar operands, transposed operands).
  static Step plain_step(const Graph& g, const Users& users, std::uint32_t i, std::vector<bool>& is_scalar_value,
                         std::vector<bool>& is_trans_view);

  void run_step(const Step& s, std::vector<BufferPtr>& env, StartedHostCalls* started) const;
  void schedule_host_calls();
  void plan_small(const Users& users);
  void run_region(const Step& s, std::vector<BufferPtr>& env) const;  // control_flow.cc
  void compute_stats();

  std::shared_ptr<const Graph> graph_;      // what the plan runs
  std::shared_ptr<const Graph> interface_;  // graph_, or the complex program it lowers
  std::vector<Step> steps_;
  PlanStats stats_;
  bool small_ = false;
  bool has_host_calls_ = false;
  std::vector<Location> loc_;
  std::vector<Step> small_steps_;
  // Per small step: an elementwise op resolved ahead (operand locations, sizes, dtypes), so
  // run_small calls its kernel directly; op == Parameter marks a step run_node handles.
  struct DirectElementwise {
    Op op = Op::Parameter;
    DType in_dtype = DType::f32, out_dtype = DType::f32;
    std::int64_t n = 0;
    std::size_t out_offset = 0;
    std::uint8_t num_inputs = 0;
    std::array<Location, 3> in{};
    std::array<bool, 3> scalar{};
  };
  std::vector<DirectElementwise> direct_;
  std::size_t arena_bytes_ = 0;
};

}  // namespace qb::cpu
