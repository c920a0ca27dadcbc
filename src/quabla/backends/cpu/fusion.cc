#include "quabla/backends/cpu/fusion.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <cstring>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/backends/cpu/summation.h"
#include "quabla/runtime/buffer.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

namespace {

bool is_scalar_broadcast(const Graph& g, const Node& n) {
  return n.op == Op::BroadcastInDim && num_elements(g.type(n.inputs[0]).shape) == 1;
}

// Strides (in source elements) per group axis for reading `src_shape` broadcast by `dims`.
std::vector<std::int64_t> broadcast_strides(const Shape& out_shape, const Shape& src_shape,
                                            const std::vector<std::int64_t>& dims) {
  const auto src_strides = row_major_strides(src_shape);
  std::vector<std::int64_t> s(out_shape.size(), 0);
  for (std::size_t i = 0; i < dims.size(); ++i) s[dims[i]] = src_shape[i] == 1 ? 0 : src_strides[i];
  return s;
}

// dst[k] = src[offset(begin + k)] for k < len, where offset maps a flat index over `shape`
// through `strides`. Works in runs along the innermost axis (a copy, a fill or a strided
// gather), so a row broadcast such as a bias costs about a memcpy.
// `run` copies of the element at `in`, or elements `stride` apart, into `out`: typed loops
// for the common sizes (a memcpy call per element, its size known only at run time, made a
// row broadcast such as x - max(x, axis=-1) 10x slower than the subtraction itself).
template <class T>
void fill_or_gather(std::byte* out, const std::byte* in, std::int64_t run, std::int64_t stride) {
  T* o = reinterpret_cast<T*>(out);
  const T* x = reinterpret_cast<const T*>(in);
  if (stride == 0) {
    T v;
    std::memcpy(&v, x, sizeof v);
    std::fill_n(o, run, v);
    return;
  }
  for (std::int64_t r = 0; r < run; ++r) std::memcpy(o + r, x + r * stride, sizeof(T));
}

void fill_or_gather(std::size_t elem, std::byte* out, const std::byte* in, std::int64_t run, std::int64_t stride) {
  switch (elem) {
    case 8: return fill_or_gather<std::uint64_t>(out, in, run, stride);
    case 4: return fill_or_gather<std::uint32_t>(out, in, run, stride);
    case 1: return fill_or_gather<std::uint8_t>(out, in, run, stride);
    default: break;
  }
  const auto e = static_cast<std::int64_t>(elem);
  for (std::int64_t r = 0; r < run; ++r) std::memcpy(out + r * e, in + r * stride * e, elem);
}

// dst[k] = src[r s0 + c s1] for the flat index begin + k = r cols + c, k < len.
template <class T>
void gather_rows(const std::byte* src_bytes, std::int64_t cols, std::int64_t s0, std::int64_t s1, std::int64_t begin,
                 std::int64_t len, std::byte* dst_bytes) {
  const T* src = reinterpret_cast<const T*>(src_bytes);
  T* dst = reinterpret_cast<T*>(dst_bytes);
  std::int64_t r = begin / cols, c = begin - r * cols, k = 0;
  while (k < len) {
    const std::int64_t run = std::min(len - k, cols - c);
    const T* row = src + r * s0 + c * s1;
    for (std::int64_t i = 0; i < run; ++i) dst[k + i] = row[i * s1];
    k += run;
    c = 0;
    ++r;
  }
}

// The period of a load that repeats one contiguous block of the source: the leading axes
// broadcast (stride 0) and the trailing ones row-major contiguous (x[None, :] against
// [n, d] reads the d values of x again and again). 0 when the load is not of that form.
std::int64_t repeating_block(const Shape& shape, const std::vector<std::int64_t>& strides) {
  std::size_t first = 0;
  while (first < shape.size() && (strides[first] == 0 || shape[first] == 1)) ++first;
  std::int64_t period = 1;
  for (std::size_t a = shape.size(); a-- > first;) {
    if (shape[a] != 1 && strides[a] != period) return 0;
    period *= shape[a];
  }
  return first == 0 ? 0 : period;  // no broadcast axis: a plain copy, handled by the rows
}

// dst[k] = src[(begin + k) mod period]: one partial period, one whole one, then copies of
// what dst already holds, doubling (log(len / period) memcpy calls instead of one per row).
void periodic_copy(std::size_t elem, const std::byte* src, std::int64_t period, std::int64_t begin, std::int64_t len,
                   std::byte* dst) {
  const auto e = static_cast<std::int64_t>(elem);
  const std::int64_t phase = begin % period;
  std::int64_t k = std::min(len, period - phase);
  std::memcpy(dst, src + phase * e, static_cast<std::size_t>(k * e));
  if (k == len) return;
  const std::int64_t start = k;
  const std::int64_t whole = std::min(len - k, period);
  std::memcpy(dst + k * e, src, static_cast<std::size_t>(whole * e));
  k += whole;
  while (k < len) {
    const std::int64_t chunk = std::min(k - start, len - k);
    std::memcpy(dst + k * e, dst + start * e, static_cast<std::size_t>(chunk * e));
    k += chunk;
  }
}

// dst[k] = src[((begin + k) / width) * row_stride]: each source element repeated `width`
// times (a column [n, 1] against [n, width] with a short width), in typed loops.
template <class T>
void repeat_each(const std::byte* src, std::int64_t row_stride, std::int64_t width, std::int64_t begin, std::int64_t len,
                 std::byte* dst) {
  T* o = reinterpret_cast<T*>(dst);
  const T* x = reinterpret_cast<const T*>(src);
  std::int64_t row = begin / width, col = begin - row * width;
  for (std::int64_t k = 0; k < len; ++row, col = 0) {
    T v;
    std::memcpy(&v, x + row * row_stride, sizeof v);
    for (; col < width && k < len; ++col) o[k++] = v;
  }
}

// A load's axes with size-1 ones dropped and neighbours that are contiguous in the source
// merged (computed once per load when the kernel is planned), so that a slice of whole rows
// (r[0] of [2, n, 2]) is one long row, not n rows of two.
void merge_axes(const Shape& shape, const std::vector<std::int64_t>& strides, Shape& merged,
                std::vector<std::int64_t>& merged_strides) {
  merged.clear();
  merged_strides.clear();
  for (std::size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] == 1) continue;
    if (!merged.empty() && merged_strides.back() == strides[a] * shape[a]) {
      merged.back() *= shape[a];
      merged_strides.back() = strides[a];
      continue;
    }
    merged.push_back(shape[a]);
    merged_strides.push_back(strides[a]);
  }
}

