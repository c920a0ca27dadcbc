#include "quabla/backends/cpu/executable.h"
#include "quabla/runtime/host_call.h"
#include "quabla/backends/cpu/cholesky_fold.h"
#include "quabla/backends/cpu/svd_values_fold.h"
#include "quabla/transforms/lower_complex.h"
#include "quabla/transforms/lower_narrow.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/backends/cpu/scalar_loop.h"
#include "quabla/ir/errors.h"

namespace qb::cpu {

namespace {

bool all_uses_elementwise(const Graph& g, const std::vector<std::vector<std::uint32_t>>& users, ValueId v) {
  if (std::find(g.results.begin(), g.results.end(), v) != g.results.end()) return false;
  for (auto u : users[v])
    if (!is_elementwise(g.nodes[u].op)) return false;
  return true;
}

}  // namespace

namespace {

// Moves axis k to the end, the others in order ([0..k-1, k+1..r-1, k]): k, or -1.
std::int64_t moved_to_end(const Node& n) {
  if (n.op != Op::Transpose) return -1;
  const auto& p = n.attrs.dims;
  const auto r = static_cast<std::int64_t>(p.size());
  if (r < 2 || p.back() == r - 1) return -1;
  const std::int64_t k = p.back();
  for (std::int64_t i = 0; i < r - 1; ++i)
    if (p[static_cast<std::size_t>(i)] != (i < k ? i : i + 1)) return -1;
  return k;
}

// Moves the last axis to position k, the others in order ([0..k-1, r-1, k..r-2]): k, or -1.
std::int64_t moved_from_end(const Node& n) {
  if (n.op != Op::Transpose) return -1;
  const auto& p = n.attrs.dims;
  const auto r = static_cast<std::int64_t>(p.size());
  if (r < 2) return -1;
  std::int64_t k = -1;
  for (std::int64_t i = 0; i < r; ++i)
    if (p[static_cast<std::size_t>(i)] == r - 1) k = i;
  if (k < 0 || k == r - 1) return -1;
  for (std::int64_t i = 0; i < r; ++i) {
    const std::int64_t want = i < k ? i : i == k ? r - 1 : i - 1;
    if (p[static_cast<std::size_t>(i)] != want) return -1;
  }
  return k;
}

std::int64_t product_after(const Shape& s, std::int64_t k) {
  std::int64_t p = 1;
  for (std::size_t i = static_cast<std::size_t>(k) + 1; i < s.size(); ++i) p *= s[i];
  return p;
}

}  // namespace

// A transform along a non-last axis is moveaxis, fft along the last axis, moveaxis back
// (python/quabla/fft.py): the fft reads the first transpose's operand and writes the
// second's layout directly (kernels.h: fft's in_inner and out_inner), the transposes being
// views. Only where the transposed values have no other reader and are not results.
Executable::StridedFfts Executable::strided_ffts(const Graph& g, const Users& users) {
  StridedFfts s;
  s.view.assign(g.nodes.size(), false);
  s.in_inner.assign(g.nodes.size(), 1);
  s.out_inner.assign(g.nodes.size(), 1);
  auto is_result = [&](ValueId v) { return std::find(g.results.begin(), g.results.end(), v) != g.results.end(); };
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != Op::Fft) continue;
    const bool planar = (n.attrs.mode & 2) == 0;
    const ValueId x = n.inputs[0];
    const std::uint32_t p = g.producer[x];
    const std::int64_t k = moved_to_end(g.nodes[p]);
    // (not a transpose an earlier fft already writes through: its value is then laid out as its type says)
    if (k >= (planar ? 1 : 0) && users[x].size() == 1 && !is_result(x) && !s.view[p]) {
      s.view[p] = true;
      s.in_inner[i] = product_after(g.type(g.nodes[p].inputs[0]).shape, k);
    }
    const ValueId y = n.outputs[0];
    if (users[y].size() == 1 && !is_result(y)) {
      const std::uint32_t q = users[y][0];
      const std::int64_t kq = moved_from_end(g.nodes[q]);
      if (kq >= 1 && !is_result(g.nodes[q].outputs[0])) {
        s.view[q] = true;
        s.out_inner[i] = product_after(g.type(g.nodes[q].outputs[0]).shape, kq);
      }
    }
  }
  return s;
}

