#include "quabla/backends/cpu/scalar_loop.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "quabla/backends/cpu/scalar_loop_ir.h"
#include "quabla/backends/cpu/scalar_math.h"
#include "quabla/backends/cpu/vector_math.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/interrupt.h"

namespace qb::cpu {

ScalarBody::ScalarBody() = default;
ScalarBody::~ScalarBody() = default;

bool ScalarBody::self_contained() const {
  const auto small = [](const Slot& s) { return !s.big; };
  return calls_.empty() && big_constants_.empty() && scratch_bytes_ == 0 &&
         std::all_of(param_slot_.begin(), param_slot_.end(), small) &&
         std::all_of(result_slot_.begin(), result_slot_.end(), small);
}

std::span<const ScalarBody::Instr> ScalarBody::code() const { return code_; }

namespace {

using Regs = std::vector<std::uint32_t>;

// Element copies between registers and packed buffers: memcpy of a constant size per dtype
// width (a move), where a run-time size would call the library for every element.
template <std::size_t N>
void gather_n(std::byte* dst, const Reg* r, std::span<const std::uint32_t> regs) {
  for (std::size_t e = 0; e < regs.size(); ++e) std::memcpy(dst + e * N, &r[regs[e]], N);
}
template <std::size_t N>
void scatter_n(Reg* r, std::span<const std::uint32_t> regs, const std::byte* src) {
  for (std::size_t e = 0; e < regs.size(); ++e) std::memcpy(&r[regs[e]], src + e * N, N);
}
// dst[e] = r[regs[e]] for elements of `item` bytes.
void gather(std::byte* dst, const Reg* r, std::span<const std::uint32_t> regs, std::size_t item) {
  switch (item) {
    case 8: return gather_n<8>(dst, r, regs);
    case 4: return gather_n<4>(dst, r, regs);
    case 2: return gather_n<2>(dst, r, regs);
    default: return gather_n<1>(dst, r, regs);
  }
}
// r[regs[e]] = src[e] for elements of `item` bytes.
void scatter(Reg* r, std::span<const std::uint32_t> regs, const std::byte* src, std::size_t item) {
  switch (item) {
    case 8: return scatter_n<8>(r, regs, src);
    case 4: return scatter_n<4>(r, regs, src);
    case 2: return scatter_n<2>(r, regs, src);
    default: return scatter_n<1>(r, regs, src);
  }
}

std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size());
  std::int64_t acc = 1;
  for (std::size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

// The multi-index of flat position e in shape s.
std::vector<std::int64_t> unravel(std::int64_t e, const Shape& s) {
  std::vector<std::int64_t> idx(s.size());
  for (std::size_t i = s.size(); i-- > 0;) {
    idx[i] = s[i] ? e % s[i] : 0;
    e = s[i] ? e / s[i] : 0;
  }
  return idx;
}

// Small bodies take well under a microsecond a step: poll for Ctrl-C every 256 of them.
constexpr std::uint32_t kStepsPerPoll = 256;

bool disabled_by_env() {
  const char* v = std::getenv("QUABLA_LOOP_SCALAR");
  return v && std::string_view(v) == "0";
}

}  // namespace

class ScalarLowering {
 public:
  ScalarLowering(ScalarBody& out, std::span<const std::pair<std::size_t, std::size_t>> carries)
      : b_(out), g_(*out.graph_), regs_(g_.values.size()), slot_(g_.values.size()),
        carry_result_(g_.params.size(), -1), last_use_(g_.values.size(), -1), viewed_(g_.values.size(), false) {
    for (const auto& [param, result] : carries)
      if (param < carry_result_.size()) carry_result_[param] = static_cast<int>(result);
    for (std::size_t i = 0; i < g_.nodes.size(); ++i)
      for (auto v : g_.nodes[i].inputs) last_use_[v] = static_cast<int>(i);
    for (auto r : g_.results) last_use_[r] = static_cast<int>(g_.nodes.size());
  }

