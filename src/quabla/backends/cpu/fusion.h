// Elementwise fusion: maximal chains of elementwise ops (and the broadcasts feeding them)
// over one shape become one kernel that works tile by tile, so intermediates live in a
// small per-thread scratch tile set and never in full-size buffers. Each micro-op calls
// the same kernel as op-by-op execution, element for element, so fused results are bitwise
// identical to unfused ones.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "quabla/ir/graph.h"
#include "quabla/runtime/buffer.h"

namespace qb::cpu {

struct FusedKernel {
  static constexpr std::int64_t kTile = 1024;  // elements per tile
  static constexpr std::int64_t kSlotBytes = kTile * 8;
  // Kernels without an epilogue run shorter tiles, with scratch slots packed at this size:
  // a kernel with many scratch tiles then stays in L1 (11 slots of 8 KiB did not, and slots
  // 8 KiB apart competed for the same cache sets).
  static constexpr std::int64_t kShortTile = 512;

  struct Source {
    enum Kind : std::uint8_t { Full, Scalar, Slot, Materialized } kind;
    ValueId value = 0;  // Full/Scalar/Materialized: the value whose buffer is read
    int slot = -1;      // Slot: the scratch slot
  };
  struct MicroOp {
    Op op;                            // an elementwise op, or BroadcastInDim / Slice (strided loads)
    DType in_dtype, out_dtype;
    std::vector<Source> srcs;
    std::vector<std::int64_t> load_strides;  // loads: source stride per group axis
    ValueId out;
    int slot = -1;                    // scratch slot of the result, or -1 when materialised
    std::int64_t load_offset = 0;     // Slice: the first element read, in source elements
    Shape copy_shape;                 // loads on the CPU: the kernel's axes merged where the
    std::vector<std::int64_t> copy_strides;  // source is contiguous across them (fusion.cc)
  };

  // A sum over one contiguous run of axes of one member, computed tile by tile instead of
  // from a full-size buffer. Trailing axes (inner == 1): row_len elements per output
  // element; tiles hold whole rows, or kSumBlock-element blocks of one row, so the order is
  // blocked_sum's (summation.h). Middle axes ([outer, row_len, inner]): each output element
  // adds its row_len values in axis order, as the plain reduction does.
  struct Epilogue {
    ValueId input;   // the member being summed (kept in a scratch slot)
    ValueId out;     // the reduce node's result
    std::int64_t row_len = 0;
    std::int64_t inner = 1;  // elements after the summed axes
  };

  Shape shape;
  std::int64_t n = 0;
  std::optional<Epilogue> epilogue;
  std::vector<MicroOp> ops;
  std::vector<ValueId> inputs;   // external values read (their buffers must be live)
  std::vector<ValueId> outputs;  // member values written to full-size buffers
  int num_slots = 0;

  // Allocates the outputs in env and runs every tile (over the thread pool).
  void run(std::vector<BufferPtr>& env, const Graph& g) const;

 private:
  // Runs the micro-ops over elements [b, b + len) (len <= kTile).
  void run_range(std::int64_t b, std::int64_t len, const std::vector<const std::byte*>& base, std::byte* slots,
                 std::int64_t slot_bytes, const Graph& g) const;
  // The epilogue over middle axes.
  void run_middle_sum(const std::vector<const std::byte*>& base, std::byte* out, int slot, const Graph& g) const;
};

// The fusion plan of a graph: group[i] is the index of the fused kernel node i belongs to,
// or -1; kernels[k] runs where its first member node stands.
struct FusionPlan {
  std::vector<int> group;
  std::vector<std::uint32_t> first_node;  // per kernel
  std::vector<std::shared_ptr<const FusedKernel>> kernels;
};

// for_cpu: the CPU executor's extras, which the CUDA generator (sharing this plan) lacks:
// slices that contiguous_slice_offset accepts stay out of kernels (the executor makes them
// views of their operand), and reverses are loads like slices (negative strides).
FusionPlan plan_fusion(const Graph& g, bool for_cpu = false);

// A unit-stride slice that is one contiguous range of its operand starting on a
// Buffer::kAlignment boundary (the leading rows of an array, a plane of a planar complex
// value): its offset in elements; -1 for any other node.
std::int64_t contiguous_slice_offset(const Graph& g, const Node& n);

}  // namespace qb::cpu
