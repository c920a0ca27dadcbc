// The narrow-integer lowering (lower_narrow.h).
#include "quabla/transforms/lower_narrow.h"

#include <cstring>
#include <limits>
#include <vector>

#include "quabla/ir/builder.h"
#include "quabla/ir/errors.h"
#include "quabla/transforms/emit.h"

namespace qb {

namespace {

using ad::Emit;
using ad::V;

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

// Ops whose results stay within the range of their narrow operands (they move, select,
// order or combine bits of values already in range), so no wrap follows them.
bool keeps_range(Op op) {
  switch (op) {
    case Op::Reshape: case Op::BroadcastInDim: case Op::Transpose: case Op::Slice: case Op::Reverse:
    case Op::Concat: case Op::Pad: case Op::Select: case Op::Max: case Op::Min: case Op::ReduceMax:
    case Op::ReduceMin: case Op::Gather: case Op::Take: case Op::Scatter: case Op::Argsort: case Op::And:
    case Op::Or: case Op::Xor: case Op::Rem: case Op::Sign: case Op::Floor: case Op::Ceil: case Op::Round:
    case Op::StopGradient: case Op::ShiftRight: case Op::NamedAxis:
      return true;
    default: return false;
  }
}

class Lowering {
 public:
  Lowering(const Graph& src, Graph& dst, bool boundary_narrow)
      : g_(src), b_(dst), e_{b_}, boundary_narrow_(boundary_narrow), map_(src.values.size(), 0) {}

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
      results.push_back(is_narrow_int(d) && boundary_narrow_ ? e_.convert(map_[v], d) : map_[v]);
    }
    b_.set_results(std::move(results));
  }

 private:
  bool narrow(ValueId v) const { return is_narrow_int(g_.type(v).dtype); }

  // v (a wide value) reduced into the range of the narrow dtype d: modulo 2^bits.
  V wrap(V v, DType d) { return e_.convert(e_.convert(v, d), wide_int(d)); }

  void finish(const Node& n, const std::vector<V>& outs, bool wrap_results) {
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const ValueType& t = g_.type(n.outputs[k]);
      V v = outs[k];
      if (wrap_results && is_narrow_int(t.dtype)) v = wrap(v, t.dtype);
      b_.graph().values[v].weak = t.weak;
      map_[n.outputs[k]] = v;
    }
  }

  void lower(const Node& n) {
    std::vector<V> ins;
    for (ValueId v : n.inputs) ins.push_back(map_[v]);
    if (!n.regions.empty()) {
      Regions regions;
      for (const auto& r : n.regions) regions.push_back(lower_narrow(r, /*boundary_narrow=*/false));
      return finish(n, b_.emit(n.op, ins, n.attrs, std::move(regions)), false);
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
        return finish(n, {b_.constant(std::move(wide))}, false);
      }
      case Op::Convert: {
        // From a narrow value: its wide form holds the same number, so converting that is
        // converting it. To a narrow dtype: the conversion itself (saturating from floats,
        // modular from integers), then widened.
        const DType to = n.attrs.dtype;
        V v = e_.convert(ins[0], to);
        if (is_narrow_int(to)) v = e_.convert(v, wide_int(to));
        return finish(n, {v}, false);
      }
      case Op::HostCall: {
        // The host function sees the program's dtypes: narrow operands go out narrow.
        for (std::size_t k = 0; k < ins.size(); ++k) {
          if (narrow(n.inputs[k])) ins[k] = e_.convert(ins[k], g_.type(n.inputs[k]).dtype);
        }
        auto outs = b_.emit(n.op, ins, n.attrs);
        for (V& o : outs) o = e_.convert(o, widened(b_.type(o).dtype));
        return finish(n, outs, false);
      }
      default: break;
    }
    Attrs a = n.attrs;
    if (is_narrow_int(a.dtype)) a.dtype = wide_int(a.dtype);  // an index dtype (argsort, ...)
    finish(n, b_.emit(n.op, ins, std::move(a)), !keeps_range(n.op));
  }

  const Graph& g_;
  Builder b_;
  Emit e_;
  bool boundary_narrow_;
  std::vector<V> map_;
};

}  // namespace

bool has_narrow_int(const Graph& g) {
  for (const ValueType& t : g.values) {
    if (is_narrow_int(t.dtype)) return true;
  }
  for (const Node& n : g.nodes) {
    for (const auto& r : n.regions) {
      if (has_narrow_int(*r)) return true;
    }
  }
  return false;
}

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