  bool lower() {
    for (std::size_t v = 0; v < g_.values.size(); ++v)
      if (num_elements(g_.type(static_cast<ValueId>(v)).shape) == 0) return false;
    // Ops on large values run their kernels either way; the scalar form pays off when
    // most of the work is on small values.
    int on_big = 0, on_small = 0;
    nested_.resize(g_.nodes.size());
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      if (has_regions(n.op) && !(nested_[i] = nest(n))) return false;
      if (n.op == Op::Parameter || n.op == Op::Constant) continue;
      (touches_big(n) ? on_big : on_small) += 1;
    }
    if (on_big > on_small) return false;
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      node_index_ = static_cast<int>(i);
      lower_node(g_.nodes[i]);
    }
    drop_dead_code();
    b_.code_.push_back(ScalarBody::Instr{Kind::End, Op::Parameter, 0, 0, 0, 0});
    for (auto p : g_.params) {
      b_.params_.push_back(regs_[p]);
      b_.param_item_.push_back(itemsize(g_.type(p).dtype));
      b_.param_slot_.push_back(slot_[p]);
      if (slot_[p].big) b_.big_param_bytes_ += slot_[p].bytes;
    }
    for (auto r : g_.results) {
      b_.results_.push_back(regs_[r]);
      b_.result_item_.push_back(itemsize(g_.type(r).dtype));
      b_.result_slot_.push_back(slot_[r]);
    }
    b_.num_regs_ = next_;
    return true;
  }

 private:
  using Kind = ScalarBody::Kind;

  bool big(ValueId v) const { return num_elements(g_.type(v).shape) > ScalarBody::kMaxElements; }
  bool touches_big(const Node& n) const {
    for (auto v : n.inputs)
      if (big(v)) return true;
    for (auto v : n.outputs)
      if (big(v)) return true;
    return false;
  }
  std::size_t bytes_of(ValueId v) const {
    return static_cast<std::size_t>(num_elements(g_.type(v).shape)) * itemsize(g_.type(v).dtype);
  }
  // A region of scratch, 8-byte aligned.
  std::size_t place(std::size_t bytes) {
    const std::size_t off = b_.scratch_bytes_;
    b_.scratch_bytes_ += (bytes + 7) / 8 * 8;
    return off;
  }
  // A large value's own buffer in scratch.
  void allocate_big(ValueId v) { slot_[v] = ScalarBody::Slot{true, place(bytes_of(v)), bytes_of(v)}; }

  Regs fresh(std::int64_t n, DType dtype) {
    Regs r;
    for (std::int64_t i = 0; i < n; ++i) {
      r.push_back(next_++);
      b_.reg_dtype_.push_back(dtype);
    }
    return r;
  }
  const Regs& in(const Node& n, std::size_t i) const { return regs_[n.inputs[i]]; }
  const ValueType& out_type(const Node& n) const { return g_.type(n.outputs[0]); }

  // The output's registers as a gather of operand 0's: out[e] = x[base + index(e) . coef].
  void affine_rename(const Node& n, std::int64_t base, const std::vector<std::int64_t>& coef) {
    const Regs& x = in(n, 0);
    const Shape& os = out_type(n).shape;
    Regs r;
    for (std::int64_t e = 0; e < num_elements(os); ++e)
      r.push_back(x[static_cast<std::size_t>(base + dot(unravel(e, os), coef))]);
    regs_[n.outputs[0]] = std::move(r);
  }

  static std::int64_t dot(const std::vector<std::int64_t>& idx, const std::vector<std::int64_t>& st) {
    std::int64_t f = 0;
    for (std::size_t i = 0; i < idx.size(); ++i) f += idx[i] * st[i];
    return f;
  }

  // Per element: `kind` over the operands' registers.
  void per_element(const Node& n, Kind kind) {
    const auto count = num_elements(out_type(n).shape);
    Regs out = fresh(count, out_type(n).dtype);
    for (std::int64_t e = 0; e < count; ++e) {
      ScalarBody::Instr ins{kind, n.op, out[static_cast<std::size_t>(e)], 0, 0, 0};
      const auto k = static_cast<std::size_t>(e);
      if (n.inputs.size() > 0) ins.a = in(n, 0)[k];
      if (n.inputs.size() > 1) ins.b = in(n, 1)[k];
      if (n.inputs.size() > 2) ins.c = in(n, 2)[k];
      b_.code_.push_back(ins);
    }
    regs_[n.outputs[0]] = std::move(out);
  }

  static Kind convert_kind(DType from, DType to) {
    using D = DType;
    struct Entry { D from, to; Kind kind; };
    static constexpr Entry kTable[] = {
        {D::bool_, D::i32, Kind::BoolToI32}, {D::bool_, D::i64, Kind::BoolToI64}, {D::bool_, D::f32, Kind::BoolToF32},
        {D::bool_, D::f64, Kind::BoolToF64}, {D::i32, D::i64, Kind::I32ToI64}, {D::i64, D::i32, Kind::I64ToI32},
        {D::i32, D::f32, Kind::I32ToF32}, {D::i32, D::f64, Kind::I32ToF64}, {D::i64, D::f32, Kind::I64ToF32},
        {D::i64, D::f64, Kind::I64ToF64}, {D::i32, D::bool_, Kind::I32ToBool}, {D::i64, D::bool_, Kind::I64ToBool},
        {D::f32, D::bool_, Kind::F32ToBool}, {D::f64, D::bool_, Kind::F64ToBool}};
    for (const auto& e : kTable)
      if (e.from == from && e.to == to) return e.kind;
    return Kind::Call;
  }

  // The instruction kind of elementwise node n, or Call when it has none.
  Kind kind_of(const Node& n) const {
    const DType d = g_.type(n.inputs[n.op == Op::Select ? 1 : 0]).dtype;
    const DType od = out_type(n).dtype;
    if (n.op == Op::Select) return Kind::Select;
    if (n.op == Op::Convert) {
      if (d == DType::f64 && od == DType::f32) return Kind::F64ToF32;
      if (d == DType::f32 && od == DType::f64) return Kind::F32ToF64;
      return convert_kind(d, od);
    }
    auto pick = [&](Kind f64, Kind f32, Kind i64, Kind i32) {
      switch (d) {
        case DType::f64: return f64;
        case DType::f32: return f32;
        case DType::i64: return i64;
        case DType::i32: return i32;
        case DType::bool_: case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;
      }
      return Kind::Call;
    };
    switch (n.op) {
      case Op::Add: return pick(Kind::F64Add, Kind::F32Add, Kind::I64Add, Kind::I32Add);
      case Op::Sub: return pick(Kind::F64Sub, Kind::F32Sub, Kind::I64Sub, Kind::I32Sub);
      case Op::Mul: return pick(Kind::F64Mul, Kind::F32Mul, Kind::I64Mul, Kind::I32Mul);
      case Op::Max: return pick(Kind::F64Max, Kind::F32Max, Kind::I64Max, Kind::I32Max);
      case Op::Min: return pick(Kind::F64Min, Kind::F32Min, Kind::I64Min, Kind::I32Min);
      case Op::Lt: return pick(Kind::F64Lt, Kind::F32Lt, Kind::I64Lt, Kind::I32Lt);
      case Op::Le: return pick(Kind::F64Le, Kind::F32Le, Kind::I64Le, Kind::I32Le);
      case Op::Gt: return pick(Kind::F64Gt, Kind::F32Gt, Kind::I64Gt, Kind::I32Gt);
      case Op::Ge: return pick(Kind::F64Ge, Kind::F32Ge, Kind::I64Ge, Kind::I32Ge);
      case Op::Eq: return pick(Kind::F64Eq, Kind::F32Eq, Kind::I64Eq, Kind::I32Eq);
      case Op::Ne: return pick(Kind::F64Ne, Kind::F32Ne, Kind::I64Ne, Kind::I32Ne);
      case Op::Div: return pick(Kind::F64Div, Kind::F32Div, Kind::Call, Kind::Call);
      case Op::Neg: return pick(Kind::F64Neg, Kind::F32Neg, Kind::Call, Kind::Call);
      case Op::Abs: return pick(Kind::F64Abs, Kind::F32Abs, Kind::Call, Kind::Call);
      case Op::Sqrt: return pick(Kind::F64Sqrt, Kind::F32Sqrt, Kind::Call, Kind::Call);
      case Op::Pow: return pick(Kind::F64Pow, Kind::F32Pow, Kind::Call, Kind::Call);  // std::pow, as the kernel
      case Op::IsNan: return pick(Kind::F64IsNan, Kind::F32IsNan, Kind::Call, Kind::Call);
      case Op::IsInf: return pick(Kind::F64IsInf, Kind::F32IsInf, Kind::Call, Kind::Call);
      case Op::IsFinite: return pick(Kind::F64IsFinite, Kind::F32IsFinite, Kind::Call, Kind::Call);
      case Op::Not: return d == DType::bool_ ? Kind::BoolNot : Kind::Call;
      case Op::And: return d == DType::bool_ ? Kind::BoolAnd : Kind::Call;
      case Op::Or: return d == DType::bool_ ? Kind::BoolOr : Kind::Call;
      default: break;
    }
    // The kernel computes these through libmvec when the build has it: the same call here.
    if (has_vector_unary(n.op)) return pick(Kind::F64Vec, Kind::F32Vec, Kind::Call, Kind::Call);
    return Kind::Call;
  }

  // Instructions whose register no result reaches (elements of a vector op that only
  // some later slice reads) are left out. Kernel calls stay.
  void drop_dead_code() {
    std::vector<bool> live(next_, false);
    for (auto r : g_.results)
      for (auto reg : regs_[r]) live[reg] = true;
    std::vector<bool> keep(b_.code_.size(), false);
    for (std::size_t i = b_.code_.size(); i-- > 0;) {
      const ScalarBody::Instr& in = b_.code_[i];
      if (in.kind == Kind::Call) {
        keep[i] = true;
        for (const auto& regs : b_.calls_[in.a].in_regs)
          for (auto reg : regs) live[reg] = true;
        continue;
      }
      if (!live[in.d]) continue;
      keep[i] = true;
      live[in.a] = live[in.b] = live[in.c] = true;  // unused operand fields are register 0: harmless
    }
    std::vector<ScalarBody::Instr> code;
    for (std::size_t i = 0; i < b_.code_.size(); ++i)
      if (keep[i]) code.push_back(b_.code_[i]);
    b_.code_ = std::move(code);
  }

  // A scatter into a large loop carry that is its last use, giving that carry's next value
  // (a recorded history written one entry per step) updates the carry's buffer in place:
  // the scatter kernel then copies nothing, and the carry needs no move between steps.
  bool scatter_in_place(const Node& n) const {
    if (n.op != Op::Scatter || !big(n.inputs[0])) return false;
    const ValueId x = n.inputs[0];
    const Node& producer = g_.producer_of(x);
    if (producer.op != Op::Parameter || viewed_[x] || last_use_[x] != node_index_) return false;
    for (std::size_t k = 1; k < n.inputs.size(); ++k)
      if (n.inputs[k] == x) return false;
    const auto p = static_cast<std::size_t>(producer.attrs.axis);
    if (p >= carry_result_.size() || carry_result_[p] < 0) return false;
    return g_.results[static_cast<std::size_t>(carry_result_[p])] == n.outputs[0];
  }

  // The scalar forms of region op n's regions, or null when one has none (or the op is not
  // one that runs here: custom_vjp_lin never runs; a cond with other than two branches).
  static std::shared_ptr<const ScalarBody::Nested> nest(const Node& n) {
    auto nd = std::make_shared<ScalarBody::Nested>();
    nd->op = n.op;
    std::vector<std::pair<std::size_t, std::size_t>> carries;
    auto add = [&](const std::shared_ptr<const Graph>& region, bool with_carries) {
      auto body = ScalarBody::compile(region, with_carries ? std::span(carries) : std::span<const std::pair<std::size_t, std::size_t>>{});
      nd->bodies.push_back(body);
      return body != nullptr;
    };
    switch (n.op) {
      case Op::While: {
        nd->num_consts = static_cast<std::size_t>(n.attrs.num_consts);
        nd->num_carry = n.inputs.size() - nd->num_consts;
        for (std::size_t k = 0; k < nd->num_carry; ++k) carries.emplace_back(nd->num_consts + k, k);
        if (n.regions.size() != 2 || !add(n.regions[0], false) || !add(n.regions[1], true)) return nullptr;
        nd->moves = nd->bodies[1]->results_to_params(0, nd->num_consts, nd->num_carry);
        return nd;
      }
      case Op::Scan: {
        nd->num_consts = static_cast<std::size_t>(n.attrs.num_consts);
        nd->num_carry = static_cast<std::size_t>(n.attrs.num_carry);
        nd->length = n.attrs.length;
        nd->start = n.attrs.start;
        nd->reverse = n.attrs.reverse;
        for (std::size_t k = 0; k < nd->num_carry; ++k) carries.emplace_back(1 + nd->num_consts + k, k);
        if (n.regions.size() != 1 || !add(n.regions[0], true)) return nullptr;
        {
          const ScalarBody& body = *nd->bodies[0];
          const std::size_t nc = nd->num_consts, nk = nd->num_carry, len = static_cast<std::size_t>(nd->length);
          nd->moves = body.results_to_params(0, 1 + nc, nk);
          for (std::size_t i = 1 + nc + nk; i < n.inputs.size() + 1; ++i) nd->x_bytes.push_back(len ? body.param_bytes(i) : 0);
          for (std::size_t j = nk; j < n.outputs.size(); ++j) nd->y_bytes.push_back(len ? body.result_bytes(j) : 0);
        }
        return nd;
      }
      case Op::Cond:
        if (n.regions.size() != 2 || !add(n.regions[0], false) || !add(n.regions[1], false)) return nullptr;
        return nd;
      case Op::CustomJvp: case Op::CustomVjp: case Op::Checkpoint: case Op::LinearSolve:
        // Only the primal body runs (the rules matter to transforms, as in control_flow.cc).
        if (n.regions.empty() || !add(n.regions[0], false)) return nullptr;
        return nd;
      default:
        return nullptr;
    }
  }

  void kernel_call(const Node& n, std::shared_ptr<const ScalarBody::Nested> nested = nullptr) {
    ScalarBody::KernelCall c{&n, {}, {}, {}, {}, {}, {}, std::move(nested)};
    for (auto v : n.inputs) {
      const ValueType& t = g_.type(v);
      c.in_regs.push_back(regs_[v]);  // empty for a large value: read where it lives
      c.in_item.push_back(itemsize(t.dtype));
      c.in_offset.push_back(slot_[v].big ? slot_[v].offset : place(bytes_of(v)));
    }
    const bool in_place = scatter_in_place(n);
    for (auto v : n.outputs) {
      const ValueType& t = g_.type(v);
      if (in_place) slot_[v] = slot_[n.inputs[0]];
      else if (big(v)) allocate_big(v);
      else regs_[v] = fresh(num_elements(t.shape), t.dtype);
      c.out_regs.push_back(regs_[v]);
      c.out_item.push_back(itemsize(t.dtype));
      c.out_offset.push_back(slot_[v].big ? slot_[v].offset : place(bytes_of(v)));
    }
    b_.code_.push_back(ScalarBody::Instr{Kind::Call, n.op, 0, static_cast<std::uint32_t>(b_.calls_.size()), 0, 0});
    b_.calls_.push_back(std::move(c));
  }

  // A float sum over contiguous axes as adds in the reduce kernel's exact order
  // (backends/cpu/reduce.cc): over trailing axes pairwise_sum's (summation.h: eight
  // accumulators from +0, combined as a tree, then the tail in order), otherwise one
  // accumulator from +0 per output in axis order. Other sums run the kernel.
  bool lower_sum(const Node& n) {
    const ValueType& xt = g_.type(n.inputs[0]);
    const auto& axes = n.attrs.dims;
    if ((xt.dtype != DType::f64 && xt.dtype != DType::f32) || axes.empty()) return false;
    if (axes.back() - axes.front() + 1 != static_cast<std::int64_t>(axes.size())) return false;
    std::int64_t outer = 1, red = 1, inner = 1;
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(xt.shape.size()); ++i)
      (i < axes.front() ? outer : i <= axes.back() ? red : inner) *= xt.shape[static_cast<std::size_t>(i)];
    const Kind add = xt.dtype == DType::f64 ? Kind::F64Add : Kind::F32Add;
    const Regs& x = in(n, 0);
    const Reg zero_bits{};
    const auto zero = fresh(1, xt.dtype)[0];
    b_.constants_.emplace_back(zero, zero_bits);
    auto emit_add = [&](std::uint32_t a, std::uint32_t b) {
      const auto d = fresh(1, xt.dtype)[0];
      b_.code_.push_back(ScalarBody::Instr{add, Op::Add, d, a, b, 0});
      return d;
    };
    Regs out;
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        auto at = [&](std::int64_t r) { return x[static_cast<std::size_t>((o * red + r) * inner + i)]; };
        if (inner != 1) {
          auto acc = zero;
          for (std::int64_t r = 0; r < red; ++r) acc = emit_add(acc, at(r));
          out.push_back(acc);
          continue;
        }
        std::uint32_t acc[8];
        std::fill(std::begin(acc), std::end(acc), zero);
        std::int64_t r = 0;
        for (; r + 8 <= red; r += 8)
          for (int l = 0; l < 8; ++l) acc[l] = emit_add(acc[l], at(r + l));
        auto s = emit_add(emit_add(emit_add(acc[0], acc[1]), emit_add(acc[2], acc[3])),
                          emit_add(emit_add(acc[4], acc[5]), emit_add(acc[6], acc[7])));
        for (; r < red; ++r) s = emit_add(s, at(r));
        out.push_back(s);
      }
    regs_[n.outputs[0]] = std::move(out);
    return true;
  }

  void lower_node(const Node& n) {
    if (nested_[static_cast<std::size_t>(node_index_)]) return kernel_call(n, nested_[static_cast<std::size_t>(node_index_)]);
    if (n.op != Op::Parameter && n.op != Op::Constant && touches_big(n)) {
      // A view of a large value is the value itself; anything else runs its kernel.
      const bool same_bytes = n.op == Op::Reshape || n.op == Op::StopGradient ||
                              (n.op == Op::Convert && g_.type(n.inputs[0]).dtype == out_type(n).dtype);
      if (same_bytes && slot_[n.inputs[0]].big) {
        slot_[n.outputs[0]] = slot_[n.inputs[0]];
        viewed_[n.inputs[0]] = true;
        return;
      }
      return kernel_call(n);
    }
    switch (n.op) {
      case Op::Parameter:
        if (big(n.outputs[0])) allocate_big(n.outputs[0]);
        else regs_[n.outputs[0]] = fresh(num_elements(out_type(n).shape), out_type(n).dtype);
        return;
      case Op::Constant: {
        if (big(n.outputs[0])) {
          allocate_big(n.outputs[0]);
          b_.big_constants_.emplace_back(slot_[n.outputs[0]].offset, n.attrs.literal->data);
          return;
        }
        const Literal& lit = *n.attrs.literal;
        const std::size_t item = itemsize(lit.type.dtype);
        Regs r = fresh(num_elements(out_type(n).shape), lit.type.dtype);
        for (std::size_t e = 0; e < r.size(); ++e) {
          Reg x{};
          std::memcpy(&x, lit.data->data() + e * item, item);
          b_.constants_.emplace_back(r[e], x);
        }
        regs_[n.outputs[0]] = std::move(r);
        return;
      }
      case Op::Reshape: case Op::StopGradient:
        regs_[n.outputs[0]] = in(n, 0);
        return;
      // Broadcast, transpose, slice and reverse read operand element
      // base + sum_j out_index[j] * coef[j].
      case Op::BroadcastInDim: {
        const Shape& xs = g_.type(n.inputs[0]).shape;
        const auto xst = strides_of(xs);
        std::vector<std::int64_t> coef(out_type(n).shape.size(), 0);
        for (std::size_t i = 0; i < xs.size(); ++i)
          if (xs[i] != 1) coef[static_cast<std::size_t>(n.attrs.dims[i])] = xst[i];
        return affine_rename(n, 0, coef);
      }
      case Op::Transpose: {
        const auto xst = strides_of(g_.type(n.inputs[0]).shape);
        std::vector<std::int64_t> coef;
        for (auto d : n.attrs.dims) coef.push_back(xst[static_cast<std::size_t>(d)]);
        return affine_rename(n, 0, coef);
      }
      case Op::Slice: {
        const auto xst = strides_of(g_.type(n.inputs[0]).shape);
        std::int64_t base = 0;
        std::vector<std::int64_t> coef;
        for (std::size_t i = 0; i < xst.size(); ++i) {
          base += n.attrs.starts[i] * xst[i];
          coef.push_back(n.attrs.strides[i] * xst[i]);
        }
        return affine_rename(n, base, coef);
      }
      case Op::Reverse: {
        const Shape& xs = g_.type(n.inputs[0]).shape;
        auto coef = strides_of(xs);
        std::int64_t base = 0;
        for (auto a : n.attrs.dims) {
          const auto k = static_cast<std::size_t>(a);
          base += (xs[k] - 1) * coef[k];
          coef[k] = -coef[k];
        }
        return affine_rename(n, base, coef);
      }
      case Op::Concat: {
        const Shape& os = out_type(n).shape;
        const auto axis = static_cast<std::size_t>(n.attrs.axis);
        Regs r;
        for (std::int64_t e = 0; e < num_elements(os); ++e) {
          auto o = unravel(e, os);
          std::size_t k = 0;
          while (o[axis] >= g_.type(n.inputs[k]).shape[axis]) o[axis] -= g_.type(n.inputs[k++]).shape[axis];
          r.push_back(in(n, k)[static_cast<std::size_t>(dot(o, strides_of(g_.type(n.inputs[k]).shape)))]);
        }
        regs_[n.outputs[0]] = std::move(r);
        return;
      }
      case Op::Pad: {
        // out = the pad value everywhere but at starts + i * (interior + 1), which holds x[i].
        const Shape& xs = g_.type(n.inputs[0]).shape;
        const Shape& os = out_type(n).shape;
        const auto ost = strides_of(os);
        Regs r(static_cast<std::size_t>(num_elements(os)), in(n, 1)[0]);
        for (std::int64_t e = 0; e < num_elements(xs); ++e) {
          const auto i = unravel(e, xs);
          std::int64_t f = 0;
          bool inside = true;
          for (std::size_t a = 0; a < i.size(); ++a) {
            const std::int64_t o = n.attrs.starts[a] + i[a] * (n.attrs.strides[a] + 1);
            inside = inside && o >= 0 && o < os[a];
            f += o * ost[a];
          }
          if (inside) r[static_cast<std::size_t>(f)] = in(n, 0)[static_cast<std::size_t>(e)];
        }
        regs_[n.outputs[0]] = std::move(r);
        return;
      }
      case Op::ReduceSum:
        if (lower_sum(n)) return;
        break;
      case Op::Convert:
        if (g_.type(n.inputs[0]).dtype == out_type(n).dtype) {
          regs_[n.outputs[0]] = in(n, 0);
          return;
        }
        break;
      default:
        break;
    }
    if (is_elementwise(n.op)) {
      const Kind k = kind_of(n);
      if (k != Kind::Call) return per_element(n, k);
    }
    kernel_call(n);
  }

  ScalarBody& b_;
  const Graph& g_;
  std::vector<Regs> regs_;
  std::vector<ScalarBody::Slot> slot_;
  std::vector<int> carry_result_;  // per parameter: the result that is its next value, or -1
  std::vector<int> last_use_;      // per value: the last node reading it (results: past the end)
  std::vector<bool> viewed_;       // per value: a view (reshape, ...) shares its buffer
  std::vector<std::shared_ptr<const ScalarBody::Nested>> nested_;  // per node: a region op's scalar regions
  int node_index_ = 0;
  std::uint32_t next_ = 0;
};

