// The narrow-integer lowering (lower_narrow.h).
#include "quabla/transforms/lower_narrow.h"

#include <cstring>
#include <limits>
#include <vector>

#include "quabla/ir/builder.h"
#include "quabla/ir/errors.h"
#include "quabla/ir/regions.h"
#include "quabla/transforms/emit.h"

namespace qb {

namespace {

using ad::Emit;
using ad::V;

constexpr V kNone = std::numeric_limits<V>::max();

DType widened(DType d) { return is_narrow_int(d) ? wide_int(d) : d; }
ValueType widened(ValueType t) {
  t.dtype = widened(t.dtype);
  return t;
}

std::int64_t load_int(DType d, const std::byte* p) {
  auto get = [p](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<std::int64_t>(v);
  };
  switch (d) {
    case DType::i8: return get(std::int8_t{});
    case DType::i16: return get(std::int16_t{});
    case DType::u8: return get(std::uint8_t{});
    case DType::u16: return get(std::uint16_t{});
    case DType::u32: return get(std::uint32_t{});
    default: break;
  }
  throw InternalError("lower_narrow: not a narrow integer literal");
}

// Which operands of op n may hold a narrow value only up to congruence (its wide form equal
// to the narrow value modulo 2^bits, not necessarily in range), because the op's result is
// then congruent to the narrow result too: ring operations, bitwise ones, selection and data
// movement, sums and products. Shift amounts, exponents, indices and everything read by
// order (comparisons, max, sort), division, right shifts and conversions must be exact.
bool modular_operand(const Node& n, std::size_t k) {
  switch (n.op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Neg: case Op::Not: case Op::And: case Op::Or:
    case Op::Xor: case Op::Concat: case Op::Pad: case Op::MatMul: case Op::ScatterAdd:
      return true;
    case Op::ShiftLeft: case Op::Pow: case Op::Reshape: case Op::BroadcastInDim: case Op::Transpose:
    case Op::Slice: case Op::Reverse: case Op::ReduceSum: case Op::ReduceProd: case Op::Cumsum:
    case Op::Gather: case Op::Take:
      return k == 0;
    case Op::Select: return k != 0;
    case Op::Scatter: return (n.attrs.mode == kScatterAdd || n.attrs.mode == kScatterSet) && k != 1;
    default: return false;
  }
}

// Whether op n's narrow result is in range whenever its operands are (it moves, selects,
// orders or combines bits of them); otherwise it may leave the range (add, abs(-128),
// -128 / -1, ...) and is only congruent.
bool keeps_range(const Node& n) {
  switch (n.op) {
    case Op::Reshape: case Op::BroadcastInDim: case Op::Transpose: case Op::Slice: case Op::Reverse:
    case Op::Concat: case Op::Pad: case Op::Select: case Op::Max: case Op::Min: case Op::ReduceMax:
    case Op::ReduceMin: case Op::Gather: case Op::Take: case Op::Argsort: case Op::And:
    case Op::Or: case Op::Xor: case Op::Rem: case Op::Sign: case Op::Floor: case Op::Ceil: case Op::Round:
    case Op::StopGradient: case Op::ShiftRight:
      return true;
    case Op::Scatter: return n.attrs.mode == kScatterSet || n.attrs.mode == kScatterMin || n.attrs.mode == kScatterMax;
    default: return false;
  }
}

class Lowering {
 public:
  Lowering(const Graph& src, Graph& dst, bool boundary_narrow)
      : g_(src), b_(dst), e_{b_}, boundary_narrow_(boundary_narrow), map_(src.values.size(), 0),
        exact_(src.values.size(), true), wrapped_(src.values.size(), kNone) {}

  void run() {
    for (ValueId p : g_.params) {
      const ValueType& t = g_.type(p);
      if (is_narrow_int(t.dtype) && boundary_narrow_) {
        map_[p] = e_.convert(b_.param(t), wide_int(t.dtype));
        b_.graph().values[map_[p]].weak = t.weak;
      } else {
        map_[p] = b_.param(widened(t));
      }
    }
    for (const Node& n : g_.nodes) {
      if (n.op != Op::Parameter) lower(n);
    }
    std::vector<ValueId> results;
    for (ValueId v : g_.results) {
      const DType d = g_.type(v).dtype;
      // The conversion to the narrow dtype is modular: it wraps a congruent value itself.
      results.push_back(is_narrow_int(d) && boundary_narrow_ ? e_.convert(map_[v], d) : exact(v));
    }
    b_.set_results(std::move(results));
  }

 private:
  bool narrow(ValueId v) const { return is_narrow_int(g_.type(v).dtype); }