// `shape` and `strides` as merge_axes leaves them.
void strided_range_copy(std::size_t elem, const std::byte* src, const Shape& shape,
                        const std::vector<std::int64_t>& strides, std::int64_t begin, std::int64_t len, std::byte* dst) {
  const std::size_t rank = shape.size();
  if (rank == 0) {
    fill_or_gather(elem, dst, src, len, 0);
    return;
  }
  // Short rows make the row loop below cost a call per row: two common broadcasts instead.
  constexpr std::int64_t kShortRow = 16;
  if (shape[rank - 1] < kShortRow) {
    if (const std::int64_t period = repeating_block(shape, strides); period > 0 && period < len) {
      periodic_copy(elem, src, period, begin, len, dst);
      return;
    }
    if (rank == 2 && strides[1] == 0 && (elem == 8 || elem == 4 || elem == 2 || elem == 1)) {
      const auto fn = elem == 8   ? repeat_each<std::uint64_t>
                      : elem == 4 ? repeat_each<std::uint32_t>
                      : elem == 2 ? repeat_each<std::uint16_t>
                                  : repeat_each<std::uint8_t>;
      fn(src, strides[0], shape[1], begin, len, dst);
      return;
    }
  }
  if (rank == 2 && shape[1] < 256 && strides[1] != 1 && strides[1] != 0 && (elem == 8 || elem == 4)) {
    // Short strided rows (every other element, a reversed row): one typed loop over the
    // range, not a gather call per row.
    (elem == 8 ? gather_rows<std::uint64_t> : gather_rows<std::uint32_t>)(src, shape[1], strides[0], strides[1],
                                                                         begin, len, dst);
    return;
  }
  // The multi-index of `begin`: one division per axis but the outermost (this runs once
  // per load per tile, and a 64-bit division costs as much as copying a short row), in 32
  // bits where the sizes allow.
  std::vector<std::int64_t> idx(rank, 0);
  std::int64_t rem = begin, off = 0;
  const bool narrow = begin <= INT32_MAX;
  for (std::size_t a = rank; a-- > 1;) {
    std::int64_t q;
    if (narrow && shape[a] <= INT32_MAX) {
      const auto r32 = static_cast<std::uint32_t>(rem), s32 = static_cast<std::uint32_t>(shape[a]);
      q = r32 / s32;
      idx[a] = r32 - static_cast<std::uint32_t>(q) * s32;
    } else {
      q = rem / shape[a];
      idx[a] = rem - q * shape[a];
    }
    rem = q;
    off += idx[a] * strides[a];
  }
  idx[0] = rem;
  off += rem * strides[0];
  const std::size_t last = rank - 1;
  const std::int64_t inner_stride = strides[last];
  const auto e = static_cast<std::int64_t>(elem);
  std::int64_t k = 0;
  while (k < len) {
    const std::int64_t run = std::min(len - k, shape[last] - idx[last]);
    std::byte* out = dst + k * e;
    const std::byte* in = src + off * e;
    if (inner_stride == 1) std::memcpy(out, in, static_cast<std::size_t>(run * e));
    else fill_or_gather(elem, out, in, run, inner_stride);
    k += run;
    // Move to the start of the next row: innermost index back to 0, odometer on the rest.
    off += (shape[last] - idx[last]) * inner_stride;
    off -= shape[last] * inner_stride;
    idx[last] = 0;
    for (std::size_t a = last; a-- > 0;) {
      off += strides[a];
      if (++idx[a] < shape[a]) break;
      off -= strides[a] * shape[a];
      idx[a] = 0;
    }
  }
}

}  // namespace