std::shared_ptr<const ScalarBody> ScalarBody::compile(std::shared_ptr<const Graph> body,
                                                      std::span<const std::pair<std::size_t, std::size_t>> carries) {
  if (disabled_by_env()) return nullptr;
  auto b = std::make_shared<ScalarBody>();
  b->graph_ = std::move(body);
  ScalarLowering lowering(*b, carries);
  if (!lowering.lower()) return nullptr;
  return b;
}

ScalarBody::State ScalarBody::make_state() const {
  State s;
  s.regs.assign(num_regs_, Reg{});
  for (const auto& [r, v] : constants_) s.regs[r] = v;
  s.scratch.assign(scratch_bytes_, std::byte{0});
  for (const auto& [offset, data] : big_constants_) std::memcpy(s.scratch.data() + offset, data->data(), data->nbytes());
  s.tmp.assign(num_regs_, Reg{});  // room for any set of moves
  s.big_tmp.assign(big_param_bytes_, std::byte{0});
  s.nested.resize(calls_.size());
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    if (!calls_[i].nested) continue;
    auto ns = std::make_shared<NestedState>();
    for (const auto& body : calls_[i].nested->bodies) ns->states.push_back(body->make_state());
    s.nested[i] = std::move(ns);
  }
  return s;
}

void ScalarBody::run_while(const ScalarBody& cond, State& cs, State& bs, std::size_t nc, std::size_t nk,
                           const Moves& moves) const {
  const std::uint32_t pred = cond.result_regs(0)[0];
  if (const auto native = native_while(cond, nc)) {
    // Tier 1: native code runs the iterations, a chunk at a time between interrupt polls.
    constexpr std::int64_t kChunk = 1 << 16;
    InterruptPoller interrupt(1);
    for (;;) {
      interrupt.poll();
      if (run_native_while(native, cond, cs, bs, kChunk)) return;
    }
  }
  InterruptPoller interrupt(kStepsPerPoll);
  for (;;) {
    interrupt.poll();
    for (std::size_t k = 0; k < nk; ++k) {
      const auto from = param_regs(nc + k), to = cond.param_regs(nc + k);
      for (std::size_t e = 0; e < from.size(); ++e) cs.regs[to[e]] = bs.regs[from[e]];
      if (const auto& slot = param_slot(nc + k); slot.big)
        std::memcpy(cs.scratch.data() + cond.param_slot(nc + k).offset, bs.scratch.data() + slot.offset, slot.bytes);
    }
    cond.run(cs);
    if (!cs.regs[pred].b) return;
    run(bs);
    moves.apply(bs);
  }
}

