// Small loop bodies as straight-line scalar code (tier 0 of the loop compiler).
//
// A loop body whose values are all small (at most kMaxElements elements each) and that has
// no nested region is lowered once to instructions over a register file: every element of
// every value is one register. Slices, reshapes, broadcasts, transposes, concatenations and
// reversals only rename registers; float arithmetic, comparisons, selects, conversions
// between f32 and f64 and the vectorised transcendental functions are one instruction per
// element; any other op runs its ordinary kernel on its operands gathered from registers.
// Every instruction computes what the kernel computes (the same IEEE operation, the same
// libmvec call), so results are bitwise those of the kernel plan. The loop runners in
// control_flow.cc keep carries in registers across steps.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "quabla/ir/graph.h"
#include "quabla/runtime/buffer.h"

namespace qb::cpu {

// One element of any dtype (the member of its dtype is the one read and written).
union Reg {
  double f64;
  float f32;
  std::int64_t i64;
  std::int32_t i32;
  std::uint8_t b;
  std::uint64_t raw;
};

class ScalarBody : public std::enable_shared_from_this<ScalarBody> {
 public:
  static constexpr std::int64_t kMaxElements = 64;

  // The lowered body, or null when it does not qualify (a region op, a zero-element value,
  // more ops on large values than on small ones) or when QUABLA_LOOP_SCALAR=0. Values over
  // kMaxElements elements live in scratch buffers and every op that reads or writes one
  // runs its kernel.
  // `carries`: (parameter, result) pairs of the loop's carries (the result is the
  // parameter's next value), which lets a scatter into a large carry run in place.
  static std::shared_ptr<const ScalarBody> compile(std::shared_ptr<const Graph> body,
                                                   std::span<const std::pair<std::size_t, std::size_t>> carries = {});

  // A region op inside the body (a while loop, a scan, a cond, or a custom rule's or
  // checkpoint's primal body) whose regions have scalar forms of their own: one kernel call
  // that runs them on their own states (scalar_loop.cc).
  struct Nested;
  struct NestedState;

  // Per run: the registers (constants loaded), the scratch (large values and the staging
  // areas of kernel calls), the temporaries of results_to_params and, per kernel call of
  // a nested region op, the states of its regions.
  struct State {
    std::vector<Reg> regs;
    std::vector<std::byte> scratch;
    std::vector<Reg> tmp;
    std::vector<std::byte> big_tmp;
    std::vector<std::shared_ptr<NestedState>> nested;
  };
  // Where a parameter or result lives: registers, or (large) `bytes` at `offset` of scratch.
  struct Slot {
    bool big = false;
    std::size_t offset = 0, bytes = 0;
  };
  State make_state() const;

  void load_param(std::size_t i, const std::byte* src, State& s) const;
  void store_param(std::size_t i, const State& s, std::byte* dst) const;
  void store_result(std::size_t j, const State& s, std::byte* dst) const;
  // Parameters first_param.. taking results first_result.. (count of them, same types): the
  // register moves, applied as one parallel assignment (a result may be read from a
  // parameter it replaces). Moves of a register onto itself are left out.
  struct BigMove {
    std::size_t src, dst, bytes, tmp;  // scratch offsets; tmp: offset in big_tmp
  };
  struct Moves {
    std::vector<std::uint32_t> src, dst;
    std::vector<BigMove> big;
    void apply(State& s) const;
  };
  Moves results_to_params(std::size_t first_result, std::size_t first_param, std::size_t count) const;
  std::span<const std::uint32_t> param_regs(std::size_t i) const { return params_[i]; }
  std::span<const std::uint32_t> result_regs(std::size_t j) const { return results_[j]; }
  const Slot& param_slot(std::size_t i) const { return param_slot_[i]; }
  const Slot& result_slot(std::size_t j) const { return result_slot_[j]; }
  std::size_t param_bytes(std::size_t i) const {
    return param_slot_[i].big ? param_slot_[i].bytes : params_[i].size() * param_item_[i];
  }
  std::size_t result_bytes(std::size_t j) const {
    return result_slot_[j].big ? result_slot_[j].bytes : results_[j].size() * result_item_[j];
  }

  void run(State& s) const;

  // A while loop with this body, the condition `cond` and nc consts then nk carries as
  // parameters, all loaded into cond_state and body_state: runs it to the end (native code
  // once built), polling for interrupts; the carries are left in body_state's parameters.
  // moves: results_to_params(0, nc, nk).
  void run_while(const ScalarBody& cond, State& cond_state, State& body_state, std::size_t nc, std::size_t nk,
                 const Moves& moves) const;
  // A scan of len steps with this body (parameters: index, nc consts, nk carries, xs): consts
  // and carries loaded into s; xs[i] holds len slices of x_bytes[i], ys[j] receives len of
  // y_bytes[j]; the carries are left in s's parameters. moves: results_to_params(0, 1 + nc, nk).
  void run_scan(State& s, std::size_t nc, std::size_t nk, const Moves& moves, std::int64_t len, std::int64_t start, bool reverse,
                std::span<const std::byte* const> xs, std::span<std::byte* const> ys,
                std::span<const std::size_t> x_bytes, std::span<const std::size_t> y_bytes) const;