void FusedKernel::run_range(std::int64_t b, std::int64_t len, const std::vector<const std::byte*>& base,
                            std::byte* slots, std::int64_t slot_bytes, const Graph& g) const {
  for (const MicroOp& m : ops) {
    std::byte* dst = m.slot >= 0 ? slots + m.slot * slot_bytes
                                 : const_cast<std::byte*>(base[m.out]) + b * static_cast<std::int64_t>(itemsize(m.out_dtype));
    if (m.op == Op::BroadcastInDim || m.op == Op::Slice || m.op == Op::Reverse) {
      const auto elem = static_cast<std::int64_t>(itemsize(m.out_dtype));
      strided_range_copy(itemsize(m.out_dtype), base[m.srcs[0].value] + m.load_offset * elem, m.copy_shape,
                         m.copy_strides, b, len, dst);
      continue;
    }
    Operand operands[3];
    for (std::size_t i = 0; i < m.srcs.size(); ++i) {
      const Source& s = m.srcs[i];
      const std::int64_t elem = static_cast<std::int64_t>(itemsize(g.type(s.value).dtype));
      switch (s.kind) {
        case Source::Full: case Source::Materialized: operands[i] = {base[s.value] + b * elem, false}; break;
        case Source::Scalar: operands[i] = {base[s.value], true}; break;
        case Source::Slot: operands[i] = {slots + s.slot * slot_bytes, false}; break;
      }
    }
    elementwise(m.op, m.in_dtype, m.out_dtype, std::span<const Operand>(operands, m.srcs.size()), dst, len);
  }
}

namespace {
template <class T>
void sum_rows(const std::byte* tile, std::int64_t rows, std::int64_t row_len, std::byte* out) {
  const T* x = reinterpret_cast<const T*>(tile);
  T* y = reinterpret_cast<T*>(out);
  for (std::int64_t r = 0; r < rows; ++r) y[r] = pairwise_sum(x + r * row_len, row_len);
}

// A parallel_for body running body(t, scratch) for each t of its range, with this thread's
// scratch tiles (at least `bytes`; kept between runs: loop bodies run kernels per step).
template <class Body>
auto with_scratch(std::int64_t bytes, Body body) {
  return [bytes, body](std::int64_t tb, std::int64_t te) {
    thread_local std::vector<std::byte> scratch;
    if (scratch.size() < static_cast<std::size_t>(bytes)) scratch.resize(static_cast<std::size_t>(bytes));
    for (std::int64_t t = tb; t < te; ++t) body(t, scratch.data());
  };
}

// out[i] += tile[r][i] for r = 0..rows-1 in order (the plain middle-axis reduction's order).
template <class T>
void accumulate_rows(const std::byte* tile, std::int64_t rows, std::int64_t len, std::byte* out) {
  const T* x = reinterpret_cast<const T*>(tile);
  T* y = reinterpret_cast<T*>(out);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t i = 0; i < len; ++i) y[i] += x[r * len + i];
}
}  // namespace