void ScalarBody::run_scan(State& st, std::size_t nc, std::size_t nk, const Moves& moves, std::int64_t len,
                          std::int64_t start, bool reverse, std::span<const std::byte* const> xs,
                          std::span<std::byte* const> ys, std::span<const std::size_t> x_bytes,
                          std::span<const std::size_t> y_bytes) const {
  const std::uint32_t index_reg = param_regs(0)[0];
  const auto native = native_scan(nc, nk);
  if (native) {
    // Tier 1: native code runs the steps, a chunk at a time between interrupt polls.
    constexpr std::int64_t kChunk = 1 << 16;
    InterruptPoller interrupt(1);
    for (std::int64_t first = 0; first < len; first += kChunk) {
      interrupt.poll();
      run_native(native, st, first, std::min(len, first + kChunk), len, start, reverse, xs.data(), ys.data());
    }
    return;
  }
  InterruptPoller interrupt(kStepsPerPoll);
  for (std::int64_t step = 0; step < len; ++step) {  // tier 0 until tier 1 is built
    interrupt.poll();
    const std::int64_t t = reverse ? len - 1 - step : step;
    const auto tu = static_cast<std::size_t>(t);
    st.regs[index_reg].f64 = static_cast<double>(start + t);
    for (std::size_t i = 0; i < xs.size(); ++i) load_param(1 + nc + nk + i, xs[i] + tu * x_bytes[i], st);
    run(st);
    for (std::size_t j = 0; j < ys.size(); ++j) store_result(nk + j, st, ys[j] + tu * y_bytes[j]);
    moves.apply(st);
  }
}