Executable::Executable(std::shared_ptr<const Graph> graph)
    : graph_(fold_svd_values_only(fold_symmetrized_cholesky(lower_narrow(lower_complex(graph))))),
      interface_(has_complex(*graph) ? graph : graph_) {
  const Graph& g = *graph_;
  const FusionPlan fusion = plan_fusion(g, /*for_cpu=*/true);
  std::vector<std::vector<std::uint32_t>> users(g.values.size());
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i)
    for (auto v : g.nodes[i].inputs) users[v].push_back(i);

  const StridedFfts strided = strided_ffts(g, users);

  // Steps: constants first (fused kernels may read a constant defined after their first
  // member), then nodes in order, each fused kernel where its first member stands.
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op == Op::Constant) steps_.push_back(Step{i, nullptr, {}, {}, false, {}});
  std::vector<bool> is_scalar_value(g.values.size(), false), is_trans_view(g.values.size(), false);
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op == Op::Parameter || n.op == Op::Constant) continue;
    if (const int k = fusion.group[i]; k >= 0) {
      if (fusion.first_node[k] == i) steps_.push_back(Step{i, fusion.kernels[k], {}, {}, false, {}});
      continue;
    }
    Step s = plain_step(g, users, i, is_scalar_value, is_trans_view);
    s.fft_view = strided.view[i];
    s.fft_in_inner = strided.in_inner[i];
    s.fft_out_inner = strided.out_inner[i];
    if (n.op == Op::CustomVjpLin) {
      throw ValueError("can't apply forward-mode differentiation (jvp, jacfwd, hessian's inner jacfwd) to a "
                       "qb.custom_vjp function; use reverse mode (grad, vjp, jacrev), or give the function a "
                       "custom_jvp rule instead");
    }
    // Custom rules' regions are never run (the transforms inline them): only the body is compiled.
    const std::size_t compiled = n.op == Op::CustomJvp || n.op == Op::CustomVjp || n.op == Op::LinearSolve ? 1 : n.regions.size();
    for (std::size_t k = 0; k < compiled; ++k) s.regions.push_back(std::make_shared<const Executable>(n.regions[k]));
    // Loop bodies over small values also get their scalar form (scalar_loop.h).
    if (n.op == Op::Scan || n.op == Op::While) {
      // The carries: scan body parameters (index, consts, carries, xs) -> results (carries,
      // ys); while body parameters (consts, carries) -> results (carries).
      const auto nc = static_cast<std::size_t>(n.attrs.num_consts);
      const std::size_t nk = n.op == Op::Scan ? static_cast<std::size_t>(n.attrs.num_carry) : n.inputs.size() - nc;
      const std::size_t first = n.op == Op::Scan ? 1 + nc : nc;
      std::vector<std::pair<std::size_t, std::size_t>> carries;
      for (std::size_t k = 0; k < nk; ++k) carries.emplace_back(first + k, k);
      for (std::size_t r = 0; r < n.regions.size(); ++r) {
        const bool body = n.op == Op::Scan || r == 1;
        s.scalar.push_back(ScalarBody::compile(n.regions[r], body ? std::span(carries) : std::span<const std::pair<std::size_t, std::size_t>>{}));
      }
    }
    steps_.push_back(std::move(s));
  }
  schedule_host_calls();

  // Liveness: release each buffer after the last step that reads it (results are kept).
  std::vector<int> last_use(g.values.size(), -1);
  for (std::size_t si = 0; si < steps_.size(); ++si) {
    const Step& s = steps_[si];
    const auto& reads = s.fused ? s.fused->inputs : g.nodes[s.node].inputs;
    for (auto v : reads) last_use[v] = static_cast<int>(si);
  }
  for (auto v : g.results) last_use[v] = -1;
  for (std::size_t v = 0; v < g.values.size(); ++v)
    if (last_use[v] >= 0) steps_[last_use[v]].release.push_back(static_cast<ValueId>(v));
  compute_stats();
  plan_small(users);
}

// Host calls a run started and has not finished yet, by result (host_call.h).
struct StartedHostCalls {
  std::vector<std::pair<ValueId, HostCallFinish>> calls;

  void add(ValueId v, HostCallFinish finish) {
    if (finish) calls.emplace_back(v, std::move(finish));
  }
  void finish(ValueId v) {
    for (auto it = calls.begin(); it != calls.end(); ++it) {
      if (it->first != v) continue;
      HostCallFinish f = std::move(it->second);
      calls.erase(it);
      f();
      return;
    }
  }
  void finish_all() {
    while (!calls.empty()) finish(calls.front().first);
  }
};

namespace {

// The values a step writes to buffers (a fused kernel's materialised members and sum).
std::vector<ValueId> written_by(const FusedKernel* fused, const Node& n) {
  if (!fused) return n.outputs;
  std::vector<ValueId> out = fused->outputs;
  if (fused->epilogue) out.push_back(fused->epilogue->out);
  return out;
}

}  // namespace

// Host calls start as early as their operands allow: each right after the step that writes
// its last operand, those after one step in program order, and calls run for their effect
// (qb.debug) in program order among themselves. Each is waited for by the first step that
// reads its result. A collective that the handler runs on the communication thread
// (qb.distributed) then overlaps with what the program computes meanwhile: the all-reduce of
// one layer's gradient with the backward pass through the layers below it. The order depends
// on the graph only, so every rank of a job running one program issues its collectives in
// one order, as MPI requires.
void Executable::schedule_host_calls() {
  const Graph& g = *graph_;
  std::vector<int> writer(g.values.size(), -1);  // original step index writing each value
  std::vector<int> anchor(steps_.size(), -2);    // host calls: the step they follow (-1: the start)
  int effect_anchor = -1;
  bool any = false;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    const Node& n = g.nodes[s.node];
    if (!s.fused && n.op == Op::HostCall) {
      const bool effect = has_effect(n);
      int a = effect ? effect_anchor : -1;
      for (ValueId v : n.inputs) {
        const int w = writer[v];
        if (w >= 0) a = std::max(a, anchor[w] >= -1 ? anchor[w] : w);
      }
      anchor[i] = a;
      if (effect) effect_anchor = a;
      any = true;
    }
    for (ValueId v : written_by(s.fused.get(), n)) writer[v] = static_cast<int>(i);
    for (const auto& r : s.regions) has_host_calls_ = has_host_calls_ || r->has_host_calls();
  }
  has_host_calls_ = has_host_calls_ || any;
  if (!any) return;
  std::vector<std::vector<std::size_t>> calls_after(steps_.size() + 1);  // by anchor + 1, in program order
  for (std::size_t j = 0; j < steps_.size(); ++j)
    if (anchor[j] >= -1) calls_after[static_cast<std::size_t>(anchor[j] + 1)].push_back(j);
  std::vector<Step> order;
  order.reserve(steps_.size());
  for (std::size_t j : calls_after[0]) order.push_back(std::move(steps_[j]));
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    if (anchor[i] >= -1) continue;
    order.push_back(std::move(steps_[i]));
    for (std::size_t j : calls_after[i + 1]) order.push_back(std::move(steps_[j]));
  }
  steps_ = std::move(order);
  // Waits: the first reader of each host call's result (a result nothing reads is finished
  // when the run ends).
  std::vector<bool> started(g.values.size(), false);
  for (Step& s : steps_) {
    const Node& n = g.nodes[s.node];
    const auto& reads = s.fused ? s.fused->inputs : n.inputs;
    for (ValueId v : reads) {
      if (started[v]) {
        s.waits.push_back(v);
        started[v] = false;
      }
    }
    if (!s.fused && n.op == Op::HostCall) started[n.outputs[0]] = true;
  }
}