void FusedKernel::run_middle_sum(const std::vector<const std::byte*>& base, std::byte* out, int slot,
                                 const Graph& g) const {
  const Epilogue& ep = *epilogue;
  const DType dt = g.type(ep.out).dtype;
  const auto elem = static_cast<std::int64_t>(itemsize(dt));
  const std::int64_t red = ep.row_len, inner = ep.inner, outer = n / (red * inner);
  auto accumulate = [&](const std::byte* tile, std::int64_t rows, std::int64_t len, std::byte* dst) {
    if (dt == DType::f32) accumulate_rows<float>(tile, rows, len, dst);
    else accumulate_rows<double>(tile, rows, len, dst);
  };
  // Each task owns its output elements: [inner chunk] x (all rows of its outer indices),
  // so the result never depends on the thread count. Outputs start at +0, as the plain
  // reduction's accumulators do. Small outer blocks (red * inner <= kTile) are run
  // several to a tile, so a reduction over few rows (a size-1 axis) does not run a
  // chain of micro-ops on a handful of elements at a time.
  const std::int64_t block = red * inner;
  if (block <= kTile) {
    const std::int64_t per_tile = kTile / block, tiles = (outer + per_tile - 1) / per_tile;
    parallel_for(tiles, 8, with_scratch(num_slots * kSlotBytes, [&](std::int64_t t, std::byte* slots) {
      const std::int64_t o0 = t * per_tile, count = std::min(per_tile, outer - o0);
      run_range(o0 * block, count * block, base, slots, kSlotBytes, g);
      const std::byte* tile = slots + slot * kSlotBytes;
      for (std::int64_t o = 0; o < count; ++o) {
        std::byte* dst = out + (o0 + o) * inner * elem;
        std::memset(dst, 0, static_cast<std::size_t>(inner * elem));
        accumulate(tile + o * block * elem, red, inner, dst);
      }
    }));
    return;
  }
  const std::int64_t chunk = std::min(inner, kTile), chunks = (inner + chunk - 1) / chunk;
  const std::int64_t rows_per_tile = std::max<std::int64_t>(1, kTile / inner);
  const std::int64_t grain = std::max<std::int64_t>(1, 8 * kTile / std::max<std::int64_t>(1, red * chunk));
  auto body = [&](std::int64_t t, std::byte* slots) {
    const std::int64_t o = t / chunks, c = t % chunks;
    const std::int64_t len = std::min(chunk, inner - c * chunk);
    std::byte* dst = out + (o * inner + c * chunk) * elem;
    std::memset(dst, 0, static_cast<std::size_t>(len * elem));
    const std::int64_t step = chunks == 1 ? rows_per_tile : 1;
    for (std::int64_t r0 = 0; r0 < red; r0 += step) {
      const std::int64_t rows = std::min(step, red - r0);
      // With one chunk, `rows` consecutive rows are contiguous; otherwise one row's chunk.
      run_range(o * red * inner + r0 * inner + c * chunk, rows * len, base, slots, kSlotBytes, g);
      accumulate(slots + slot * kSlotBytes, rows, len, dst);
    }
  };
  parallel_for(outer * chunks, grain, with_scratch(num_slots * kSlotBytes, body));
}