void ScalarBody::run_nested(const Nested& nd, NestedState& ns, std::span<const std::byte* const> ins,
                            std::span<std::byte* const> outs) const {
  switch (nd.op) {
    case Op::While: {
      const ScalarBody &cond = *nd.bodies[0], &body = *nd.bodies[1];
      State &cs = ns.states[0], &bs = ns.states[1];
      for (std::size_t i = 0; i < nd.num_consts; ++i) {
        cond.load_param(i, ins[i], cs);
        body.load_param(i, ins[i], bs);
      }
      for (std::size_t k = 0; k < nd.num_carry; ++k) body.load_param(nd.num_consts + k, ins[nd.num_consts + k], bs);
      body.run_while(cond, cs, bs, nd.num_consts, nd.num_carry, nd.moves);
      for (std::size_t k = 0; k < nd.num_carry; ++k) body.store_param(nd.num_consts + k, bs, outs[k]);
      return;
    }
    case Op::Scan: {
      const ScalarBody& body = *nd.bodies[0];
      State& st = ns.states[0];
      const std::size_t nc = nd.num_consts, nk = nd.num_carry;
      for (std::size_t i = 0; i < nc + nk; ++i) body.load_param(1 + i, ins[i], st);
      body.run_scan(st, nc, nk, nd.moves, nd.length, nd.start, nd.reverse, ins.subspan(nc + nk), outs.subspan(nk),
                    nd.x_bytes, nd.y_bytes);
      for (std::size_t k = 0; k < nk; ++k) body.store_param(1 + nc + k, st, outs[k]);
      return;
    }
    case Op::Cond: {
      const bool pred = *reinterpret_cast<const std::uint8_t*>(ins[0]) != 0;
      const ScalarBody& branch = *nd.bodies[pred ? 1 : 0];
      State& st = ns.states[pred ? 1 : 0];
      for (std::size_t i = 1; i < ins.size(); ++i) branch.load_param(i - 1, ins[i], st);
      branch.run(st);
      for (std::size_t j = 0; j < outs.size(); ++j) branch.store_result(j, st, outs[j]);
      return;
    }
    default: {  // a custom rule's, a checkpoint's or a linear solve's primal body
      const ScalarBody& body = *nd.bodies[0];
      State& st = ns.states[0];
      for (std::size_t i = 0; i < ins.size(); ++i) body.load_param(i, ins[i], st);
      body.run(st);
      for (std::size_t j = 0; j < outs.size(); ++j) body.store_result(j, st, outs[j]);
      return;
    }
  }
}