const std::byte* Executable::locate(const Location& l, std::span<const std::byte* const> params, const std::byte* arena) {
  switch (l.kind) {
    case Location::Param: return params[l.index] + l.offset;
    case Location::Arena: return arena + l.offset;
    case Location::Const: return l.data + l.offset;
  }
  return nullptr;
}

static bool swaps_last_two_axes(const Node& n) {
  if (n.op != Op::Transpose || n.attrs.dims.size() < 2) return false;
  const auto r = n.attrs.dims.size();
  for (std::size_t i = 0; i + 2 < r; ++i)
    if (n.attrs.dims[i] != static_cast<std::int64_t>(i)) return false;
  return n.attrs.dims[r - 2] == static_cast<std::int64_t>(r - 1) && n.attrs.dims[r - 1] == static_cast<std::int64_t>(r - 2);
}

Executable::Step Executable::plain_step(const Graph& g, const Users& users, std::uint32_t i,
                                        std::vector<bool>& is_scalar_value, std::vector<bool>& is_trans_view) {
  const Node& n = g.nodes[i];
  Step s{i, nullptr, {}, {}, false, {}};
  if (n.op == Op::BroadcastInDim && num_elements(g.type(n.inputs[0]).shape) == 1 &&
      all_uses_elementwise(g, users, n.outputs[0])) {
    s.virtual_broadcast = true;
    is_scalar_value[n.outputs[0]] = true;
  }
  if (swaps_last_two_axes(n) &&
      std::find(g.results.begin(), g.results.end(), n.outputs[0]) == g.results.end() &&
      std::all_of(users[n.outputs[0]].begin(), users[n.outputs[0]].end(),
                  [&](std::uint32_t u) { return g.nodes[u].op == Op::MatMul; })) {
    s.virtual_transpose = true;
    is_trans_view[n.outputs[0]] = true;
  }
  if (contiguous_slice_offset(g, n) >= 0) s.virtual_slice = true;
  if (n.op == Op::MatMul) {
    s.trans_a = is_trans_view[n.inputs[0]];
    s.trans_b = is_trans_view[n.inputs[1]];
  }
  if (is_elementwise(n.op)) {
    const auto out_n = num_elements(g.type(n.outputs[0]).shape);
    for (auto v : n.inputs) s.scalar_operand.push_back(out_n != 1 && (is_scalar_value[v] || num_elements(g.type(v).shape) == 1));
  }
  return s;
}

void Executable::plan_small(const Users& users) {
  // Small programs (loop bodies over a few values) also get a plan without buffers: every
  // value at a fixed offset of one arena, unfused steps (bitwise equal to fused ones).
  constexpr std::int64_t kMaxValueBytes = 16 * 1024, kMaxArenaBytes = 256 * 1024;
  const Graph& g = *graph_;
  std::vector<Location> loc(g.values.size());
  std::vector<Step> steps;
  std::vector<bool> is_scalar_value(g.values.size(), false), is_trans_view(g.values.size(), false);
  std::size_t arena = 0;
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (has_regions(n.op)) return;
    for (auto v : n.outputs) {
      const auto bytes = num_elements(g.type(v).shape) * static_cast<std::int64_t>(itemsize(g.type(v).dtype));
      if (bytes > kMaxValueBytes) return;
    }
    if (n.op == Op::Parameter) {
      loc[n.outputs[0]] = {Location::Param, static_cast<std::size_t>(n.attrs.axis), 0, nullptr};
      continue;
    }
    if (n.op == Op::Constant) {
      loc[n.outputs[0]] = {Location::Const, 0, 0, n.attrs.literal->data->data()};
      continue;
    }
    Step s = plain_step(g, users, i, is_scalar_value, is_trans_view);
    if (n.op == Op::Reshape || s.virtual_broadcast || s.virtual_transpose) {
      loc[n.outputs[0]] = loc[n.inputs[0]];
    } else if (s.virtual_slice) {
      loc[n.outputs[0]] = loc[n.inputs[0]];
      loc[n.outputs[0]].offset += static_cast<std::size_t>(contiguous_slice_offset(g, n)) * itemsize(g.type(n.outputs[0]).dtype);
    } else {
      const ValueType& t = g.type(n.outputs[0]);
      const auto bytes = static_cast<std::size_t>(num_elements(t.shape)) * itemsize(t.dtype);
      loc[n.outputs[0]] = {Location::Arena, 0, arena, nullptr};
      arena += (std::max<std::size_t>(bytes, 1) + Buffer::kAlignment - 1) / Buffer::kAlignment * Buffer::kAlignment;
      if (arena > static_cast<std::size_t>(kMaxArenaBytes)) return;
    }
    steps.push_back(std::move(s));
  }
  small_ = true;
  for (const Step& st : steps) {
    DirectElementwise d;
    const Node& n = g.nodes[st.node];
    if (is_elementwise(n.op) && loc[n.outputs[0]].kind == Location::Arena && n.inputs.size() <= 3) {
      d.op = n.op;
      d.in_dtype = g.type(n.inputs[n.op == Op::Select ? 1 : 0]).dtype;
      d.out_dtype = g.type(n.outputs[0]).dtype;
      d.n = num_elements(g.type(n.outputs[0]).shape);
      d.out_offset = loc[n.outputs[0]].offset;
      d.num_inputs = static_cast<std::uint8_t>(n.inputs.size());
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        d.in[k] = loc[n.inputs[k]];
        d.scalar[k] = st.scalar_operand[k];
      }
    }
    direct_.push_back(d);
  }
  loc_ = std::move(loc);
  small_steps_ = std::move(steps);
  arena_bytes_ = std::max<std::size_t>(arena, 1);
}