void FusedKernel::run(std::vector<BufferPtr>& env, const Graph& g) const {
  for (ValueId v : outputs) {
    env[v] = Buffer::allocate(static_cast<std::size_t>(n) * itemsize(g.type(v).dtype));
  }
  // Pointers resolved once per run, not per tile.
  // Reused (loop bodies run this per step); a reference, so the worker threads' lambdas
  // read this thread's vector.
  thread_local std::vector<const std::byte*> tl_base;
  std::vector<const std::byte*>& base = tl_base;
  base.assign(g.values.size(), nullptr);
  for (ValueId v : inputs) base[v] = env[v]->data();
  for (ValueId v : outputs) base[v] = env[v]->data();
  const std::int64_t scratch_bytes = num_slots * kSlotBytes;
  if (!epilogue) {
    // Short tiles (each element is computed alone, so the tiling never changes results);
    // threads still get chunks of 8 long tiles' worth of elements.
    const std::int64_t tiles = (n + kShortTile - 1) / kShortTile;
    const std::int64_t slot_bytes = kShortTile * 8;
    parallel_for(tiles, 8 * kTile / kShortTile, with_scratch(scratch_bytes, [&](std::int64_t t, std::byte* slots) {
      run_range(t * kShortTile, std::min(kShortTile, n - t * kShortTile), base, slots, slot_bytes, g);
    }));
    return;
  }
  const Epilogue& ep = *epilogue;
  const DType dt = g.type(ep.out).dtype;
  const auto elem = static_cast<std::int64_t>(itemsize(dt));
  const std::int64_t rows = n / ep.row_len;
  env[ep.out] = Buffer::allocate(static_cast<std::size_t>(rows * elem));
  std::byte* out = env[ep.out]->data();
  int slot = -1;
  for (const MicroOp& m : ops)
    if (m.out == ep.input) slot = m.slot;
  if (ep.inner > 1) return run_middle_sum(base, out, slot, g);
  auto sum_tile = [&](const std::byte* tile, std::int64_t count, std::int64_t len, std::byte* dst) {
    if (dt == DType::f32) sum_rows<float>(tile, count, len, dst);
    else sum_rows<double>(tile, count, len, dst);
  };
  if (ep.row_len <= kSumBlock) {
    // Whole rows per tile; each row is one pairwise sum, as blocked_sum does.
    const std::int64_t rows_per_tile = kTile / ep.row_len;
    const std::int64_t tiles = (rows + rows_per_tile - 1) / rows_per_tile;
    parallel_for(tiles, 8, with_scratch(scratch_bytes, [&](std::int64_t t, std::byte* slots) {
      const std::int64_t r0 = t * rows_per_tile, count = std::min(rows_per_tile, rows - r0);
      run_range(r0 * ep.row_len, count * ep.row_len, base, slots, kSlotBytes, g);
      sum_tile(slots + slot * kSlotBytes, count, ep.row_len, out + r0 * elem);
    }));
    return;
  }
  // Long rows: one tile per kSumBlock block of a row, block sums combined per row.
  const std::int64_t blocks = (ep.row_len + kSumBlock - 1) / kSumBlock;
  std::vector<std::byte> partial(static_cast<std::size_t>(rows * blocks * elem));
  parallel_for(rows * blocks, 8, with_scratch(scratch_bytes, [&](std::int64_t t, std::byte* slots) {
    const std::int64_t r = t / blocks, j = t % blocks;
    const std::int64_t len = std::min(kSumBlock, ep.row_len - j * kSumBlock);
    run_range(r * ep.row_len + j * kSumBlock, len, base, slots, kSlotBytes, g);
    sum_tile(slots + slot * kSlotBytes, 1, len, partial.data() + t * elem);
  }));
  for (std::int64_t r = 0; r < rows; ++r) sum_tile(partial.data() + r * blocks * elem, 1, blocks, out + r * elem);
}

std::int64_t contiguous_slice_offset(const Graph& g, const Node& n) {
  if (n.op != Op::Slice) return -1;
  const Shape& xs = g.type(n.inputs[0]).shape;
  const auto& a = n.attrs;
  // Leading axes of extent one, then one partial axis, then whole axes.
  std::size_t axis = 0;
  while (axis < xs.size() && a.limits[axis] - a.starts[axis] == 1) ++axis;
  const std::size_t partial = axis;
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (a.strides[i] != 1 && a.limits[i] - a.starts[i] > 1) return -1;
  for (std::size_t i = partial + 1; i < xs.size(); ++i)
    if (a.starts[i] != 0 || a.limits[i] != xs[i]) return -1;
  std::int64_t offset = 0, stride = 1;
  for (std::size_t i = xs.size(); i-- > 0;) {
    offset += a.starts[i] * stride;
    stride *= xs[i];
  }
  const std::size_t bytes = static_cast<std::size_t>(offset) * itemsize(g.type(n.inputs[0]).dtype);
  return bytes % Buffer::kAlignment == 0 ? offset : -1;
}