  // The lowered form of source value v in range: wrapped (reduced modulo 2^bits by a
  // conversion to the narrow dtype and back) once, when a reader first needs it exact.
  V exact(ValueId v) {
    if (exact_[v]) return map_[v];
    if (wrapped_[v] == kNone) {
      const DType d = g_.type(v).dtype;
      wrapped_[v] = e_.convert(e_.convert(map_[v], d), wide_int(d));
      b_.graph().values[wrapped_[v]].weak = g_.type(v).weak;
    }
    return wrapped_[v];
  }

  // in_range: whether the outputs are in range (else only congruent to the narrow values).
  void finish(const Node& n, const std::vector<V>& outs, bool in_range) {
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const ValueType& t = g_.type(n.outputs[k]);
      b_.graph().values[outs[k]].weak = t.weak;
      map_[n.outputs[k]] = outs[k];
      exact_[n.outputs[k]] = in_range || !is_narrow_int(t.dtype);
    }
  }

  void lower(const Node& n) {
    std::vector<V> ins;
    bool inputs_exact = true;
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const ValueId v = n.inputs[k];
      const bool congruent_ok = modular_operand(n, k) && n.regions.empty();
      ins.push_back(congruent_ok ? map_[v] : exact(v));
      inputs_exact = inputs_exact && (exact_[v] || !congruent_ok);
    }
    if (!n.regions.empty()) {  // a body takes and returns values in range
      Regions regions;
      for (const auto& r : n.regions) regions.push_back(lower_narrow(r, /*boundary_narrow=*/false));
      return finish(n, b_.emit(n.op, ins, n.attrs, std::move(regions)), true);
    }
    bool any = false;
    for (ValueId v : n.inputs) any = any || narrow(v);
    for (ValueId v : n.outputs) any = any || narrow(v);
    if (!any) {
      b_.copy_node(g_, n, ins, map_);
      return;
    }
    switch (n.op) {
      case Op::Constant: {
        const Literal& lit = *n.attrs.literal;
        auto wide = std::make_shared<Literal>();
        wide->type = widened(lit.type);
        const auto count = static_cast<std::size_t>(num_elements(lit.type.shape));
        const std::size_t from = itemsize(lit.type.dtype), to = itemsize(wide->type.dtype);
        wide->data = Buffer::allocate(count * to);
        for (std::size_t i = 0; i < count; ++i) {
          store_int64(wide->type.dtype, wide->data->data() + i * to, load_int(lit.type.dtype, lit.data->data() + i * from));
        }
        return finish(n, {b_.constant(std::move(wide))}, true);
      }
      case Op::Convert: {
        // From a narrow value: its (exact) wide form holds the same number, so converting that
        // is converting it. To a narrow dtype: the conversion itself (saturating from floats,
        // modular from integers), then widened.
        const DType to = n.attrs.dtype;
        V v = e_.convert(ins[0], to);
        if (is_narrow_int(to)) v = e_.convert(v, wide_int(to));
        return finish(n, {v}, true);
      }
      case Op::HostCall: {
        // The host function sees the program's dtypes: narrow operands go out narrow.
        for (std::size_t k = 0; k < ins.size(); ++k) {
          if (narrow(n.inputs[k])) ins[k] = e_.convert(ins[k], g_.type(n.inputs[k]).dtype);
        }
        auto outs = b_.emit(n.op, ins, n.attrs);
        for (V& o : outs) o = e_.convert(o, widened(b_.type(o).dtype));
        return finish(n, outs, true);
      }
      default: break;
    }
    Attrs a = n.attrs;
    if (is_narrow_int(a.dtype)) a.dtype = wide_int(a.dtype);  // an index dtype (argsort, ...)
    finish(n, b_.emit(n.op, ins, std::move(a)), keeps_range(n) && inputs_exact);
  }

  const Graph& g_;
  Builder b_;
  Emit e_;
  bool boundary_narrow_;
  std::vector<V> map_;      // source value -> its lowered (wide) value
  std::vector<bool> exact_;  // whether map_[v] is in the narrow range (else only congruent)
  std::vector<V> wrapped_;   // map_[v] wrapped into range, once some reader needed it
};

}  // namespace

bool has_narrow_int(const Graph& g) { return holds_dtype(g, [](DType d) { return is_narrow_int(d); }); }

std::shared_ptr<const Graph> lower_narrow(std::shared_ptr<const Graph> g, bool boundary_narrow) {
  if (!has_narrow_int(*g)) return g;
  Graph out;
  Lowering(*g, out, boundary_narrow).run();
  // Not simplified: the simplifier folds constants by running them through the CPU
  // backend, which lowers them here again, and the narrow conversions a lowered program
  // keeps would fold forever. The lowering emits nothing dead but unused parameters' widening.
  return std::make_shared<const Graph>(std::move(out));
}

}  // namespace qb