std::string Executable::plan_text() const {
  const Graph& g = *graph_;
  std::string s = "plan(";
  for (std::size_t i = 0; i < g.params.size(); ++i) s += (i ? ", %" : "%") + std::to_string(g.params[i]) + ": " + g.type(g.params[i]).str();
  s += ") {\n";
  int kernel = 0;
  for (const Step& st : steps_) {
    if (st.fused) {
      s += "  kernel " + std::to_string(kernel++) + ": fused " + shape_str(st.fused->shape) + " (" +
           std::to_string(st.fused->ops.size()) + " ops, " + std::to_string(st.fused->num_slots) + " scratch tiles) -> ";
      for (std::size_t i = 0; i < st.fused->outputs.size(); ++i) s += (i ? ", %" : "%") + std::to_string(st.fused->outputs[i]);
      if (st.fused->epilogue) s += std::string(st.fused->outputs.empty() ? "" : ", ") + "%" + std::to_string(st.fused->epilogue->out);
      s += "\n";
      for (const auto& m : st.fused->ops) {
        const Node& member = g.producer_of(m.out);
        s += "      " + print_node(g, member) + (m.slot >= 0 ? "  [tile]" : "") + "\n";
      }
      if (st.fused->epilogue) s += "      " + print_node(g, g.producer_of(st.fused->epilogue->out)) + "  [epilogue]\n";
      continue;
    }
    const Node& n = g.nodes[st.node];
    const bool view = n.op == Op::Constant || n.op == Op::Reshape || st.virtual_broadcast || st.virtual_transpose ||
                      st.virtual_slice || st.fft_view;
    s += view ? "  view:     " : "  kernel " + std::to_string(kernel++) + ": ";
    s += print_node(g, n) + "\n";
  }
  s += "  return";
  for (std::size_t i = 0; i < g.results.size(); ++i) s += (i ? ", %" : " %") + std::to_string(g.results[i]);
  return s + "\n}\n";
}

void Executable::compute_stats() {
  const Graph& g = *graph_;
  for (const Node& n : g.nodes) {
    if (n.op != Op::MatMul) continue;
    const Shape& x = g.type(n.inputs[0]).shape;
    const Shape& out = g.type(n.outputs[0]).shape;
    stats_.matmul_flops += 2 * num_elements(out) * x.back();
  }
  auto bytes = [&](ValueId v) { return num_elements(g.type(v).shape) * static_cast<std::int64_t>(itemsize(g.type(v).dtype)); };
  std::int64_t live = 0;
  for (auto p : g.params) live += bytes(p);
  stats_.peak_bytes = live;
  // Values that own a buffer (not views of another value's storage).
  std::vector<bool> owns(g.values.size(), false);
  for (const Step& s : steps_) {
    const Node& n = g.nodes[s.node];
    if (s.fused) {
      ++stats_.kernels;
      std::vector<ValueId> outs = s.fused->outputs;
      if (s.fused->epilogue) outs.push_back(s.fused->epilogue->out);
      for (auto v : outs) {
        owns[v] = true;
        ++stats_.buffers;
        live += bytes(v);
      }
      // One tile set of scratch per fused kernel while it runs.
      stats_.peak_bytes = std::max(stats_.peak_bytes, live + s.fused->num_slots * FusedKernel::kSlotBytes);
    } else if (!(n.op == Op::Constant || n.op == Op::Reshape || s.virtual_broadcast || s.virtual_transpose ||
                 s.virtual_slice || s.fft_view)) {
      ++stats_.kernels;
      // A region runs its own plan on top of what is live here: its peak, less its
      // parameters (this plan's values, already counted).
      if (n.op == Op::Scan || n.op == Op::While) {
        ++stats_.loops;
        if (!s.scalar.empty() && std::all_of(s.scalar.begin(), s.scalar.end(), [](const auto& b) { return b != nullptr; }))
          ++stats_.scalar_loops;
      }
      for (const auto& r : s.regions) {
        stats_.loops += r->stats().loops;
        stats_.scalar_loops += r->stats().scalar_loops;
        std::int64_t inner = r->stats().peak_bytes;
        for (auto p : r->graph().params) inner -= num_elements(r->graph().type(p).shape) *
                                                   static_cast<std::int64_t>(itemsize(r->graph().type(p).dtype));
        stats_.peak_bytes = std::max(stats_.peak_bytes, live + inner);
      }
      for (auto v : n.outputs) {
        owns[v] = true;
        ++stats_.buffers;
        live += bytes(v);
      }
      stats_.peak_bytes = std::max(stats_.peak_bytes, live);
    }
    for (auto v : s.release)
      if (owns[v]) live -= bytes(v);
  }
}

std::vector<BufferPtr> Executable::run(std::span<const BufferPtr> args) const {
  return run_owned(std::vector<BufferPtr>(args.begin(), args.end()));
}

std::vector<BufferPtr> Executable::run_owned(std::vector<BufferPtr> args) const {
  const Graph& g = *graph_;
  if (args.size() != g.params.size()) {
    throw InternalError("cpu::Executable::run: expected " + std::to_string(g.params.size()) + " arguments, got " +
                        std::to_string(args.size()));
  }
  std::vector<BufferPtr> env(g.values.size());
  for (std::size_t i = 0; i < args.size(); ++i) env[g.params[i]] = std::move(args[i]);
  StartedHostCalls started;
  for (const Step& s : steps_) {
    for (ValueId v : s.waits) started.finish(v);
    if (s.fused) s.fused->run(env, g);
    else run_step(s, env, &started);
    for (auto v : s.release) env[v].reset();
  }
  started.finish_all();
  std::vector<BufferPtr> out;
  out.reserve(g.results.size());
  for (auto v : g.results) out.push_back(env[v]);
  return out;
}