FusionPlan plan_fusion(const Graph& g, bool for_cpu) {
  const std::size_t N = g.nodes.size();
  FusionPlan plan;
  plan.group.assign(N, -1);

  // 1. Greedy grouping in node order: a node joins the open group when it has the group's
  //    shape and every operand is a member, a constant, or produced before the group starts
  //    (the group runs where its first member stands).
  std::vector<std::vector<std::uint32_t>> groups;
  std::vector<Shape> group_shape;
  int open = -1;
  for (std::uint32_t i = 0; i < N; ++i) {
    const Node& n = g.nodes[i];
    // A slice is a strided load from its operand's full buffer (stencils: the shifted
    // views of one array feeding one expression), so that operand must not be a member of
    // the group, nor a broadcast scalar the executor never materialises.
    const bool slice_load = (n.op == Op::Slice || (for_cpu && n.op == Op::Reverse)) &&
                            !is_scalar_broadcast(g, g.producer_of(n.inputs[0])) &&
                            num_elements(g.type(n.inputs[0]).shape) > 1 &&
                            !(for_cpu && contiguous_slice_offset(g, n) >= 0);
    const bool fusible = (is_elementwise(n.op) && n.outputs.size() == 1) || n.op == Op::BroadcastInDim || slice_load;
    if (!fusible) continue;
    const Shape& shape = g.type(n.outputs[0]).shape;
    bool joins = open >= 0 && group_shape[open] == shape;
    for (std::size_t k = 0; joins && k < n.inputs.size(); ++k) {
      const std::uint32_t p = g.producer[n.inputs[k]];
      joins = plan.group[p] == open || g.nodes[p].op == Op::Constant || p < groups[open].front();
      if (slice_load && plan.group[p] == open) joins = false;
    }
    if (!joins) {
      open = static_cast<int>(groups.size());
      groups.emplace_back();
      group_shape.push_back(shape);
    }
    groups[open].push_back(i);
    plan.group[i] = open;
  }

  // 1b. Where each group runs (its first member's position), fixed before members move.
  std::vector<std::uint32_t> group_start;
  for (const auto& members : groups) group_start.push_back(members.front());

  //     A broadcast that joined a group only because its input was ready (the next layer's
  //     bias after a matmul) but is read by a later group alone moves to that group, where
  //     it is a tile load instead of a full-size buffer written here and read there.
  {
    std::vector<std::vector<std::uint32_t>> users(g.values.size());
    for (std::uint32_t i = 0; i < N; ++i)
      for (ValueId v : g.nodes[i].inputs) users[v].push_back(i);
    std::vector<bool> is_result(g.values.size(), false);
    for (ValueId v : g.results) is_result[v] = true;
    for (std::size_t k = 0; k < groups.size(); ++k) {
      for (std::size_t m = 0; m < groups[k].size();) {
        const std::uint32_t i = groups[k][m];
        const Node& n = g.nodes[i];
        const ValueId out = n.outputs[0];
        int target = -1;
        bool movable = n.op == Op::BroadcastInDim && !is_result[out] && !users[out].empty();
        for (auto u : users[out]) {
          const int gu = plan.group[u];
          if (g.nodes[u].op == Op::Slice || g.nodes[u].op == Op::Reverse) movable = false;  // loads from a full buffer
          if (gu < 0 || gu == static_cast<int>(k) || (target >= 0 && gu != target)) movable = false;
          target = gu;
        }
        if (movable && group_shape[target] == group_shape[k] && groups[k].size() > 1) {
          groups[k].erase(groups[k].begin() + static_cast<std::ptrdiff_t>(m));
          groups[target].insert(groups[target].begin(), i);  // before its users; the group still
          plan.group[i] = target;                            // runs at group_start[target]
          // A group whose first member left runs where its new first member stands (later,
          // so its inputs are still ready).
          if (group_start[k] == i) group_start[k] = groups[k].front();
          continue;
        }
        ++m;
      }
    }
  }

  // 2a. A sum over one contiguous run of axes (trailing, or a middle run such as the
  //     direction axis of a batched Laplacian's sum of squares) of a float member that
  //     nothing else reads joins the member's group as its epilogue (one per group).
  std::vector<std::uint32_t> users_count(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (ValueId v : n.inputs) ++users_count[v];
  for (ValueId v : g.results) ++users_count[v];
  std::vector<int> epilogue_node(groups.size(), -1);
  for (std::uint32_t i = 0; i < N; ++i) {
    const Node& n = g.nodes[i];
    if (n.op != Op::ReduceSum || n.attrs.dims.empty()) continue;
    const ValueId v = n.inputs[0];
    const int k = plan.group[g.producer[v]];
    if (k < 0 || epilogue_node[k] >= 0 || users_count[v] != 1 || !is_float(g.type(v).dtype)) continue;
    const Shape& s = g.type(v).shape;
    // One contiguous run of axes (dims are sorted): trailing, or in the middle.
    bool contiguous = true;
    for (std::size_t j = 1; j < n.attrs.dims.size(); ++j) contiguous = contiguous && n.attrs.dims[j] == n.attrs.dims[j - 1] + 1;
    if (!contiguous || s != group_shape[k] || is_scalar_broadcast(g, g.producer_of(v))) continue;
    if (num_elements(s) == 0) continue;  // empty rows: the plain reduction writes the zeros
    {
      // A middle-axis epilogue parallelises over (outer index, inner chunk) only, to keep
      // each output's order; a large chain with too few of those (a bias gradient's sum
      // over the batch axis) runs faster unfused, its elementwise part over every thread.
      std::int64_t outer = 1, inner = 1;
      for (std::int64_t d = 0; d < n.attrs.dims.front(); ++d) outer *= s[static_cast<std::size_t>(d)];
      for (auto d = static_cast<std::size_t>(n.attrs.dims.back()) + 1; d < s.size(); ++d) inner *= s[d];
      const std::int64_t chunks = (inner + FusedKernel::kTile - 1) / FusedKernel::kTile;
      if (inner > 1 && num_elements(s) > 65536 && outer * chunks < 16) continue;
    }
    epilogue_node[k] = static_cast<int>(i);
    plan.group[i] = k;
  }

  // 2. Which member values are read outside their group (or are results): materialised.
  std::vector<bool> used_outside(g.values.size(), false);
  for (std::uint32_t i = 0; i < N; ++i)
    for (ValueId v : g.nodes[i].inputs)
      if (plan.group[g.producer[v]] != plan.group[i] || plan.group[i] < 0) used_outside[v] = true;
  for (ValueId v : g.results) used_outside[v] = true;

  // 3. Keep groups with at least two real ops; lower the others back to single nodes.
  std::vector<int> renumber(groups.size(), -1);
  for (std::size_t k = 0; k < groups.size(); ++k) {
    int real = 0;
    for (auto i : groups[k]) real += !is_scalar_broadcast(g, g.nodes[i]);
    real += epilogue_node[k] >= 0;
    if (real >= 2) {
      renumber[k] = static_cast<int>(plan.kernels.size());
      plan.kernels.push_back(nullptr);
      plan.first_node.push_back(group_start[k]);
    }
  }
  for (auto& gi : plan.group) gi = gi >= 0 ? renumber[gi] : -1;

  // 4. Micro-ops with scratch slots assigned by liveness inside the group.
  for (std::size_t k = 0; k < groups.size(); ++k) {
    if (renumber[k] < 0) continue;
    auto kernel = std::make_shared<FusedKernel>();
    kernel->shape = group_shape[k];
    kernel->n = num_elements(kernel->shape);
    const int gid = renumber[k];
    std::vector<int> last_use_in_group(g.values.size(), -1);
    for (std::size_t m = 0; m < groups[k].size(); ++m)
      for (ValueId v : g.nodes[groups[k][m]].inputs) last_use_in_group[v] = static_cast<int>(m);
    std::vector<FusedKernel::Source> where(g.values.size());
    std::vector<bool> known(g.values.size(), false);
    struct FreeSlot {
      int slot;
      int freed_at;      // the micro-op whose operand released it
      std::size_t elem;  // element size of the value it held
    };
    std::vector<FreeSlot> free_slots;
    auto add_input = [&](ValueId v) {
      if (std::find(kernel->inputs.begin(), kernel->inputs.end(), v) == kernel->inputs.end()) kernel->inputs.push_back(v);
    };
    for (std::size_t m = 0; m < groups[k].size(); ++m) {
      const Node& n = g.nodes[groups[k][m]];
      const ValueId out = n.outputs[0];
      if (epilogue_node[k] == static_cast<int>(groups[k][m])) continue;  // added after the loop
      // A broadcast of a scalar (a one-element value, or a member or outside value that is
      // itself a broadcast scalar) reads that scalar for every index.
      std::optional<ValueId> scalar_root;
      if (n.op == Op::BroadcastInDim) {
        const ValueId src = n.inputs[0];
        if (known[src] && where[src].kind == FusedKernel::Source::Scalar) scalar_root = where[src].value;
        else if (!known[src] && is_scalar_broadcast(g, g.producer_of(src))) scalar_root = g.producer_of(src).inputs[0];
        else if (num_elements(g.type(src).shape) == 1) scalar_root = src;
      }
      if (scalar_root) {
        add_input(*scalar_root);
        where[out] = {FusedKernel::Source::Scalar, *scalar_root, -1};
        known[out] = true;
        if (used_outside[out]) {
          // Materialise it with a load.
          FusedKernel::MicroOp load;
          load.op = Op::BroadcastInDim;
          load.in_dtype = load.out_dtype = g.type(out).dtype;
          load.srcs = {{FusedKernel::Source::Full, *scalar_root, -1}};
          load.load_strides.assign(kernel->shape.size(), 0);
          load.out = out;
          merge_axes(kernel->shape, load.load_strides, load.copy_shape, load.copy_strides);
          kernel->ops.push_back(std::move(load));
          kernel->outputs.push_back(out);
        }
        continue;
      }
      FusedKernel::MicroOp op;
      op.op = n.op;
      op.out = out;
      op.out_dtype = g.type(out).dtype;
      op.in_dtype = g.type(n.inputs[n.op == Op::Select ? 1 : 0]).dtype;
      for (ValueId v : n.inputs) {
        const Node& producer = g.producer_of(v);
        if (known[v]) {
          op.srcs.push_back(where[v]);
        } else if (is_scalar_broadcast(g, producer)) {
          // A broadcast scalar made outside the group (possibly never materialised: the
          // executor passes such broadcasts through as their one element): read the scalar.
          add_input(producer.inputs[0]);
          op.srcs.push_back({FusedKernel::Source::Scalar, producer.inputs[0], -1});
        } else {
          add_input(v);
          const bool scalar = num_elements(g.type(v).shape) == 1 && kernel->n != 1;
          op.srcs.push_back({scalar ? FusedKernel::Source::Scalar : FusedKernel::Source::Full, v, -1});
        }
      }
      if (n.op == Op::BroadcastInDim) {
        op.load_strides = broadcast_strides(kernel->shape, g.type(n.inputs[0]).shape, n.attrs.dims);
      } else if (n.op == Op::Slice) {
        const auto src_strides = row_major_strides(g.type(n.inputs[0]).shape);
        op.load_strides.resize(src_strides.size());
        for (std::size_t a = 0; a < src_strides.size(); ++a) {
          op.load_strides[a] = src_strides[a] * n.attrs.strides[a];
          op.load_offset += n.attrs.starts[a] * src_strides[a];
        }
        op.srcs.back().kind = FusedKernel::Source::Full;  // the whole operand, never its scalar
      } else if (n.op == Op::Reverse) {  // from the far end of each reversed axis, stepping back
        const Shape& xs = g.type(n.inputs[0]).shape;
        const auto src_strides = row_major_strides(xs);
        op.load_strides.assign(src_strides.begin(), src_strides.end());
        for (auto a : n.attrs.dims) {
          const auto ax = static_cast<std::size_t>(a);
          op.load_offset += (xs[ax] - 1) * src_strides[ax];
          op.load_strides[ax] = -src_strides[ax];
        }
        op.srcs.back().kind = FusedKernel::Source::Full;
      }
      if (n.op == Op::BroadcastInDim || n.op == Op::Slice || n.op == Op::Reverse)
        merge_axes(kernel->shape, op.load_strides, op.copy_shape, op.copy_strides);
      // Release the slots of operands whose last use in the group is this op.
      for (ValueId v : n.inputs) {
        if (known[v] && where[v].kind == FusedKernel::Source::Slot && last_use_in_group[v] == static_cast<int>(m)) {
          const int slot = where[v].slot;
          if (std::none_of(free_slots.begin(), free_slots.end(), [&](const FreeSlot& f) { return f.slot == slot; }))
            free_slots.push_back({slot, static_cast<int>(m), itemsize(g.type(v).dtype)});
        }
      }
      if (used_outside[out]) {
        kernel->outputs.push_back(out);
        where[out] = {FusedKernel::Source::Materialized, out, -1};
      } else {
        // A slot freed by an earlier op is free; one freed by this op's own operand may be
        // written in place only when the result's elements are no wider than the operand's
        // (kernels read element i before writing it, so result i never overwrites an
        // operand element that is still to be read).
        const std::size_t out_elem = itemsize(op.out_dtype);
        auto reusable = std::find_if(free_slots.rbegin(), free_slots.rend(), [&](const FreeSlot& f) {
          return f.freed_at < static_cast<int>(m) || f.elem >= out_elem;
        });
        int slot;
        if (reusable != free_slots.rend()) {
          slot = reusable->slot;
          free_slots.erase(std::next(reusable).base());
        } else {
          slot = kernel->num_slots++;
        }
        op.slot = slot;
        where[out] = {FusedKernel::Source::Slot, out, slot};
      }
      known[out] = true;
      kernel->ops.push_back(std::move(op));
    }
    if (epilogue_node[k] >= 0) {
      const Node& r = g.nodes[epilogue_node[k]];
      std::int64_t row = 1, inner = 1;
      for (auto d : r.attrs.dims) row *= kernel->shape[d];
      for (auto d = static_cast<std::size_t>(r.attrs.dims.back()) + 1; d < kernel->shape.size(); ++d) inner *= kernel->shape[d];
      kernel->epilogue = FusedKernel::Epilogue{r.inputs[0], r.outputs[0], row, inner};
    }
    plan.kernels[gid] = std::move(kernel);
  }
  return plan;
}

}  // namespace qb::cpu