void ScalarBody::load_param(std::size_t i, const std::byte* src, State& s) const {
  if (param_slot_[i].big) {
    std::memcpy(s.scratch.data() + param_slot_[i].offset, src, param_slot_[i].bytes);
    return;
  }
  const std::size_t item = param_item_[i];
  scatter(s.regs.data(), params_[i], src, item);
}

void ScalarBody::store_param(std::size_t i, const State& s, std::byte* dst) const {
  if (param_slot_[i].big) {
    std::memcpy(dst, s.scratch.data() + param_slot_[i].offset, param_slot_[i].bytes);
    return;
  }
  const std::size_t item = param_item_[i];
  gather(dst, s.regs.data(), params_[i], item);
}

void ScalarBody::store_result(std::size_t j, const State& s, std::byte* dst) const {
  if (result_slot_[j].big) {
    std::memcpy(dst, s.scratch.data() + result_slot_[j].offset, result_slot_[j].bytes);
    return;
  }
  const std::size_t item = result_item_[j];
  gather(dst, s.regs.data(), results_[j], item);
}

void ScalarBody::Moves::apply(State& s) const {
  for (std::size_t i = 0; i < src.size(); ++i) s.tmp[i] = s.regs[src[i]];
  for (std::size_t i = 0; i < dst.size(); ++i) s.regs[dst[i]] = s.tmp[i];
  for (const auto& m : big) std::memcpy(s.big_tmp.data() + m.tmp, s.scratch.data() + m.src, m.bytes);
  for (const auto& m : big) std::memcpy(s.scratch.data() + m.dst, s.big_tmp.data() + m.tmp, m.bytes);
}