namespace {

// Where a node's operands and results live: EnvFrame in buffers of an environment (the
// general plan), ArenaFrame at fixed offsets of one arena (small plans, allocation-free).
template <class RunRegion>
struct EnvFrame {
  const Graph& g;
  std::vector<BufferPtr>& env;
  const std::vector<ValueId>& release;
  const RunRegion& run_region;  // a lambda: no std::function (and no allocation) per step
  StartedHostCalls* started;

  const std::byte* in(ValueId v) const { return env[v]->data(); }
  std::byte* out(ValueId v, std::size_t nbytes) {
    auto b = Buffer::allocate(nbytes);
    env[v] = b;
    return b->data();
  }
  void constant(ValueId v, const BufferPtr& data) { env[v] = data; }
  void alias(ValueId out, ValueId in) { env[out] = env[in]; }
  // bytes [offset, offset + nbytes) of in's storage, which the view keeps alive
  void alias_range(ValueId out, ValueId in, std::size_t offset, std::size_t nbytes) {
    const BufferPtr& whole = env[in];
    env[out] = Buffer::wrap(whole->data() + offset, nbytes, whole);
  }
  void region() { run_region(); }
  void host_call_started(ValueId v, HostCallFinish finish) { started->add(v, std::move(finish)); }
  // An operand of the output's size that dies here and that nothing else holds (no array,
  // view or constant) becomes the output; each element is read before it is written, so
  // the kernel may overwrite it.
  std::byte* in_place(const Node& n, const std::vector<bool>& scalar_operand, std::size_t out_bytes) {
    const ValueType& ot = g.type(n.outputs[0]);
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const ValueId v = n.inputs[i];
      BufferPtr& buf = env[v];
      if (!scalar_operand[i] && buf.use_count() == 1 && !buf->external() && buf->nbytes() == out_bytes &&
          itemsize(g.type(v).dtype) == itemsize(ot.dtype) &&
          std::find(release.begin(), release.end(), v) != release.end()) {
        env[n.outputs[0]] = buf;
        return buf->data();
      }
    }
    return nullptr;
  }
};

struct ArenaFrame {
  const std::vector<Executable::Location>& loc;
  std::span<const std::byte* const> params;
  std::byte* arena;

  const std::byte* in(ValueId v) const { return Executable::locate(loc[v], params, arena); }
  std::byte* out(ValueId v, std::size_t) { return arena + loc[v].offset; }
  void constant(ValueId, const BufferPtr&) {}
  void alias(ValueId, ValueId) {}  // locations were resolved when the plan was built
  void alias_range(ValueId, ValueId, std::size_t, std::size_t) {}
  void region() { throw InternalError("cpu::Executable: a small plan holds no regions"); }
  void host_call_started(ValueId, const HostCallFinish& finish) {
    if (finish) finish();
  }
  std::byte* in_place(const Node&, const std::vector<bool>&, std::size_t) { return nullptr; }
};

}  // namespace

namespace {

// Per-axis integers for a kernel call, on the stack up to rank 8 (loop bodies run these per
// step; a heap vector per call showed in profiles).
class AxisInts {
 public:
  explicit AxisInts(std::size_t n, std::int64_t fill = 0) : n_(n) {
    if (n_ > kInline) heap_.assign(n_, fill);
    else inline_.fill(fill);
  }
  std::int64_t& operator[](std::size_t i) { return data()[i]; }
  std::int64_t* data() { return n_ > kInline ? heap_.data() : inline_.data(); }
  std::span<const std::int64_t> span() { return {data(), n_}; }
  std::size_t size() const { return n_; }