  // Tier 1: the whole scan (steps [first, last) of len, carries in locals) as native code
  // generated from these instructions (native_loop.cc). Registers are read from the state
  // on entry and the carries written back on exit.
  using NativeScan = void (*)(Reg* regs, const void* env, std::int64_t first, std::int64_t last, std::int64_t len,
                              std::int64_t start, int reverse, const std::byte* const* xs, std::byte* const* ys);
  // The native form of this body as a scan with nc consts and nk carries: null until it is
  // built (in the background unless QUABLA_LOOP_JIT=sync; never when QUABLA_LOOP_JIT=0 or
  // no C compiler works). The first call starts the build.
  NativeScan native_scan(std::size_t nc, std::size_t nk) const;
  // Runs fn over the state (kernel calls and libmvec functions reach back through it).
  void run_native(NativeScan fn, State& s, std::int64_t first, std::int64_t last, std::int64_t len, std::int64_t start,
                  bool reverse, const std::byte* const* xs, std::byte* const* ys) const;

  // The same for a while loop with this body, the condition `cond` and nc consts (the
  // other parameters are carries): at most max_steps iterations per call.
  using NativeWhile = int (*)(Reg* cond_regs, Reg* body_regs, const void* cond_env, const void* body_env,
                              std::int64_t max_steps);
  NativeWhile native_while(const ScalarBody& cond, std::size_t nc) const;
  // True once the condition is false; false when max_steps ran out first.
  bool run_native_while(NativeWhile fn, const ScalarBody& cond, State& cond_state, State& body_state,
                        std::int64_t max_steps) const;

  // Instruction kinds (public for the lowering in scalar_loop.cc).
  enum class Kind : std::uint8_t;
  struct Instr;
  struct KernelCall;

  // For generators of code for other targets (the CUDA backend's loop kernels): whether the
  // instructions alone compute the body (no kernel calls, no large values), and what they
  // read: the instructions, each register's dtype, and the constants loaded into registers.
  bool self_contained() const;
  std::span<const Instr> code() const;
  std::size_t num_regs() const { return num_regs_; }
  DType reg_dtype(std::uint32_t r) const { return reg_dtype_[r]; }
  std::span<const std::pair<std::uint32_t, Reg>> register_constants() const { return constants_; }
  std::size_t num_params() const { return params_.size(); }
  std::size_t num_results() const { return results_.size(); }

  ScalarBody();
  ~ScalarBody();
  ScalarBody(const ScalarBody&) = delete;
  ScalarBody& operator=(const ScalarBody&) = delete;

 private:
  friend class ScalarLowering;
  friend class NativeEmitter;
  friend struct NativeAccess;
  void call(const KernelCall& c, State& s) const;
  void run_nested(const Nested& nested, NestedState& ns, std::span<const std::byte* const> ins,
                  std::span<std::byte* const> outs) const;
  std::shared_ptr<const Graph> graph_;
  std::vector<Instr> code_;
  std::vector<KernelCall> calls_;
  std::vector<std::vector<std::uint32_t>> params_, results_;
  std::vector<std::size_t> param_item_, result_item_;  // bytes per element
  std::vector<Slot> param_slot_, result_slot_;
  std::vector<std::pair<std::uint32_t, Reg>> constants_;
  std::vector<std::pair<std::size_t, BufferPtr>> big_constants_;  // scratch offset, literal bytes
  std::size_t num_regs_ = 0, scratch_bytes_ = 0, big_param_bytes_ = 0;
  std::vector<DType> reg_dtype_;
  // Builds (once) the native function of `source` (in the background unless
  // QUABLA_LOOP_JIT=sync) and returns it once built; also_keep lives as long as the build.
  void* native_function(const std::function<std::string()>& source, std::shared_ptr<const ScalarBody> also_keep) const;
  mutable std::atomic<void*> native_{nullptr};
  mutable std::atomic<bool> native_started_{false};
};

// Runs node n's kernel with operand i at ins[i] and output k at outs[k] (contiguous,
// row-major; executable.cc).
void run_node_packed(const Graph& g, const Node& n, std::span<const std::byte* const> ins,
                     std::span<std::byte* const> outs);

}  // namespace qb::cpu