ScalarBody::Moves ScalarBody::results_to_params(std::size_t first_result, std::size_t first_param,
                                                std::size_t count) const {
  Moves m;
  std::size_t tmp = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const Slot& rs = result_slot_[first_result + k];
    const Slot& ps = param_slot_[first_param + k];
    if (ps.big) {
      if (rs.offset != ps.offset) {
        m.big.push_back(BigMove{rs.offset, ps.offset, ps.bytes, tmp});
        tmp += ps.bytes;
      }
      continue;
    }
    const auto& from = results_[first_result + k];
    const auto& to = params_[first_param + k];
    for (std::size_t e = 0; e < from.size(); ++e) {
      if (from[e] == to[e]) continue;
      m.src.push_back(from[e]);
      m.dst.push_back(to[e]);
    }
  }
  return m;
}

void ScalarBody::call(const KernelCall& c, State& s) const {
  Reg* r = s.regs.data();
  std::byte* scratch = s.scratch.data();
  std::array<const std::byte*, 8> ins_small{};
  std::array<std::byte*, 8> outs_small{};
  std::vector<const std::byte*> ins_big;
  std::vector<std::byte*> outs_big;
  const bool big = c.in_regs.size() > 8 || c.out_regs.size() > 8;
  if (big) {
    ins_big.resize(c.in_regs.size());
    outs_big.resize(c.out_regs.size());
  }
  for (std::size_t k = 0; k < c.in_regs.size(); ++k) {
    std::byte* p = scratch + c.in_offset[k];
    gather(p, r, c.in_regs[k], c.in_item[k]);
    (big ? ins_big[k] : ins_small[k]) = p;
  }
  for (std::size_t k = 0; k < c.out_regs.size(); ++k) (big ? outs_big[k] : outs_small[k]) = scratch + c.out_offset[k];
  const auto ins = big ? std::span<const std::byte* const>(ins_big)
                       : std::span<const std::byte* const>(ins_small.data(), c.in_regs.size());
  const auto outs = big ? std::span<std::byte* const>(outs_big) : std::span<std::byte* const>(outs_small.data(), c.out_regs.size());
  if (c.nested) run_nested(*c.nested, *s.nested[static_cast<std::size_t>(&c - calls_.data())], ins, outs);
  else run_node_packed(*graph_, *c.node, ins, outs);
  for (std::size_t k = 0; k < c.out_regs.size(); ++k) {
    const std::byte* p = scratch + c.out_offset[k];
    scatter(r, c.out_regs[k], p, c.out_item[k]);
  }
}