 private:
  static constexpr std::size_t kInline = 8;
  std::size_t n_;
  std::array<std::int64_t, kInline> inline_{};
  std::vector<std::int64_t> heap_;
};

AxisInts row_major(std::span<const std::int64_t> shape) {
  AxisInts s(shape.size());
  std::int64_t acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

}  // namespace

struct NodeFlags {
  const std::vector<bool>& scalar_operand;
  bool view;              // the output is (in) the operand's storage (virtual broadcast/transpose/slice)
  bool trans_a, trans_b;  // matmul operands stored transposed
  std::int64_t fft_in_inner = 1, fft_out_inner = 1;  // fft rows read/written strided (strided_ffts)
};

template <class Frame>
void run_node(const Graph& g, const Node& n, const NodeFlags& flags, Frame& f) {
  const std::vector<bool>& scalar_operand = flags.scalar_operand;
  if (has_regions(n.op)) return f.region();  // may have no outputs at all
  const ValueType& ot = g.type(n.outputs[0]);
  auto in = [&](std::size_t i) -> const std::byte* { return f.in(n.inputs[i]); };
  auto in_type = [&](std::size_t i) -> const ValueType& { return g.type(n.inputs[i]); };
  auto alloc = [&]() {
    return f.out(n.outputs[0], static_cast<std::size_t>(num_elements(ot.shape)) * itemsize(ot.dtype));
  };
  // Zero-element values (the checkpoints and tapes of empty loops, and what vmap makes of
  // them) have nothing to compute: every output gets its empty buffer and no kernel runs,
  // so none divides by a zero extent. A non-empty result of an empty operand (a reduction
  // over an empty axis) still runs its kernel, which fills the identity.
  if (n.op != Op::Parameter && n.op != Op::Constant && num_elements(ot.shape) == 0) {
    for (ValueId v : n.outputs) f.out(v, 0);
    return;
  }
  // A complex matrix's lowered form (ops.def, kLinalgPlanar): planar operands, LAPACK's
  // complex routines.
  auto planar_linalg = [&] {
    const auto& as = in_type(0).shape;
    const std::size_t r = as.size();
    const std::int64_t batch = num_elements(std::span(as).subspan(1, r - 3));
    if (n.op == Op::Solve || n.op == Op::TriangularSolve) {
      return complex_solve(n.op, ot.dtype, in(0), in(1), batch, as[r - 1], in_type(1).shape.back(),
                           n.attrs.mode & ~kLinalgPlanar, alloc());
    }
    return complex_factorization(n.op, ot.dtype, in(0), batch, as[r - 2], as[r - 1], n.attrs.mode, alloc());
  };

  switch (n.op) {
    case Op::Parameter:
      return;
    case Op::Constant:
      f.constant(n.outputs[0], n.attrs.literal->data);
      return;

    case Op::Neg: case Op::Abs: case Op::Sign: case Op::Floor: case Op::Ceil: case Op::Round:
    case Op::Sqrt: case Op::Cbrt: case Op::Exp: case Op::Exp2: case Op::Expm1: case Op::Log:
    case Op::Log2: case Op::Log10: case Op::Log1p: case Op::Sin: case Op::Cos: case Op::Tan:
    case Op::Asin: case Op::Acos: case Op::Atan: case Op::Sinh: case Op::Cosh: case Op::Tanh:
    case Op::Asinh: case Op::Acosh: case Op::Atanh: case Op::Erf: case Op::Erfc: case Op::ErfInv:
    case Op::Logistic: case Op::Softplus: case Op::Silu: case Op::GeluTanh: case Op::StopGradient: case Op::IsNan: case Op::IsInf:
    case Op::IsFinite: case Op::Not: case Op::Add: case Op::Sub: case Op::Mul: case Op::Div:
    case Op::Pow: case Op::Atan2: case Op::Hypot: case Op::Rem: case Op::Max: case Op::Min:
    case Op::LogAddExp: case Op::And: case Op::Or: case Op::Xor: case Op::ShiftLeft: case Op::ShiftRight:
    case Op::Lt: case Op::Le: case Op::Gt:
    case Op::Ge: case Op::Eq: case Op::Ne: case Op::Select: case Op::Convert: {
      std::array<Operand, 3> op_array{};  // elementwise ops take at most three operands
      for (std::size_t i = 0; i < n.inputs.size(); ++i) op_array[i] = {in(i), scalar_operand[i]};
      const std::span<const Operand> ops(op_array.data(), n.inputs.size());
      // Select's value operands carry the dtype; the predicate is operand 0.
      const DType in_dtype = in_type(n.op == Op::Select ? 1 : 0).dtype;
      // In place where the frame allows it (EnvFrame::in_place).
      const std::size_t out_bytes = static_cast<std::size_t>(num_elements(ot.shape)) * itemsize(ot.dtype);
      std::byte* out = f.in_place(n, scalar_operand, out_bytes);
      if (!out) out = alloc();
      elementwise(n.op, in_dtype, ot.dtype, ops, out, num_elements(ot.shape));
      return;
    }

    case Op::Reshape:
      f.alias(n.outputs[0], n.inputs[0]);  // storage is immutable: a reshape is a view
      return;

    case Op::NamedAxis:
      throw ValueError("a collective over a named axis (lax.psum, pmean, pmax, pmin, all_gather, axis_index, "
                       "ppermute) ran outside the vmap or pmap that names its axis: call it inside "
                       "qb.vmap(f, axis_name=...) or qb.pmap(f, axis_name=...) with that name");
    case Op::HostCall: {  // a Python function on the host (runtime/host_call.h)
      std::vector<const std::byte*> ins;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(in(i));
      f.host_call_started(n.outputs[0], run_host_call(g, n, ins, alloc()));
      return;
    }

    case Op::BroadcastInDim: {
      if (flags.view) {
        f.alias(n.outputs[0], n.inputs[0]);
        return;
      }
      const auto& xs = in_type(0).shape;
      auto x_strides = row_major(xs);
      AxisInts strides(ot.shape.size(), 0);
      for (std::size_t i = 0; i < xs.size(); ++i) strides[n.attrs.dims[i]] = xs[i] == 1 ? 0 : x_strides[i];
      strided_copy(itemsize(ot.dtype), in(0), 0, ot.shape, strides.span(), alloc());
      return;
    }
    case Op::Transpose: {
      if (flags.view) {
        f.alias(n.outputs[0], n.inputs[0]);
        return;
      }
      auto x_strides = row_major(in_type(0).shape);
      AxisInts strides(n.attrs.dims.size());
      for (std::size_t i = 0; i < n.attrs.dims.size(); ++i) strides[i] = x_strides[static_cast<std::size_t>(n.attrs.dims[i])];
      strided_copy(itemsize(ot.dtype), in(0), 0, ot.shape, strides.span(), alloc());
      return;
    }
    case Op::Slice: {
      if (flags.view) {
        const std::size_t elem = itemsize(ot.dtype);
        f.alias_range(n.outputs[0], n.inputs[0], static_cast<std::size_t>(contiguous_slice_offset(g, n)) * elem,
                      static_cast<std::size_t>(num_elements(ot.shape)) * elem);
        return;
      }
      auto x_strides = row_major(in_type(0).shape);
      std::int64_t offset = 0;
      AxisInts strides(x_strides.size());
      for (std::size_t i = 0; i < x_strides.size(); ++i) {
        offset += n.attrs.starts[i] * x_strides[i];
        strides[i] = n.attrs.strides[i] * x_strides[i];
      }
      strided_copy(itemsize(ot.dtype), in(0), offset, ot.shape, strides.span(), alloc());
      return;
    }
    case Op::Pad: {
      const std::size_t elem = itemsize(ot.dtype);
      std::byte* out = alloc();
      const std::int64_t total = num_elements(ot.shape);
      const auto fill = [&](auto word) {  // the pad value, as a word of its size
        std::memcpy(&word, in(1), sizeof word);
        std::fill_n(reinterpret_cast<decltype(word)*>(out), total, word);
      };
      if (elem == 8) fill(std::uint64_t{});
      else if (elem == 4) fill(std::uint32_t{});
      else if (elem == 1) fill(std::uint8_t{});
      else for (std::int64_t i = 0; i < total; ++i) std::copy_n(in(1), elem, out + i * static_cast<std::int64_t>(elem));
      auto out_strides = row_major(ot.shape);
      std::int64_t offset = 0;
      AxisInts strides(out_strides.size());
      for (std::size_t i = 0; i < out_strides.size(); ++i) {
        offset += n.attrs.starts[i] * out_strides[i];
        strides[i] = (n.attrs.strides[i] + 1) * out_strides[i];
      }
      strided_store(elem, in(0), in_type(0).shape, offset, strides.span(), out);
      return;
    }
    case Op::Reverse: {
      auto strides = row_major(ot.shape);
      std::int64_t offset = 0;
      for (auto a : n.attrs.dims) {
        offset += (ot.shape[a] - 1) * strides[a];
        strides[a] = -strides[a];
      }
      strided_copy(itemsize(ot.dtype), in(0), offset, ot.shape, strides.span(), alloc());
      return;
    }
    case Op::Concat: {
      const auto axis = static_cast<std::size_t>(n.attrs.axis);
      std::int64_t outer = 1;
      for (std::size_t i = 0; i < axis; ++i) outer *= ot.shape[i];
      const std::size_t elem = itemsize(ot.dtype);
      const std::size_t out_row = static_cast<std::size_t>(num_elements(ot.shape) / std::max<std::int64_t>(outer, 1)) * elem;
      std::byte* out = alloc();
      const bool one_each = out_row == n.inputs.size() * elem && outer >= 64 &&
                            std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) {
                              return num_elements(g.type(v).shape) == outer;
                            });
      if (one_each) {
        // One element from each input per row (interleaving complex parts): one pass.
        std::vector<const std::byte*> ins;
        for (std::size_t k = 0; k < n.inputs.size(); ++k) ins.push_back(in(k));
        interleave(elem, ins, outer, out);
        return;
      }
      std::size_t col = 0;
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        const std::size_t row = static_cast<std::size_t>(num_elements(in_type(k).shape) / std::max<std::int64_t>(outer, 1)) * elem;
        for (std::int64_t o = 0; o < outer; ++o) std::copy_n(in(k) + o * row, row, out + o * out_row + col);
        col += row;
      }
      return;
    }

    case Op::ReduceSum: case Op::ReduceProd: case Op::ReduceMax: case Op::ReduceMin:
    case Op::ReduceAny: case Op::ReduceAll:
      reduce(n.op, in_type(0).dtype, in(0), in_type(0).shape, n.attrs.dims, alloc());
      return;
    case Op::Cumsum:
      cumsum(ot.dtype, in(0), ot.shape, static_cast<int>(n.attrs.axis), n.attrs.reverse, alloc());
      return;
    case Op::Gather:
      gather(itemsize(ot.dtype), in(0), in_type(0).shape, static_cast<int>(n.attrs.axis), n.attrs.dims, alloc());
      return;
    case Op::ScatterAdd:
      scatter_add(ot.dtype, in(0), in(1), ot.shape, static_cast<int>(n.attrs.axis), n.attrs.dims, alloc());
      return;
    case Op::Take:
      take(itemsize(ot.dtype), in(0), in_type(0).shape, static_cast<int>(n.attrs.axis), in_type(1).dtype, in(1),
           num_elements(in_type(1).shape), n.attrs.mode == 1, alloc());
      return;
    case Op::Scatter:
      scatter(ot.dtype, in(0), ot.shape, static_cast<int>(n.attrs.axis), in_type(1).dtype, in(1),
              num_elements(in_type(1).shape), in(2), static_cast<int>(n.attrs.mode), alloc());
      return;
    case Op::Argsort: {
      const auto& xs = in_type(0).shape;
      argsort(in_type(0).dtype, in(0), num_elements(xs) / xs.back(), xs.back(), n.attrs.mode == 1, ot.dtype, alloc());
      return;
    }
    case Op::SearchSorted: {
      const auto& xs = in_type(0).shape;
      const std::int64_t rows = num_elements(std::span(xs).first(xs.size() - 1));
      searchsorted(in_type(0).dtype, in(0), rows, xs.back(), in(1), in_type(1).shape.back(), n.attrs.mode == 1, ot.dtype,
                   alloc());
      return;
    }
    case Op::Cond: case Op::Scan: case Op::While: case Op::CustomJvp: case Op::CustomVjp: case Op::CustomVjpLin: case Op::Checkpoint: case Op::LinearSolve:
      f.region();
      return;
    case Op::Svd: case Op::Qr: {
      if (n.attrs.mode & kLinalgPlanar) return planar_linalg();
      const auto& as = in_type(0).shape;
      const std::size_t r = as.size();
      const std::int64_t batch = num_elements(std::span(as).first(r - 2));
      if (n.op == Op::Qr) return qr(ot.dtype, in(0), batch, as[r - 2], as[r - 1], (n.attrs.mode & 1) != 0, alloc());
      return svd(ot.dtype, in(0), batch, as[r - 2], as[r - 1], (n.attrs.mode & 1) != 0, alloc(),
                 (n.attrs.mode & kSvdValuesOnly) != 0);
    }
    case Op::Cholesky: case Op::Slogdet: case Op::Eigh: case Op::Lu: case Op::TriangularSolve: case Op::Solve: {
      if (n.attrs.mode & kLinalgPlanar) return planar_linalg();
      const auto& as = in_type(0).shape;
      const std::int64_t dim = as.back(), batch = num_elements(std::span(as).first(as.size() - 2));
      const std::int64_t k = n.inputs.size() > 1 ? in_type(1).shape.back() : 0;
      switch (n.op) {
        case Op::Cholesky: return cholesky(ot.dtype, in(0), batch, dim, alloc(), n.attrs.mode == 1);
        case Op::Slogdet: return slogdet(ot.dtype, in(0), batch, dim, alloc());
        case Op::Eigh: return eigh(ot.dtype, in(0), batch, dim, alloc());
        case Op::Lu: return lu(ot.dtype, in(0), batch, dim, alloc());
        case Op::TriangularSolve:
          return triangular_solve(ot.dtype, in(0), in(1), batch, dim, k, static_cast<int>(n.attrs.mode), alloc());
        default: return solve(ot.dtype, in(0), in(1), batch, dim, k, alloc());
      }
    }
    case Op::Eig: {  // the lowered forms: real [..., n, n] or planar [2, ..., n, n] in, planar out
      const auto& as = in_type(0).shape;
      const bool planar = (n.attrs.mode & 2) != 0;
      const std::int64_t dim = as.back();
      const std::int64_t batch = num_elements(std::span(as).subspan(planar ? 1 : 0, as.size() - 2 - (planar ? 1 : 0)));
      return eig(ot.dtype, in(0), batch, dim, planar, (n.attrs.mode & 1) != 0, alloc());
    }
    case Op::Threefry: {
      const std::int64_t keys = num_elements(in_type(0).shape);
      const std::int64_t count = keys ? num_elements(ot.shape) / (2 * keys) : 0;
      return threefry_blocks(reinterpret_cast<const std::int32_t*>(in(0)), reinterpret_cast<const std::int32_t*>(in(1)),
                             keys, count, reinterpret_cast<std::int32_t*>(alloc()));
    }
    case Op::Fft: {  // the lowered forms: planar [2, ..., n], or real [..., n] (mode bit 1)
      const auto& xs = in_type(0).shape;
      const bool real = (n.attrs.mode & 2) != 0, inverse = (n.attrs.mode & 1) != 0, half = (n.attrs.mode & 4) != 0;
      const std::int64_t len = xs.back();
      const std::int64_t rows = len ? num_elements(xs) / (real ? len : 2 * len) : 0;
      if (real) fft_real(ot.dtype, in(0), rows, len, inverse, half, alloc(), flags.fft_in_inner, flags.fft_out_inner);
      else fft(ot.dtype, in(0), rows, len, inverse, alloc(), flags.fft_in_inner, flags.fft_out_inner);
      return;
    }
    case Op::Real: case Op::Imag: case Op::Conj: case Op::Complex:
      throw InternalError("cpu::Executable: complex values reach the planner unlowered");
    case Op::MatMul: {
      const auto& xs = in_type(0).shape;
      const std::size_t r = xs.size();
      const std::int64_t batch = num_elements(std::span(xs).first(r - 2));
      matmul(ot.dtype, in(0), in(1), alloc(), batch, xs[r - 2], xs[r - 1], ot.shape[r - 1], flags.trans_a, flags.trans_b);
      return;
    }
  }
  throw InternalError("cpu::Executable: unknown op");
}

namespace {

// Operands and outputs at given contiguous locations (the scalar loop's kernel calls).
struct PackedFrame {
  const Node& n;
  std::span<const std::byte* const> ins;
  std::span<std::byte* const> outs;

  const std::byte* in(ValueId v) const {
    for (std::size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] == v) return ins[i];
    throw InternalError("run_node_packed: unknown operand");
  }
  std::byte* out(ValueId v, std::size_t) {
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] == v) return outs[k];
    throw InternalError("run_node_packed: unknown output");
  }
  void constant(ValueId, const BufferPtr&) { throw InternalError("run_node_packed: a constant"); }
  void alias(ValueId, ValueId) { throw InternalError("run_node_packed: a view"); }
  void alias_range(ValueId, ValueId, std::size_t, std::size_t) { throw InternalError("run_node_packed: a view"); }
  void region() { throw InternalError("run_node_packed: a region op"); }
  void host_call_started(ValueId, const HostCallFinish& finish) {
    if (finish) finish();
  }
  std::byte* in_place(const Node&, const std::vector<bool>&, std::size_t) { return nullptr; }
};

}  // namespace

void run_node_packed(const Graph& g, const Node& n, std::span<const std::byte* const> ins,
                     std::span<std::byte* const> outs) {
  static const std::vector<bool> kNoScalars(3, false);
  PackedFrame f{n, ins, outs};
  run_node(g, n, NodeFlags{kNoScalars, false, false, false}, f);
}