void ScalarBody::run(State& s) const {
  // Threaded dispatch (GNU labels as values): each handler jumps straight to the next one,
  // so the indirect branches are predicted per handler, not through one shared switch.
  Reg* r = s.regs.data();
  const Instr* ip = code_.data();
#define QB_LABEL(k) &&L_##k,
  static const void* const kLabels[] = {QB_KINDS(QB_LABEL)};
#undef QB_LABEL
#define QB_NEXT() goto *kLabels[static_cast<int>((++ip)->kind)]
#define D r[ip->d]
#define A r[ip->a]
#define B r[ip->b]
  goto *kLabels[static_cast<int>(ip->kind)];
#define QB_COMPARE_HANDLERS(P, M)       \
  L_##P##Lt: D.b = A.M < B.M; QB_NEXT();  \
  L_##P##Le: D.b = A.M <= B.M; QB_NEXT(); \
  L_##P##Gt: D.b = A.M > B.M; QB_NEXT();  \
  L_##P##Ge: D.b = A.M >= B.M; QB_NEXT(); \
  L_##P##Eq: D.b = A.M == B.M; QB_NEXT(); \
  L_##P##Ne: D.b = A.M != B.M; QB_NEXT();
#define QB_FLOAT_HANDLERS(P, M)                                 \
  L_##P##Add: D.M = A.M + B.M; QB_NEXT();                       \
  L_##P##Sub: D.M = A.M - B.M; QB_NEXT();                       \
  L_##P##Mul: D.M = A.M * B.M; QB_NEXT();                       \
  L_##P##Div: D.M = A.M / B.M; QB_NEXT();                       \
  L_##P##Neg: D.M = -A.M; QB_NEXT();                            \
  L_##P##Abs: D.M = std::fabs(A.M); QB_NEXT();                  \
  L_##P##Sqrt: D.M = std::sqrt(A.M); QB_NEXT();                 \
  L_##P##Max: D.M = math::maximum(A.M, B.M); QB_NEXT();         \
  L_##P##Min: D.M = math::minimum(A.M, B.M); QB_NEXT();         \
  L_##P##Pow: D.M = std::pow(A.M, B.M); QB_NEXT();              \
  L_##P##IsNan: D.b = std::isnan(A.M); QB_NEXT();              \
  L_##P##IsInf: D.b = std::isinf(A.M); QB_NEXT();              \
  L_##P##IsFinite: D.b = std::isfinite(A.M); QB_NEXT();        \
  QB_COMPARE_HANDLERS(P, M)
  QB_FLOAT_HANDLERS(F64, f64)
  QB_FLOAT_HANDLERS(F32, f32)
#undef QB_FLOAT_HANDLERS
L_F64Vec:
  vector_unary_f64(ip->op, &A.f64, &D.f64, 1);
  QB_NEXT();
L_F32Vec:
  vector_unary_f32(ip->op, &A.f32, &D.f32, 1);
  QB_NEXT();
#define QB_INT_HANDLERS(P, M, U)                                                                 \
  L_##P##Add: D.M = static_cast<decltype(D.M)>(static_cast<U>(A.M) + static_cast<U>(B.M)); QB_NEXT(); \
  L_##P##Sub: D.M = static_cast<decltype(D.M)>(static_cast<U>(A.M) - static_cast<U>(B.M)); QB_NEXT(); \
  L_##P##Mul: D.M = static_cast<decltype(D.M)>(static_cast<U>(A.M) * static_cast<U>(B.M)); QB_NEXT(); \
  L_##P##Max: D.M = A.M > B.M ? A.M : B.M; QB_NEXT();                                           \
  L_##P##Min: D.M = A.M < B.M ? A.M : B.M; QB_NEXT();                                           \
  QB_COMPARE_HANDLERS(P, M)
  QB_INT_HANDLERS(I64, i64, std::uint64_t)
  QB_INT_HANDLERS(I32, i32, std::uint32_t)
#undef QB_INT_HANDLERS
#undef QB_COMPARE_HANDLERS
L_BoolNot:
  D.b = !A.b;
  QB_NEXT();
L_BoolAnd:
  D.b = A.b && B.b;
  QB_NEXT();
L_BoolOr:
  D.b = A.b || B.b;
  QB_NEXT();
L_Select:
  D = A.b ? B : r[ip->c];
  QB_NEXT();
L_F64ToF32:
  D.f32 = static_cast<float>(A.f64);
  QB_NEXT();
L_BoolToI32: D.i32 = A.b; QB_NEXT();
L_BoolToI64: D.i64 = A.b; QB_NEXT();
L_BoolToF32: D.f32 = static_cast<float>(A.b); QB_NEXT();
L_BoolToF64: D.f64 = static_cast<double>(A.b); QB_NEXT();
L_I32ToI64: D.i64 = A.i32; QB_NEXT();
L_I64ToI32: D.i32 = static_cast<std::int32_t>(A.i64); QB_NEXT();
L_I32ToF32: D.f32 = static_cast<float>(A.i32); QB_NEXT();
L_I32ToF64: D.f64 = static_cast<double>(A.i32); QB_NEXT();
L_I64ToF32: D.f32 = static_cast<float>(A.i64); QB_NEXT();
L_I64ToF64: D.f64 = static_cast<double>(A.i64); QB_NEXT();
L_I32ToBool: D.b = A.i32 != 0; QB_NEXT();
L_I64ToBool: D.b = A.i64 != 0; QB_NEXT();
L_F32ToBool: D.b = A.f32 != 0.0f; QB_NEXT();
L_F64ToBool: D.b = A.f64 != 0.0; QB_NEXT();
L_F32ToF64:
  D.f64 = static_cast<double>(A.f32);
  QB_NEXT();
L_Call:
  call(calls_[ip->a], s);
  QB_NEXT();
L_End:
  return;
#undef QB_NEXT
#undef D
#undef A
#undef B
}

}  // namespace qb::cpu