void Executable::run_step(const Step& s, std::vector<BufferPtr>& env, StartedHostCalls* started) const {
  const Graph& g = *graph_;
  const auto region = [&] { run_region(s, env); };
  EnvFrame<decltype(region)> f{g, env, s.release, region, started};
  run_node(g, g.nodes[s.node], NodeFlags{s.scalar_operand, s.virtual_broadcast || s.virtual_transpose || s.virtual_slice || s.fft_view, s.trans_a,
                s.trans_b, s.fft_in_inner, s.fft_out_inner}, f);
}

void Executable::run_small(std::span<const std::byte* const> params, std::byte* arena) const {
  const Graph& g = *graph_;
  ArenaFrame f{loc_, params, arena};
  for (std::size_t i = 0; i < small_steps_.size(); ++i) {
    const DirectElementwise& d = direct_[i];
    if (d.op != Op::Parameter) {
      std::array<Operand, 3> ops{};
      for (std::size_t k = 0; k < d.num_inputs; ++k) ops[k] = {locate(d.in[k], params, arena), d.scalar[k]};
      elementwise(d.op, d.in_dtype, d.out_dtype, std::span<const Operand>(ops.data(), d.num_inputs), arena + d.out_offset, d.n);
      continue;
    }
    const Step& s = small_steps_[i];
    run_node(g, g.nodes[s.node], NodeFlags{s.scalar_operand, s.virtual_broadcast || s.virtual_transpose || s.virtual_slice || s.fft_view, s.trans_a,
                s.trans_b, s.fft_in_inner, s.fft_out_inner}, f);
  }
}

const std::byte* Executable::result_data(std::size_t j, std::span<const std::byte* const> params,
                                         const std::byte* arena) const {
  return locate(loc_[graph_->results[j]], params, arena);
}

}  // namespace qb::cpu
