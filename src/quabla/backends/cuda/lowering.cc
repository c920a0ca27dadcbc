#include "quabla/backends/cuda/lowering.h"
#include "quabla/transforms/expand_threefry.h"
#include "quabla/transforms/lower_complex.h"
#include "quabla/transforms/lower_narrow.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "quabla/backends/cpu/fusion.h"
#include "quabla/backends/cuda/fft_lowering.h"
#include "quabla/backends/cuda/loop_kernel.h"
#include "quabla/ir/errors.h"

namespace qb::cuda {

namespace {

std::string id(ValueId v) { return std::to_string(v); }

// Statements setting `var` to offset + sum_a idx_a * strides[a], where idx is the
// row-major multi-index of the flat index `flat` over `shape`.
std::string offset_code(const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t offset,
                        const std::string& flat, const std::string& var) {
  std::ostringstream o;
  o << "    qb_i64 " << var << " = " << offset << ";\n";
  if (shape.empty()) return o.str();
  const auto contiguous = row_major_strides(shape);
  if (std::vector<std::int64_t>(contiguous.begin(), contiguous.end()) == strides) {
    o << "    " << var << " += " << flat << ";\n";
    return o.str();
  }
  o << "    { qb_i64 r_ = " << flat << ";\n";
  for (std::size_t a = shape.size(); a-- > 0;) {
    if (strides[a] != 0) o << "      " << var << " += (r_ % " << shape[a] << ") * (" << strides[a] << ");\n";
    if (a > 0) o << "      r_ /= " << shape[a] << ";\n";
  }
  o << "    }\n";
  return o.str();
}

// How many partial sums each output of a reduction over `red` elements is split into, so
// that `outputs * parts` threads keep a GPU busy; fixed by the sizes alone (determinism).
std::int64_t parts_for(std::int64_t outputs, std::int64_t red) {
  if (red <= 64) return 1;
  const std::int64_t want = (65536 + outputs - 1) / std::max<std::int64_t>(outputs, 1);
  return std::clamp<std::int64_t>(want, 1, std::min<std::int64_t>(1024, red / 16));
}

std::string pointer(DType d, bool is_const) { return std::string(is_const ? "const " : "") + c_type(d) + "*"; }

class Lowerer {
 public:
  Lowerer(std::shared_ptr<const Graph> g, std::string device) : g_(std::move(g)), device_(std::move(device)) {}

  Plan run() {
    // Complex values become real ones first, as on the CPU (transforms/lower_complex.h): the
    // program's parameters and results keep their interleaved bytes, so complex device
    // arrays pass through as they are, and the kernels below never meet a complex dtype.
    // Narrow integers compute in their wide dtypes likewise (transforms/lower_narrow.h).
    g_ = expand_threefry(lower_narrow(lower_complex(g_)));
    const Graph& g = *g_;
    const cpu::FusionPlan fusion = cpu::plan_fusion(g);
    for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
      const int k = fusion.group[i];
      if (k >= 0) {
        if (fusion.first_node[static_cast<std::size_t>(k)] == i) fused(*fusion.kernels[static_cast<std::size_t>(k)], i);
        continue;
      }
      node(i);
    }
    assign_releases();
    plan_.graph = g_;
    return std::move(plan_);
  }

 private:
  const Graph& g() const { return *g_; }
  const ValueType& type(ValueId v) const { return g_->type(v); }
  std::string ctype(ValueId v) const { return c_type(type(v).dtype); }
  static Arg value(ValueId v) { return Arg{Arg::Value, v, -1, 0}; }
  static Arg temp(int t) { return Arg{Arg::Temp, 0, t, 0}; }

  // The kernel with these parameters and body (shared by identical ones).
  int kernel(std::vector<KernelParam> params, std::string body) {
    std::string key;
    for (const auto& p : params) key += p.type + " " + p.name + ",";
    key += "\n" + body;
    if (auto it = by_key_.find(key); it != by_key_.end()) return it->second;
    const int index = static_cast<int>(plan_.kernels.size());
    plan_.kernels.push_back(KernelSource{"qb_k" + std::to_string(index), std::move(params), std::move(body)});
    by_key_.emplace(std::move(key), index);
    return index;
  }

  // A lowered complex op with a CPU kernel only (eig, the complex linear algebra).
  static bool complex_kernel(const Node& n) {
    switch (n.op) {
      case Op::Eig: return true;
      case Op::Cholesky: case Op::Slogdet: case Op::Eigh: case Op::Svd: case Op::Qr: case Op::Lu: case Op::Solve:
      case Op::TriangularSolve:
        return (n.attrs.mode & kLinalgPlanar) != 0;
      default: return false;
    }
  }

  [[noreturn]] void unsupported(const Node& n) const {
    const std::string op(op_name(n.op));
    throw UnsupportedOperation(op + " is not supported on the CUDA backend yet (" + device_ +
                                   "); run this program on the CPU (device='cpu')",
                               op, device_);
  }

  Step& new_step(std::uint32_t node, std::vector<ValueId> outputs) {
    Step s;
    s.node = node;
    s.outputs = std::move(outputs);
    plan_.steps.push_back(std::move(s));
    return plan_.steps.back();
  }

  // ---- fused elementwise kernels ---------------------------------------------------------

  // The micro-ops of `fk` at element `e` (a variable name): locals x<id>, materialised
  // members stored.
  std::string chain(const cpu::FusedKernel& fk, const std::string& e) const {
    std::ostringstream b;
    std::set<ValueId> local;
    const std::set<ValueId> stored(fk.outputs.begin(), fk.outputs.end());
    for (const cpu::FusedKernel::MicroOp& m : fk.ops) {
      const std::string t = c_type(m.out_dtype);
      if (m.op == Op::BroadcastInDim || m.op == Op::Slice) {
        const ValueId src = m.srcs[0].value;
        b << offset_code(fk.shape, m.load_strides, m.load_offset, e, "o" + id(m.out));
        b << "    const " << t << " x" << m.out << " = v" << src << "[o" << m.out << "];\n";
      } else {
        std::vector<std::string> args;
        for (const auto& s : m.srcs) {
          switch (s.kind) {
            case cpu::FusedKernel::Source::Slot: args.push_back("x" + id(s.value)); break;
            case cpu::FusedKernel::Source::Scalar: args.push_back("v" + id(s.value) + "[0]"); break;
            case cpu::FusedKernel::Source::Full: case cpu::FusedKernel::Source::Materialized:
              args.push_back(local.count(s.value) ? "x" + id(s.value) : "v" + id(s.value) + "[" + e + "]");
              break;
          }
        }
        b << "    const " << t << " x" << m.out << " = " << elementwise_expr(m.op, m.in_dtype, m.out_dtype, args)
          << ";\n";
      }
      local.insert(m.out);
      if (stored.count(m.out)) b << "    v" << m.out << "[" << e << "] = x" << m.out << ";\n";
    }
    return b.str();
  }

  void fused(const cpu::FusedKernel& fk, std::uint32_t node) {
    std::vector<KernelParam> params;
    std::vector<Arg> args;
    for (ValueId v : fk.inputs) {
      params.push_back({pointer(type(v).dtype, true), "v" + id(v)});
      args.push_back(value(v));
    }
    std::vector<ValueId> outs = fk.outputs;
    for (ValueId v : fk.outputs) {
      params.push_back({pointer(type(v).dtype, false), "v" + id(v)});
      args.push_back(value(v));
    }
    ++plan_.fused_kernels;
    if (!fk.epilogue) {
      Step& s = new_step(node, outs);
      s.launches.push_back(Launch{kernel(params, "    const qb_i64 e = i;\n" + chain(fk, "e")), fk.n, args});
      return;
    }
    const auto& ep = *fk.epilogue;
    const std::int64_t red = ep.row_len, inner = ep.inner, outputs = num_elements(type(ep.out).shape);
    const std::int64_t parts = parts_for(outputs, red);
    const std::string acc_t = ctype(ep.out);
    outs.push_back(ep.out);
    Step& s = new_step(node, outs);
    std::ostringstream b;
    if (inner == 1) b << "    const qb_i64 o = i / " << parts << ", p = i % " << parts << ";\n";
    else b << "    const qb_i64 p = i / " << outputs << ", o = i % " << outputs << ";\n";
    b << "    const qb_i64 oo = o / " << inner << ", ii = o % " << inner << ";\n";
    b << "    " << acc_t << " acc = 0;\n";
    b << "    for (qb_i64 r = p; r < " << red << "; r += " << parts << ") {\n";
    b << "    const qb_i64 e = (oo * " << red << " + r) * " << inner << " + ii;\n";
    b << chain(fk, "e");
    b << "    acc += x" << ep.input << ";\n    }\n";
    if (parts == 1) {
      params.push_back({pointer(type(ep.out).dtype, false), "v" + id(ep.out)});
      args.push_back(value(ep.out));
      b << "    v" << ep.out << "[o] = acc;\n";
      s.launches.push_back(Launch{kernel(params, b.str()), outputs, args});
      return;
    }
    params.push_back({acc_t + "*", "t0"});
    args.push_back(temp(0));
    b << "    t0[o * " << parts << " + p] = acc;\n";
    s.temp_bytes.push_back(static_cast<std::size_t>(outputs * parts) * itemsize(type(ep.out).dtype));
    s.launches.push_back(Launch{kernel(params, b.str()), outputs * parts, args});
    finish_partials(s, ep.out, parts, acc_t + " acc = 0", "acc += t0[i * " + std::to_string(parts) + " + p]");
  }

  // out[i] = combine of the `parts` partials of output i, in order.
  void finish_partials(Step& s, ValueId out, std::int64_t parts, const std::string& init, const std::string& combine) {
    std::ostringstream b;
    b << "    " << init << ";\n    for (qb_i64 p = 0; p < " << parts << "; ++p) " << combine << ";\n";
    b << "    y[i] = acc;\n";
    const std::vector<KernelParam> params{{pointer(type(out).dtype, true), "t0"}, {pointer(type(out).dtype, false), "y"}};
    s.launches.push_back(Launch{kernel(params, b.str()), num_elements(type(out).shape), {temp(0), value(out)}});
  }

  // ---- single nodes ------------------------------------------------------------------------

  void node(std::uint32_t i) {
    const Node& n = g().nodes[i];
    if (n.op == Op::Parameter || n.op == Op::Constant) return;
    if (complex_kernel(n)) {
      throw UnsupportedOperation(std::string(op_name(n.op)) + " of complex values is not supported on the CUDA backend "
                                     "yet (" + device_ + "); run this program on the CPU (device='cpu')",
                                 std::string(op_name(n.op)), device_);
    }
    if (has_regions(n.op)) {
      if (n.op == Op::CustomVjpLin) unsupported(n);  // only transforms consume it (the CPU rejects it too)
      if (example_loop(n, i)) return;
      Step& s = new_step(i, n.outputs);
      s.kind = Step::Region;
      return;
    }
    const ValueType& ot = type(n.outputs[0]);
    const std::int64_t count = num_elements(ot.shape);
    if (count == 0 && n.op != Op::Reshape) {
      new_step(i, n.outputs);  // empty results: buffers of no bytes, nothing runs
      return;
    }
    if (is_elementwise(n.op)) return elementwise(n, i);
    switch (n.op) {
      case Op::Reshape: {
        Step& s = new_step(i, n.outputs);
        s.kind = Step::Alias;
        s.a = n.inputs[0];
        return;
      }
      case Op::BroadcastInDim: {
        const Shape& xs = type(n.inputs[0]).shape;
        const auto xst = row_major_strides(xs);
        std::vector<std::int64_t> st(ot.shape.size(), 0);
        for (std::size_t a = 0; a < xs.size(); ++a)
          st[static_cast<std::size_t>(n.attrs.dims[a])] = xs[a] == 1 ? 0 : xst[a];
        return strided_copy(n, i, st, 0);
      }
      case Op::Transpose: {
        const auto xst = row_major_strides(type(n.inputs[0]).shape);
        std::vector<std::int64_t> st(n.attrs.dims.size());
        for (std::size_t a = 0; a < st.size(); ++a) st[a] = xst[static_cast<std::size_t>(n.attrs.dims[a])];
        return strided_copy(n, i, st, 0);
      }
      case Op::Slice: {
        const auto xst = row_major_strides(type(n.inputs[0]).shape);
        std::int64_t off = 0;
        std::vector<std::int64_t> st(xst.size());
        for (std::size_t a = 0; a < st.size(); ++a) {
          off += n.attrs.starts[a] * xst[a];
          st[a] = n.attrs.strides[a] * xst[a];
        }
        return strided_copy(n, i, st, off);
      }
      case Op::Reverse: {
        const auto rst = row_major_strides(ot.shape);
        std::vector<std::int64_t> st(rst.begin(), rst.end());
        std::int64_t off = 0;
        for (auto a : n.attrs.dims) {
          off += (ot.shape[static_cast<std::size_t>(a)] - 1) * st[static_cast<std::size_t>(a)];
          st[static_cast<std::size_t>(a)] = -st[static_cast<std::size_t>(a)];
        }
        return strided_copy(n, i, st, off);
      }
      case Op::Pad: return pad(n, i);
      case Op::Concat: return concat(n, i);
      case Op::ReduceSum: case Op::ReduceProd: case Op::ReduceMax: case Op::ReduceMin: case Op::ReduceAny:
      case Op::ReduceAll:
        return reduce(n, i);
      case Op::Cumsum: return cumsum(n, i);
      case Op::MatMul: return matmul(n, i);
      case Op::Gather: return gather(n, i);
      case Op::ScatterAdd: return scatter_add(n, i);
      case Op::Take: return take(n, i);
      case Op::Scatter: return scatter(n, i);
      case Op::Argsort: return argsort(n, i);
      case Op::SearchSorted: return searchsorted(n, i);
      case Op::Cholesky: case Op::TriangularSolve: case Op::Solve: case Op::Slogdet: case Op::Lu:
        return linalg(n, i);
      case Op::Qr: return qr(n, i);
      case Op::Eigh: return eigh(n, i);
      case Op::Svd: return svd(n, i);
      case Op::Fft: return fft(n, i);
      default: unsupported(n);
    }
  }

  // The lowered fft (fft_lowering.h): planar [2, ..., n] or real [..., n] in, planar out.
  void fft(const Node& n, std::uint32_t i) {
    const Shape& xs = type(n.inputs[0]).shape;
    FftShape shape;
    shape.part = type(n.outputs[0]).dtype;
    shape.real_input = (n.attrs.mode & 2) != 0;
    shape.inverse = (n.attrs.mode & 1) != 0;
    shape.n = xs.back();
    shape.width = type(n.outputs[0]).shape.back();
    shape.rows = num_elements(xs) / (shape.real_input ? shape.n : 2 * shape.n);
    FftLowering f = lower_fft(shape, n.inputs[0], n.outputs[0]);
    const int first_blob = static_cast<int>(plan_.blobs.size());
    for (auto& b : f.blobs) plan_.blobs.push_back(std::move(b));
    Step& s = new_step(i, n.outputs);
    s.temp_bytes = std::move(f.temp_bytes);
    for (auto& l : f.launches) {
      for (Arg& a : l.args)
        if (a.kind == Arg::Blob) a.temp += first_blob;
      s.launches.push_back(Launch{kernel(std::move(l.params), std::move(l.body)), l.count, std::move(l.args)});
    }
  }

  // A loop vmap batched, as one kernel with one thread per example, when its per-example
  // bodies have a self-contained scalar form (loop_kernel.h); false otherwise (it then runs
  // from the host as a region).
  bool example_loop(const Node& n, std::uint32_t i) {
    if (n.op != Op::Scan && n.op != Op::While) return false;
    auto k = example_loop_kernel(g(), n);
    if (!k) return false;
    std::vector<Arg> args;
    for (ValueId v : n.inputs) args.push_back(value(v));
    for (ValueId v : n.outputs) args.push_back(value(v));
    Step& s = new_step(i, n.outputs);
    if (n.op == Op::While) {
      s.kind = Step::ExampleWhile;
      args.push_back(Arg{Arg::Int, 0, -1, kExampleWhileSteps});
      args.push_back(temp(0));
      s.temp_bytes.push_back(static_cast<std::size_t>(k->batch));
    }
    s.launches.push_back(Launch{kernel(std::move(k->params), std::move(k->body)), k->batch, std::move(args)});
    ++plan_.loop_kernels;
    return true;
  }

  void elementwise(const Node& n, std::uint32_t i) {
    const ValueType& ot = type(n.outputs[0]);
    const std::int64_t count = num_elements(ot.shape);
    std::vector<KernelParam> params;
    std::vector<Arg> args;
    std::vector<std::string> operands;
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const ValueId v = n.inputs[k];
      params.push_back({pointer(type(v).dtype, true), "a" + std::to_string(k)});
      args.push_back(value(v));
      const std::int64_t m = num_elements(type(v).shape);
      if (m != count && m != 1) throw InternalError("cuda lowering: elementwise operand of another size");
      operands.push_back("a" + std::to_string(k) + (m == 1 ? "[0]" : "[i]"));
    }
    params.push_back({pointer(ot.dtype, false), "y"});
    args.push_back(value(n.outputs[0]));
    const DType in = type(n.inputs[n.op == Op::Select ? 1 : 0]).dtype;
    Step& s = new_step(i, n.outputs);
    s.launches.push_back(
        Launch{kernel(params, "    y[i] = " + elementwise_expr(n.op, in, ot.dtype, operands) + ";\n"), count, args});
  }

  void strided_copy(const Node& n, std::uint32_t i, const std::vector<std::int64_t>& strides, std::int64_t offset) {
    const ValueType& ot = type(n.outputs[0]);
    const std::vector<KernelParam> params{{pointer(ot.dtype, true), "x"}, {pointer(ot.dtype, false), "y"}};
    Step& s = new_step(i, n.outputs);
    s.launches.push_back(Launch{kernel(params, offset_code(ot.shape, strides, offset, "i", "s") + "    y[i] = x[s];\n"),
                                num_elements(ot.shape), {value(n.inputs[0]), value(n.outputs[0])}});
  }

  void pad(const Node& n, std::uint32_t i) {
    const ValueType& ot = type(n.outputs[0]);
    const Shape& xs = type(n.inputs[0]).shape;
    const auto ost = row_major_strides(ot.shape);
    std::int64_t off = 0;
    std::vector<std::int64_t> st(ost.size());
    for (std::size_t a = 0; a < st.size(); ++a) {
      off += n.attrs.starts[a] * ost[a];
      st[a] = (n.attrs.strides[a] + 1) * ost[a];
    }
    Step& s = new_step(i, n.outputs);
    const std::string t = c_type(ot.dtype);
    s.launches.push_back(Launch{kernel({{pointer(ot.dtype, true), "p"}, {pointer(ot.dtype, false), "y"}}, "    y[i] = p[0];\n"),
                                num_elements(ot.shape), {value(n.inputs[1]), value(n.outputs[0])}});
    if (num_elements(xs) == 0) return;
    s.launches.push_back(Launch{kernel({{pointer(ot.dtype, true), "x"}, {pointer(ot.dtype, false), "y"}},
                                       offset_code(xs, st, off, "i", "s") + "    y[s] = x[i];\n"),
                                num_elements(xs), {value(n.inputs[0]), value(n.outputs[0])}});
  }

  void concat(const Node& n, std::uint32_t i) {
    const ValueType& ot = type(n.outputs[0]);
    const auto axis = static_cast<std::size_t>(n.attrs.axis);
    std::int64_t outer = 1;
    for (std::size_t a = 0; a < axis; ++a) outer *= ot.shape[a];
    const std::int64_t out_row = num_elements(ot.shape) / std::max<std::int64_t>(outer, 1);
    Step& s = new_step(i, n.outputs);
    std::int64_t col = 0;
    for (ValueId v : n.inputs) {
      const std::int64_t m = num_elements(type(v).shape), row = m / std::max<std::int64_t>(outer, 1);
      if (m > 0) {
        std::ostringstream b;
        b << "    const qb_i64 o = i / " << row << ", j = i % " << row << ";\n";
        b << "    y[o * " << out_row << " + " << col << " + j] = x[i];\n";
        s.launches.push_back(Launch{kernel({{pointer(ot.dtype, true), "x"}, {pointer(ot.dtype, false), "y"}}, b.str()), m,
                                    {value(v), value(n.outputs[0])}});
      }
      col += row;
    }
  }

  void reduce(const Node& n, std::uint32_t i) {
    const ValueType& xt = type(n.inputs[0]);
    const ValueType& ot = type(n.outputs[0]);
    const DType d = xt.dtype;
    const bool fl = d == DType::f32 || d == DType::f64;
    const auto xst = row_major_strides(xt.shape);
    const std::set<std::int64_t> axes(n.attrs.dims.begin(), n.attrs.dims.end());
    Shape kept_shape, red_shape;
    std::vector<std::int64_t> kept_st, red_st;
    for (std::size_t a = 0; a < xt.shape.size(); ++a) {
      if (axes.count(static_cast<std::int64_t>(a))) {
        red_shape.push_back(xt.shape[a]);
        red_st.push_back(xst[a]);
      } else {
        kept_shape.push_back(xt.shape[a]);
        kept_st.push_back(xst[a]);
      }
    }
    const std::int64_t outputs = num_elements(kept_shape), red = num_elements(red_shape);
    // Trailing reduced axes: a thread's elements are contiguous, so threads of one output
    // take neighbouring elements; otherwise neighbouring threads take neighbouring outputs.
    bool trailing = true;
    for (std::size_t a = 0; a < xt.shape.size(); ++a)
      if (!axes.count(static_cast<std::int64_t>(a)) && a + axes.size() >= xt.shape.size()) trailing = false;
    const std::string t = c_type(d);
    std::string init, combine;  // combine: acc with `x`
    const std::string inf = d == DType::f32 ? "QB_INF_F" : "QB_INF_D";
    const std::string lo = d == DType::i32 ? "(qb_i32)(-2147483647 - 1)" : "(qb_i64)(-9223372036854775807ll - 1)";
    const std::string hi = d == DType::i32 ? "(qb_i32)2147483647" : "(qb_i64)9223372036854775807ll";
    switch (n.op) {
      case Op::ReduceSum: init = "0"; combine = fl ? "acc + x" : "qb_iadd(acc, x)"; break;
      case Op::ReduceProd: init = "1"; combine = fl ? "acc * x" : "qb_imul(acc, x)"; break;
      case Op::ReduceMax: init = fl ? "-" + inf : lo; combine = fl ? "qb_max(acc, x)" : "qb_imax(acc, x)"; break;
      case Op::ReduceMin: init = fl ? inf : hi; combine = fl ? "qb_min(acc, x)" : "qb_imin(acc, x)"; break;
      case Op::ReduceAny: init = "0"; combine = "(qb_u8)(acc | (x != 0))"; break;
      case Op::ReduceAll: init = "1"; combine = "(qb_u8)(acc & (x != 0))"; break;
      default: unsupported(n);
    }
    if (d == DType::bool_ && n.op != Op::ReduceAny && n.op != Op::ReduceAll) unsupported(n);
    const std::int64_t parts = parts_for(outputs, red);
    std::ostringstream b;
    if (trailing) b << "    const qb_i64 o = i / " << parts << ", p = i % " << parts << ";\n";
    else b << "    const qb_i64 p = i / " << outputs << ", o = i % " << outputs << ";\n";
    b << offset_code(kept_shape, kept_st, 0, "o", "ob");
    b << "    " << t << " acc = " << init << ";\n";
    b << "    for (qb_i64 r = p; r < " << red << "; r += " << parts << ") {\n";
    b << offset_code(red_shape, red_st, 0, "r", "rb");
    b << "    const " << t << " x = a[ob + rb];\n    acc = " << combine << ";\n    }\n";
    Step& s = new_step(i, n.outputs);
    if (parts == 1) {
      b << "    y[o] = acc;\n";
      s.launches.push_back(Launch{kernel({{pointer(d, true), "a"}, {pointer(ot.dtype, false), "y"}}, b.str()), outputs,
                                  {value(n.inputs[0]), value(n.outputs[0])}});
      return;
    }
    b << "    t0[o * " << parts << " + p] = acc;\n";
    s.temp_bytes.push_back(static_cast<std::size_t>(outputs * parts) * itemsize(d));
    s.launches.push_back(Launch{kernel({{pointer(d, true), "a"}, {pointer(d, false), "t0"}}, b.str()), outputs * parts,
                                {value(n.inputs[0]), temp(0)}});
    // The partials combine as the elements did: the same expression of `x`.
    finish_partials(s, n.outputs[0], parts, t + " acc = " + init,
                    "{ const " + t + " x = t0[i * " + std::to_string(parts) + " + p]; acc = " + combine + "; }");
  }

  void cumsum(const Node& n, std::uint32_t i) {
    const ValueType& ot = type(n.outputs[0]);
    const auto axis = static_cast<std::size_t>(n.attrs.axis);
    std::int64_t outer = 1, inner = 1;
    for (std::size_t a = 0; a < axis; ++a) outer *= ot.shape[a];
    for (std::size_t a = axis + 1; a < ot.shape.size(); ++a) inner *= ot.shape[a];
    const std::int64_t len = ot.shape[axis];
    const bool fl = ot.dtype == DType::f32 || ot.dtype == DType::f64;
    std::ostringstream b;
    b << "    const qb_i64 oo = i / " << inner << ", ii = i % " << inner << ";\n";
    b << "    " << c_type(ot.dtype) << " acc = 0;\n";
    b << "    for (qb_i64 q = 0; q < " << len << "; ++q) {\n";
    b << "      const qb_i64 r = " << (n.attrs.reverse ? std::to_string(len - 1) + " - q" : std::string("q")) << ";\n";
    b << "      const qb_i64 e = (oo * " << len << " + r) * " << inner << " + ii;\n";
    b << "      acc = " << (fl ? "acc + x[e]" : "qb_iadd(acc, x[e])") << ";\n      y[e] = acc;\n    }\n";
    Step& s = new_step(i, n.outputs);
    s.launches.push_back(Launch{kernel({{pointer(ot.dtype, true), "x"}, {pointer(ot.dtype, false), "y"}}, b.str()),
                                outer * inner, {value(n.inputs[0]), value(n.outputs[0])}});
  }

  void matmul(const Node& n, std::uint32_t i) {
    const ValueType& ot = type(n.outputs[0]);
    if (ot.dtype != DType::f32 && ot.dtype != DType::f64) {
      throw UnsupportedOperation("matmul of " + std::string(dtype_name(ot.dtype)) + " arrays is not supported on " +
                                     device_ + " (cuBLAS multiplies floats); convert with astype(float32)",
                                 "matmul", device_);
    }
    const Shape& xs = type(n.inputs[0]).shape;
    const std::size_t r = xs.size();
    Step& s = new_step(i, n.outputs);
    s.kind = Step::Gemm;
    s.a = n.inputs[0];
    s.b = n.inputs[1];
    s.dtype = ot.dtype;
    s.batch = num_elements(std::span(xs).first(r - 2));
    s.m = xs[r - 2];
    s.k = xs[r - 1];
    s.n = ot.shape[r - 1];
  }

  // ---- indexing and sorting -----------------------------------------------------------------

  struct Split {
    std::int64_t outer = 1, len = 1, inner = 1;
  };
  static Split split(const Shape& shape, std::int64_t axis) {
    Split s;
    for (std::int64_t a = 0; a < axis; ++a) s.outer *= shape[static_cast<std::size_t>(a)];
    s.len = shape[static_cast<std::size_t>(axis)];
    for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < shape.size(); ++a) s.inner *= shape[a];
    return s;
  }
  Arg blob(std::vector<std::int64_t> data) {
    plan_.blobs.push_back(std::move(data));
    return Arg{Arg::Blob, 0, static_cast<int>(plan_.blobs.size() - 1), 0};
  }
  // y = x, elementwise (the start of a scatter).
  void copy_launch(Step& s, ValueId x, ValueId y) {
    const DType d = type(y).dtype;
    s.launches.push_back(Launch{kernel({{pointer(d, true), "x"}, {pointer(d, false), "y"}}, "    y[i] = x[i];\n"),
                                num_elements(type(y).shape), {value(x), value(y)}});
  }

  void gather(const Node& n, std::uint32_t i) {  // static indices
    const DType d = type(n.outputs[0]).dtype;
    const Split sp = split(type(n.inputs[0]).shape, n.attrs.axis);
    const auto k = static_cast<std::int64_t>(n.attrs.dims.size());
    std::ostringstream b;
    b << "    const qb_i64 o = i / " << k * sp.inner << ", j = (i / " << sp.inner << ") % " << k << ", ii = i % "
      << sp.inner << ";\n";
    b << "    y[i] = x[(o * " << sp.len << " + idx[j]) * " << sp.inner << " + ii];\n";
    Step& s = new_step(i, n.outputs);
    s.launches.push_back(Launch{kernel({{pointer(d, true), "x"}, {"const qb_i64*", "idx"}, {pointer(d, false), "y"}}, b.str()),
                                num_elements(type(n.outputs[0]).shape),
                                {value(n.inputs[0]), blob(n.attrs.dims), value(n.outputs[0])}});
  }

  // One thread per (outer, inner) position applies its updates in index order, so repeated
  // indices combine in the same order on every run (the CPU kernel's order too).
  void scatter_add(const Node& n, std::uint32_t i) {  // static indices, add
    const DType d = type(n.outputs[0]).dtype;
    const Split sp = split(type(n.outputs[0]).shape, n.attrs.axis);
    const auto k = static_cast<std::int64_t>(n.attrs.dims.size());
    Step& s = new_step(i, n.outputs);
    copy_launch(s, n.inputs[0], n.outputs[0]);
    std::ostringstream b;
    b << "    const qb_i64 o = i / " << sp.inner << ", ii = i % " << sp.inner << ";\n";
    b << "    for (qb_i64 j = 0; j < " << k << "; ++j) {\n";
    b << "      const qb_i64 at = (o * " << sp.len << " + idx[j]) * " << sp.inner << " + ii;\n";
    b << "      y[at] = y[at] + u[(o * " << k << " + j) * " << sp.inner << " + ii];\n    }\n";
    s.launches.push_back(Launch{kernel({{pointer(d, true), "u"}, {"const qb_i64*", "idx"}, {pointer(d, false), "y"}}, b.str()),
                                sp.outer * sp.inner, {value(n.inputs[1]), blob(n.attrs.dims), value(n.outputs[0])}});
  }

  void take(const Node& n, std::uint32_t i) {
    const DType d = type(n.outputs[0]).dtype, id_t = type(n.inputs[1]).dtype;
    const Split sp = split(type(n.inputs[0]).shape, n.attrs.axis);
    const std::int64_t k = num_elements(type(n.inputs[1]).shape);
    std::ostringstream b;
    b << "    const qb_i64 o = i / " << k * sp.inner << ", j = (i / " << sp.inner << ") % " << k << ", ii = i % "
      << sp.inner << ";\n";
    b << "    qb_i64 at = (qb_i64)idx[j];\n";
    b << "    if (at < 0 || at >= " << sp.len << ") {\n";
    if (n.attrs.mode == 1) b << "      y[i] = 0;\n      continue;\n";
    else b << "      at = at < 0 ? 0 : " << sp.len - 1 << ";\n";
    b << "    }\n    y[i] = x[(o * " << sp.len << " + at) * " << sp.inner << " + ii];\n";
    Step& s = new_step(i, n.outputs);
    s.launches.push_back(Launch{kernel({{pointer(d, true), "x"}, {pointer(id_t, true), "idx"}, {pointer(d, false), "y"}},
                                       b.str()),
                                num_elements(type(n.outputs[0]).shape),
                                {value(n.inputs[0]), value(n.inputs[1]), value(n.outputs[0])}});
  }

  void scatter(const Node& n, std::uint32_t i) {
    const DType d = type(n.outputs[0]).dtype, id_t = type(n.inputs[1]).dtype;
    const Split sp = split(type(n.outputs[0]).shape, n.attrs.axis);
    const std::int64_t k = num_elements(type(n.inputs[1]).shape);
    const bool fl = d == DType::f32 || d == DType::f64;
    std::string combine;  // of y[at] and v
    switch (n.attrs.mode) {
      case kScatterAdd: combine = fl ? "y[at] + v" : "qb_iadd(y[at], v)"; break;
      case kScatterSet: combine = "v"; break;
      case kScatterMul: combine = fl ? "y[at] * v" : "qb_imul(y[at], v)"; break;
      case kScatterMin: combine = fl ? "qb_min(y[at], v)" : "qb_imin(y[at], v)"; break;
      case kScatterMax: combine = fl ? "qb_max(y[at], v)" : "qb_imax(y[at], v)"; break;
      default: throw InternalError("cuda lowering: unknown scatter mode");
    }
    if (d == DType::bool_ && n.attrs.mode != kScatterSet) unsupported(n);
    Step& s = new_step(i, n.outputs);
    copy_launch(s, n.inputs[0], n.outputs[0]);
    std::ostringstream b;
    b << "    const qb_i64 o = i / " << sp.inner << ", ii = i % " << sp.inner << ";\n";
    b << "    for (qb_i64 j = 0; j < " << k << "; ++j) {\n";
    b << "      const qb_i64 w = (qb_i64)idx[j];\n      if (w < 0 || w >= " << sp.len << ") continue;\n";
    b << "      const qb_i64 at = (o * " << sp.len << " + w) * " << sp.inner << " + ii;\n";
    b << "      const " << c_type(d) << " v = u[(o * " << k << " + j) * " << sp.inner << " + ii];\n";
    b << "      y[at] = " << combine << ";\n    }\n";
    s.launches.push_back(Launch{kernel({{pointer(id_t, true), "idx"}, {pointer(d, true), "u"}, {pointer(d, false), "y"}},
                                       b.str()),
                                sp.outer * sp.inner, {value(n.inputs[1]), value(n.inputs[2]), value(n.outputs[0])}});
  }

  // NaN-last ascending comparison of two elements (descending mirrors it).
  static std::string less_expr(DType d, const std::string& a, const std::string& b) {
    if (d == DType::f32 || d == DType::f64) return "(!(" + a + " != " + a + ") && ((" + b + " != " + b + ") || " + a + " < " + b + "))";
    return "(" + a + " < " + b + ")";
  }

  // One thread per row: a bottom-up stable merge sort of the row's indices (the temporary
  // holds the second buffer), so equal elements keep their index order as the CPU's
  // stable_sort does.
  void argsort(const Node& n, std::uint32_t i) {
    const ValueType& xt = type(n.inputs[0]);
    const DType d = xt.dtype, out_t = type(n.outputs[0]).dtype;
    const std::int64_t len = xt.shape.back(), rows = num_elements(xt.shape) / std::max<std::int64_t>(len, 1);
    const bool desc = n.attrs.mode == 1;
    std::ostringstream b;
    const std::string it = c_type(out_t);
    b << "    const qb_i64 base = i * " << len << ";\n";
    b << "    " << it << "* a = y + base;\n    " << it << "* w2 = t0 + base;\n";
    b << "    for (qb_i64 p = 0; p < " << len << "; ++p) a[p] = (" << it << ")p;\n";
    b << "    " << it << "* w = a; " << it << "* z = w2;\n";
    b << "    for (qb_i64 width = 1; width < " << len << "; width *= 2) {\n";
    b << "      for (qb_i64 lo = 0; lo < " << len << "; lo += 2 * width) {\n";
    b << "        const qb_i64 mid = lo + width < " << len << " ? lo + width : " << len << ";\n";
    b << "        const qb_i64 hi = lo + 2 * width < " << len << " ? lo + 2 * width : " << len << ";\n";
    b << "        qb_i64 p = lo, q = mid, r = lo;\n";
    // Take from the right run only when its head goes strictly before the left run's head.
    const std::string right_first = desc ? less_expr(d, "x[base + w[p]]", "x[base + w[q]]")
                                         : less_expr(d, "x[base + w[q]]", "x[base + w[p]]");
    b << "        while (p < mid && q < hi) z[r++] = " << right_first << " ? w[q++] : w[p++];\n";
    b << "        while (p < mid) z[r++] = w[p++];\n        while (q < hi) z[r++] = w[q++];\n";
    b << "      }\n      " << it << "* sw = w; w = z; z = sw;\n    }\n";
    b << "    if (w != a) for (qb_i64 p = 0; p < " << len << "; ++p) a[p] = w[p];\n";
    Step& s = new_step(i, n.outputs);
    s.temp_bytes.push_back(static_cast<std::size_t>(num_elements(xt.shape)) * itemsize(out_t));
    s.launches.push_back(Launch{kernel({{pointer(d, true), "x"}, {pointer(out_t, false), "t0"}, {pointer(out_t, false), "y"}},
                                       b.str()),
                                rows, {value(n.inputs[0]), temp(0), value(n.outputs[0])}});
  }

  void searchsorted(const Node& n, std::uint32_t i) {
    const ValueType& at = type(n.inputs[0]);
    const DType d = at.dtype, out_t = type(n.outputs[0]).dtype;
    const std::int64_t len = at.shape.back(), m = type(n.inputs[1]).shape.back();
    const bool right = n.attrs.mode == 1;
    std::ostringstream b;
    b << "    const qb_i64 r = i / " << m << ";\n    const " << c_type(d) << " val = v[i];\n";
    b << "    qb_i64 lo = 0, hi = " << len << ";\n";
    b << "    while (lo < hi) {\n      const qb_i64 mid = lo + (hi - lo) / 2;\n      const " << c_type(d)
      << " e = a[r * " << len << " + mid];\n";
    // lower_bound: first e with !(e < val); upper_bound: first e with val < e.
    if (right) b << "      if (" << less_expr(d, "val", "e") << ") hi = mid; else lo = mid + 1;\n";
    else b << "      if (" << less_expr(d, "e", "val") << ") lo = mid + 1; else hi = mid;\n";
    b << "    }\n    y[i] = (" << c_type(out_t) << ")lo;\n";
    Step& s = new_step(i, n.outputs);
    s.launches.push_back(Launch{kernel({{pointer(d, true), "a"}, {pointer(d, true), "v"}, {pointer(out_t, false), "y"}}, b.str()),
                                num_elements(type(n.outputs[0]).shape),
                                {value(n.inputs[0]), value(n.inputs[1]), value(n.outputs[0])}});
  }

  // ---- dense linear algebra: one thread per matrix ------------------------------------------
  //
  // The CPU's plain-loop algorithms for small matrices (backends/cpu/linalg.cc: Cholesky,
  // triangular solves, LU with partial pivoting), one matrix per thread, for the batched
  // small systems of PINNs and implicit steps. Larger matrices need cuSOLVER (not built yet).

  static constexpr std::int64_t kMaxThreadMatrix = 128;

  // x (n x k, holding the right-hand side) <- op(A)^-1 x; `a` and `x` name pointers.
  static std::string triangular_code(const std::string& a, const std::string& x, std::int64_t n, std::int64_t k, int mode) {
    const bool lower = mode & 1, trans = mode & 2, unit = mode & 4, forward = lower != trans;
    auto at = [&](const std::string& r, const std::string& c) {
      return trans ? a + "[(" + c + ") * " + std::to_string(n) + " + (" + r + ")]"
                   : a + "[(" + r + ") * " + std::to_string(n) + " + (" + c + ")]";
    };
    std::ostringstream b;
    b << "    for (qb_i64 s = 0; s < " << n << "; ++s) {\n";
    b << "      const qb_i64 r = " << (forward ? "s" : std::to_string(n - 1) + " - s") << ";\n";
    b << "      for (qb_i64 c0 = 0; c0 < s; ++c0) {\n";
    b << "        const qb_i64 c = " << (forward ? "c0" : std::to_string(n - 1) + " - c0") << ";\n";
    b << "        const auto f = " << at("r", "c") << ";\n";
    b << "        for (qb_i64 j = 0; j < " << k << "; ++j) " << x << "[r * " << k << " + j] -= f * " << x << "[c * " << k
      << " + j];\n      }\n";
    if (!unit) {
      b << "      const auto d = " << at("r", "r") << ";\n";
      b << "      for (qb_i64 j = 0; j < " << k << "; ++j) " << x << "[r * " << k << " + j] /= d;\n";
    }
    b << "    }\n";
    return b.str();
  }

  // LU with partial pivoting of lu (n x n, in place), the row operations applied to x (n x k)
  // when k > 0; `sign` (declared by the caller) gets the permutation's sign, and
  // piv[j] = the pivot row when `piv` is given (as the element type).
  static std::string lu_code(const std::string& t, std::int64_t n, std::int64_t k, const std::string& piv) {
    std::ostringstream b;
    b << "    for (qb_i64 j = 0; j < " << n << "; ++j) {\n      qb_i64 p = j;\n";
    b << "      for (qb_i64 r = j + 1; r < " << n << "; ++r) if (fabs(lu[r * " << n << " + j]) > fabs(lu[p * " << n
      << " + j])) p = r;\n";
    if (!piv.empty()) b << "      " << piv << "[j] = (" << t << ")p;\n";
    b << "      if (p != j) {\n        sign = -sign;\n";
    b << "        for (qb_i64 c = 0; c < " << n << "; ++c) { const " << t << " w = lu[j * " << n << " + c]; lu[j * " << n
      << " + c] = lu[p * " << n << " + c]; lu[p * " << n << " + c] = w; }\n";
    if (k > 0)
      b << "        for (qb_i64 c = 0; c < " << k << "; ++c) { const " << t << " w = x[j * " << k << " + c]; x[j * " << k
        << " + c] = x[p * " << k << " + c]; x[p * " << k << " + c] = w; }\n";
    b << "      }\n      const " << t << " piv = lu[j * " << n << " + j];\n      if (piv == 0) continue;\n";
    b << "      for (qb_i64 r = j + 1; r < " << n << "; ++r) {\n        const " << t << " f = lu[r * " << n
      << " + j] / piv;\n        lu[r * " << n << " + j] = f;\n";
    b << "        for (qb_i64 c = j + 1; c < " << n << "; ++c) lu[r * " << n << " + c] -= f * lu[j * " << n << " + c];\n";
    if (k > 0) b << "        for (qb_i64 c = 0; c < " << k << "; ++c) x[r * " << k << " + c] -= f * x[j * " << k << " + c];\n";
    b << "      }\n    }\n";
    return b.str();
  }

  void linalg(const Node& n, std::uint32_t i) {
    const Shape& as = type(n.inputs[0]).shape;
    const DType d = type(n.outputs[0]).dtype;
    const std::int64_t dim = as.back(), batch = num_elements(std::span(as).first(as.size() - 2));
    const std::int64_t k = n.inputs.size() > 1 ? type(n.inputs[1]).shape.back() : 0;
    if (dim > kMaxThreadMatrix) {
      const std::string op(op_name(n.op));
      throw UnsupportedOperation(op + " of " + std::to_string(dim) + "x" + std::to_string(dim) + " matrices is not supported on " +
                                     device_ + " yet (its kernels take one matrix per thread up to " +
                                     std::to_string(kMaxThreadMatrix) + "; cuSOLVER is not built in); run this "
                                     "program on the CPU (device='cpu')",
                                 op, device_);
    }
    const std::string t = c_type(d), nan = d == DType::f32 ? "QB_NAN_F" : "QB_NAN_D";
    const std::string sq = d == DType::f32 ? "sqrtf" : "sqrt", lg = d == DType::f32 ? "logf" : "log";
    const std::int64_t mat = dim * dim;
    std::ostringstream b;
    Step& s = new_step(i, n.outputs);
    std::vector<KernelParam> params{{pointer(d, true), "a"}};
    std::vector<Arg> args{value(n.inputs[0])};
    switch (n.op) {
      case Op::Cholesky:
        b << "    const " << t << "* A = a + i * " << mat << ";\n    " << t << "* l = y + i * " << mat << ";\n";
        b << "    for (qb_i64 q = 0; q < " << mat << "; ++q) l[q] = 0;\n    bool ok = true;\n";
        b << "    for (qb_i64 j = 0; j < " << dim << " && ok; ++j) {\n      " << t << " dd = A[j * " << dim << " + j];\n";
        b << "      for (qb_i64 c = 0; c < j; ++c) dd -= l[j * " << dim << " + c] * l[j * " << dim << " + c];\n";
        b << "      if (!(dd > 0)) { ok = false; break; }\n      const " << t << " ljj = " << sq << "(dd);\n";
        b << "      l[j * " << dim << " + j] = ljj;\n      for (qb_i64 r = j + 1; r < " << dim << "; ++r) {\n";
        b << "        " << t << " v = A[r * " << dim << " + j];\n";
        b << "        for (qb_i64 c = 0; c < j; ++c) v -= l[r * " << dim << " + c] * l[j * " << dim << " + c];\n";
        b << "        l[r * " << dim << " + j] = v / ljj;\n      }\n    }\n";
        b << "    if (!ok) for (qb_i64 q = 0; q < " << mat << "; ++q) l[q] = " << nan << ";\n";
        break;
      case Op::TriangularSolve:
        params.push_back({pointer(d, true), "bb"});
        args.push_back(value(n.inputs[1]));
        b << "    const " << t << "* A = a + i * " << mat << ";\n    " << t << "* x = y + i * " << dim * k << ";\n";
        b << "    for (qb_i64 q = 0; q < " << dim * k << "; ++q) x[q] = bb[i * " << dim * k << " + q];\n";
        b << triangular_code("A", "x", dim, k, static_cast<int>(n.attrs.mode));
        break;
      case Op::Solve:
        params.push_back({pointer(d, true), "bb"});
        args.push_back(value(n.inputs[1]));
        params.push_back({pointer(d, false), "t0"});
        args.push_back(temp(0));
        s.temp_bytes.push_back(static_cast<std::size_t>(batch * mat) * itemsize(d));
        b << "    " << t << "* lu = t0 + i * " << mat << ";\n    " << t << "* x = y + i * " << dim * k << ";\n";
        b << "    for (qb_i64 q = 0; q < " << mat << "; ++q) lu[q] = a[i * " << mat << " + q];\n";
        b << "    for (qb_i64 q = 0; q < " << dim * k << "; ++q) x[q] = bb[i * " << dim * k << " + q];\n";
        b << "    " << t << " sign = 1;\n" << lu_code(t, dim, k, "") << "    (void)sign;\n";
        b << triangular_code("lu", "x", dim, k, 0);
        break;
      case Op::Slogdet:
        params.push_back({pointer(d, false), "t0"});
        args.push_back(temp(0));
        s.temp_bytes.push_back(static_cast<std::size_t>(batch * mat) * itemsize(d));
        b << "    " << t << "* lu = t0 + i * " << mat << ";\n";
        b << "    for (qb_i64 q = 0; q < " << mat << "; ++q) lu[q] = a[i * " << mat << " + q];\n";
        b << "    " << t << " sign = 1, logabs = 0;\n" << lu_code(t, dim, 0, "");
        b << "    for (qb_i64 j = 0; j < " << dim << "; ++j) {\n      const " << t << " dd = lu[j * " << dim
          << " + j];\n      if (dd < 0) sign = -sign;\n      logabs += " << lg << "(fabs(dd));\n    }\n";
        b << "    if (qb_isinf(logabs) && logabs < 0) sign = 0;\n    if (qb_isnan(logabs)) sign = " << nan << ";\n";
        b << "    y[2 * i] = sign;\n    y[2 * i + 1] = logabs;\n";
        break;
      default: {  // Lu: [perm, pivots, L\U] per matrix
        const std::int64_t omat = (dim + 2) * dim;
        b << "    " << t << "* o = y + i * " << omat << ";\n    " << t << "* lu = o + " << 2 * dim << ";\n";
        b << "    for (qb_i64 q = 0; q < " << mat << "; ++q) lu[q] = a[i * " << mat << " + q];\n";
        b << "    " << t << " sign = 1;\n" << lu_code(t, dim, 0, "(o + " + std::to_string(dim) + ")") << "    (void)sign;\n";
        b << "    for (qb_i64 r = 0; r < " << dim << "; ++r) o[r] = (" << t << ")r;\n";
        b << "    for (qb_i64 r = 0; r < " << dim << "; ++r) {\n      const qb_i64 p = (qb_i64)o[" << dim
          << " + r];\n      const " << t << " w = o[r]; o[r] = o[p]; o[p] = w;\n    }\n";
        break;
      }
    }
    params.push_back({pointer(d, false), "y"});
    args.push_back(value(n.outputs[0]));
    s.launches.push_back(Launch{kernel(params, b.str()), batch, args});
  }

  // Householder QR as LAPACK's unblocked geqr2 and org2r compute it (the same reflector
  // signs: beta = -sign(alpha) |(alpha, x)|, tau = 0 for a zero column below the diagonal),
  // so Q and R agree with the CPU's to rounding. out: rows 0..m-1 Q (m x qc), rows m.. R.
  void qr(const Node& n, std::uint32_t i) {
    const Shape& as = type(n.inputs[0]).shape;
    const DType d = type(n.outputs[0]).dtype;
    const std::size_t r = as.size();
    const std::int64_t m = as[r - 2], nc = as[r - 1], batch = num_elements(std::span(as).first(r - 2));
    const std::int64_t k = std::min(m, nc), qc = n.attrs.mode == 1 ? m : k, w = std::max(qc, nc);
    if (std::max(m, nc) > kMaxThreadMatrix) {
      throw UnsupportedOperation("qr of " + std::to_string(m) + "x" + std::to_string(nc) + " matrices is not supported on " +
                                     device_ + " yet (one matrix per thread up to " + std::to_string(kMaxThreadMatrix) +
                                     "; cuSOLVER is not built in); run this program on the CPU (device='cpu')",
                                 "qr", device_);
    }
    const std::string t = c_type(d), sq = d == DType::f32 ? "sqrtf" : "sqrt", hy = d == DType::f32 ? "hypotf" : "hypot";
    const std::int64_t per = m * nc + std::max<std::int64_t>(k, 1), omat = (m + qc) * w;
    std::ostringstream b;
    b << "    " << t << "* f = t0 + i * " << per << ";\n    " << t << "* tau = f + " << m * nc << ";\n";
    b << "    " << t << "* o = y + i * " << omat << ";\n";
    b << "    for (qb_i64 q = 0; q < " << m * nc << "; ++q) f[q] = a[i * " << m * nc << " + q];\n";
    b << "    for (qb_i64 q = 0; q < " << omat << "; ++q) o[q] = 0;\n";
    b << "    for (qb_i64 j = 0; j < " << k << "; ++j) {\n";
    b << "      const " << t << " alpha = f[j * " << nc << " + j];\n      " << t << " ss = 0;\n";
    b << "      for (qb_i64 r = j + 1; r < " << m << "; ++r) ss += f[r * " << nc << " + j] * f[r * " << nc << " + j];\n";
    b << "      if (ss == 0) { tau[j] = 0; continue; }\n";
    b << "      const " << t << " h = " << hy << "(alpha, " << sq << "(ss));\n";
    b << "      const " << t << " beta = alpha >= 0 ? -h : h;\n";
    b << "      tau[j] = (beta - alpha) / beta;\n      const " << t << " scale = 1 / (alpha - beta);\n";
    b << "      for (qb_i64 r = j + 1; r < " << m << "; ++r) f[r * " << nc << " + j] *= scale;\n";
    b << "      f[j * " << nc << " + j] = beta;\n";
    b << "      for (qb_i64 c = j + 1; c < " << nc << "; ++c) {\n        " << t << " s = f[j * " << nc << " + c];\n";
    b << "        for (qb_i64 r = j + 1; r < " << m << "; ++r) s += f[r * " << nc << " + j] * f[r * " << nc << " + c];\n";
    b << "        s *= tau[j];\n        f[j * " << nc << " + c] -= s;\n";
    b << "        for (qb_i64 r = j + 1; r < " << m << "; ++r) f[r * " << nc << " + c] -= s * f[r * " << nc << " + j];\n";
    b << "      }\n    }\n";
    // R: the upper triangle of f in rows m.. (rows past k stay zero).
    b << "    for (qb_i64 r = 0; r < " << std::min(qc, k) << "; ++r) for (qb_i64 c = r; c < " << nc << "; ++c) o[("
      << m << " + r) * " << w << " + c] = f[r * " << nc << " + c];\n";
    // Q = H_0 ... H_{k-1} applied to the first qc columns of the identity, backwards.
    b << "    for (qb_i64 r = 0; r < " << std::min(m, qc) << "; ++r) o[r * " << w << " + r] = 1;\n";
    b << "    for (qb_i64 j = " << k - 1 << "; j >= 0; --j) {\n      if (tau[j] == 0) continue;\n";
    b << "      for (qb_i64 c = 0; c < " << qc << "; ++c) {\n        " << t << " s = o[j * " << w << " + c];\n";
    b << "        for (qb_i64 r = j + 1; r < " << m << "; ++r) s += f[r * " << nc << " + j] * o[r * " << w << " + c];\n";
    b << "        s *= tau[j];\n        o[j * " << w << " + c] -= s;\n";
    b << "        for (qb_i64 r = j + 1; r < " << m << "; ++r) o[r * " << w << " + c] -= s * f[r * " << nc << " + j];\n";
    b << "      }\n    }\n";
    Step& s = new_step(i, n.outputs);
    s.temp_bytes.push_back(static_cast<std::size_t>(batch * per) * itemsize(d));
    s.launches.push_back(Launch{kernel({{pointer(d, true), "a"}, {pointer(d, false), "t0"}, {pointer(d, false), "y"}}, b.str()),
                                batch, {value(n.inputs[0]), temp(0), value(n.outputs[0])}});
  }

  // Symmetric eigendecomposition by cyclic Jacobi rotations (one matrix per thread), of the
  // matrix read from A's lower triangle as LAPACK's syevd reads it. Eigenvalues ascending;
  // each eigenvector is determined up to sign (and within a repeated eigenvalue's space up
  // to rotation), so it may differ from the CPU's (LAPACK's) by that sign, as any two
  // implementations may. NaN input gives NaN everywhere (LAPACK's may leave an eigenvalue
  // of a decoupled block finite).
  void eigh(const Node& n, std::uint32_t i) {
    const Shape& as = type(n.inputs[0]).shape;
    const DType d = type(n.outputs[0]).dtype;
    const std::int64_t dim = as.back(), batch = num_elements(std::span(as).first(as.size() - 2));
    if (dim > kMaxThreadMatrix) {
      throw UnsupportedOperation("eigh of " + std::to_string(dim) + "x" + std::to_string(dim) +
                                     " matrices is not supported on " + device_ + " yet (one matrix per thread up to " +
                                     std::to_string(kMaxThreadMatrix) +
                                     "; cuSOLVER is not built in); run this program on the CPU (device='cpu')",
                                 "eigh", device_);
    }
    const std::string t = c_type(d), sq = d == DType::f32 ? "sqrtf" : "sqrt", nan = d == DType::f32 ? "QB_NAN_F" : "QB_NAN_D";
    const std::string eps = d == DType::f32 ? "1.1920929e-07f" : "2.220446049250313e-16";
    const std::int64_t mat = dim * dim, omat = (dim + 1) * dim;
    std::ostringstream b;
    b << "    " << t << "* S = t0 + i * " << mat << ";\n    " << t << "* o = y + i * " << omat << ";\n";
    b << "    " << t << "* V = o + " << dim << ";\n    bool bad = false;\n";
    b << "    for (qb_i64 r = 0; r < " << dim << "; ++r) for (qb_i64 c = 0; c <= r; ++c) {\n";
    b << "      const " << t << " v = a[i * " << mat << " + r * " << dim << " + c];\n";
    b << "      if (v != v) bad = true;\n      S[r * " << dim << " + c] = v; S[c * " << dim << " + r] = v;\n    }\n";
    b << "    for (qb_i64 q = 0; q < " << mat << "; ++q) V[q] = 0;\n";
    b << "    for (qb_i64 r = 0; r < " << dim << "; ++r) V[r * " << dim << " + r] = 1;\n";
    b << "    for (int sweep = 0; sweep < 100 && !bad; ++sweep) {\n      bool rotated = false;\n";
    b << "      for (qb_i64 p = 0; p < " << dim << "; ++p) for (qb_i64 q = p + 1; q < " << dim << "; ++q) {\n";
    b << "        const " << t << " apq = S[p * " << dim << " + q], app = S[p * " << dim << " + p], aqq = S[q * " << dim
      << " + q];\n";
    // Skip an entry already negligible beside its diagonal (it can only be rounding).
    b << "        if (fabs(apq) <= " << eps << " * 0.5 * " << sq << "(fabs(app * aqq)) || apq == 0) { S[p * " << dim
      << " + q] = 0; S[q * " << dim << " + p] = 0; continue; }\n";
    b << "        rotated = true;\n";
    b << "        const " << t << " theta = (aqq - app) / (2 * apq);\n";
    b << "        const " << t << " tt = (theta >= 0 ? 1 : -1) / (fabs(theta) + " << sq << "(theta * theta + 1));\n";
    b << "        const " << t << " c = 1 / " << sq << "(tt * tt + 1), s = tt * c;\n";
    b << "        for (qb_i64 r = 0; r < " << dim << "; ++r) {\n";
    b << "          const " << t << " x = S[r * " << dim << " + p], z = S[r * " << dim << " + q];\n";
    b << "          S[r * " << dim << " + p] = c * x - s * z; S[r * " << dim << " + q] = s * x + c * z;\n        }\n";
    b << "        for (qb_i64 r = 0; r < " << dim << "; ++r) {\n";
    b << "          const " << t << " x = S[p * " << dim << " + r], z = S[q * " << dim << " + r];\n";
    b << "          S[p * " << dim << " + r] = c * x - s * z; S[q * " << dim << " + r] = s * x + c * z;\n        }\n";
    b << "        S[p * " << dim << " + q] = 0; S[q * " << dim << " + p] = 0;\n";
    b << "        for (qb_i64 r = 0; r < " << dim << "; ++r) {\n";
    b << "          const " << t << " x = V[r * " << dim << " + p], z = V[r * " << dim << " + q];\n";
    b << "          V[r * " << dim << " + p] = c * x - s * z; V[r * " << dim << " + q] = s * x + c * z;\n        }\n";
    b << "      }\n      if (!rotated) break;\n    }\n";
    b << "    if (bad) { for (qb_i64 q = 0; q < " << omat << "; ++q) o[q] = " << nan << "; continue; }\n";
    b << "    for (qb_i64 r = 0; r < " << dim << "; ++r) o[r] = S[r * " << dim << " + r];\n";
    // Ascending order (a stable selection sort), the columns of V with them.
    b << "    for (qb_i64 r = 0; r < " << dim << "; ++r) {\n      qb_i64 best = r;\n";
    b << "      for (qb_i64 c = r + 1; c < " << dim << "; ++c) if (o[c] < o[best]) best = c;\n";
    b << "      if (best == r) continue;\n      const " << t << " w = o[r]; o[r] = o[best]; o[best] = w;\n";
    b << "      for (qb_i64 q = 0; q < " << dim << "; ++q) { const " << t << " v = V[q * " << dim << " + r]; V[q * " << dim
      << " + r] = V[q * " << dim << " + best]; V[q * " << dim << " + best] = v; }\n    }\n";
    Step& s = new_step(i, n.outputs);
    s.temp_bytes.push_back(static_cast<std::size_t>(batch * mat) * itemsize(d));
    s.launches.push_back(Launch{kernel({{pointer(d, true), "a"}, {pointer(d, false), "t0"}, {pointer(d, false), "y"}}, b.str()),
                                batch, {value(n.inputs[0]), temp(0), value(n.outputs[0])}});
  }

  // SVD by one-sided Jacobi (Hestenes) rotations of the columns of the taller of A and A^T
  // (one matrix per thread): the columns converge to U S, the rotations accumulate V. The
  // singular values come out descending as LAPACK's; the vectors of a singular value are
  // determined up to sign (and rotation within repeated values), so they may differ from
  // the CPU's by that. Columns of U for zero singular values, and full_matrices' extra
  // columns, are completed to an orthonormal basis (Gram-Schmidt against unit vectors).
  void svd(const Node& n, std::uint32_t i) {
    const Shape& as = type(n.inputs[0]).shape;
    const DType d = type(n.outputs[0]).dtype;
    const std::size_t rk = as.size();
    const std::int64_t m = as[rk - 2], nn = as[rk - 1], batch = num_elements(std::span(as).first(rk - 2));
    const bool full = n.attrs.mode == 1;
    const std::int64_t k = std::min(m, nn), w = full ? std::max(m, nn) : k;
    const std::int64_t ucols = full ? m : k, vrows = full ? nn : k;
    if (std::max(m, nn) > kMaxThreadMatrix) {
      throw UnsupportedOperation("svd of " + std::to_string(m) + "x" + std::to_string(nn) + " matrices is not supported on " +
                                     device_ + " yet (one matrix per thread up to " + std::to_string(kMaxThreadMatrix) +
                                     "; cuSOLVER is not built in); run this program on the CPU (device='cpu')",
                                 "svd", device_);
    }
    // Work on B = A (tall) or A^T (wide): B is r x c with r >= c = k; B = P S Q^T.
    const bool wide = m < nn;
    const std::int64_t r = wide ? nn : m, c = k;
    const std::string t = c_type(d), sq = d == DType::f32 ? "sqrtf" : "sqrt", nan = d == DType::f32 ? "QB_NAN_F" : "QB_NAN_D";
    const std::string eps = d == DType::f32 ? "1.1920929e-07f" : "2.220446049250313e-16";
    // Scratch per matrix: P (r x r: B's columns, completed to a basis), Q (c x c), s (c).
    const std::int64_t per = r * r + c * c + c, omat = (m + 1 + nn) * w;
    std::ostringstream b;
    b << "    " << t << "* P = t0 + i * " << per << ";\n    " << t << "* Q = P + " << r * r << ";\n    " << t
      << "* sv = Q + " << c * c << ";\n    " << t << "* o = y + i * " << omat << ";\n    bool bad = false;\n";
    b << "    for (qb_i64 q = 0; q < " << omat << "; ++q) o[q] = 0;\n";
    b << "    for (qb_i64 q = 0; q < " << r * r << "; ++q) P[q] = 0;\n";
    b << "    for (qb_i64 x = 0; x < " << r << "; ++x) for (qb_i64 z = 0; z < " << c << "; ++z) {\n";
    b << "      const " << t << " v = a[i * " << m * nn << " + "
      << (wide ? "z * " + std::to_string(nn) + " + x" : "x * " + std::to_string(nn) + " + z") << "];\n";
    b << "      if (v != v) bad = true;\n      P[x * " << r << " + z] = v;\n    }\n";
    b << "    for (qb_i64 q = 0; q < " << c * c << "; ++q) Q[q] = 0;\n";
    b << "    for (qb_i64 x = 0; x < " << c << "; ++x) Q[x * " << c << " + x] = 1;\n";
    b << "    for (int sweep = 0; sweep < 100 && !bad; ++sweep) {\n      bool rotated = false;\n";
    b << "      for (qb_i64 p = 0; p < " << c << "; ++p) for (qb_i64 q = p + 1; q < " << c << "; ++q) {\n";
    b << "        " << t << " al = 0, be = 0, ga = 0;\n";
    b << "        for (qb_i64 x = 0; x < " << r << "; ++x) { const " << t << " u = P[x * " << r << " + p], v = P[x * " << r
      << " + q]; al += u * u; be += v * v; ga += u * v; }\n";
    b << "        if (ga == 0 || fabs(ga) <= " << eps << " * " << sq << "(al * be)) continue;\n        rotated = true;\n";
    b << "        const " << t << " zeta = (be - al) / (2 * ga);\n";
    b << "        const " << t << " tt = (zeta >= 0 ? 1 : -1) / (fabs(zeta) + " << sq << "(1 + zeta * zeta));\n";
    b << "        const " << t << " cs = 1 / " << sq << "(1 + tt * tt), sn = cs * tt;\n";
    b << "        for (qb_i64 x = 0; x < " << r << "; ++x) { const " << t << " u = P[x * " << r << " + p], v = P[x * " << r
      << " + q]; P[x * " << r << " + p] = cs * u - sn * v; P[x * " << r << " + q] = sn * u + cs * v; }\n";
    b << "        for (qb_i64 x = 0; x < " << c << "; ++x) { const " << t << " u = Q[x * " << c << " + p], v = Q[x * " << c
      << " + q]; Q[x * " << c << " + p] = cs * u - sn * v; Q[x * " << c << " + q] = sn * u + cs * v; }\n";
    b << "      }\n      if (!rotated) break;\n    }\n";
    b << "    if (bad) { for (qb_i64 q = 0; q < " << omat << "; ++q) o[q] = " << nan << "; continue; }\n";
    // Singular values: the column norms; sorted descending with their columns.
    b << "    for (qb_i64 z = 0; z < " << c << "; ++z) { " << t << " ss = 0; for (qb_i64 x = 0; x < " << r
      << "; ++x) ss += P[x * " << r << " + z] * P[x * " << r << " + z]; sv[z] = " << sq << "(ss); }\n";
    b << "    for (qb_i64 z = 0; z < " << c << "; ++z) {\n      qb_i64 best = z;\n";
    b << "      for (qb_i64 u = z + 1; u < " << c << "; ++u) if (sv[u] > sv[best]) best = u;\n      if (best == z) continue;\n";
    b << "      { const " << t << " w2 = sv[z]; sv[z] = sv[best]; sv[best] = w2; }\n";
    b << "      for (qb_i64 x = 0; x < " << r << "; ++x) { const " << t << " w2 = P[x * " << r << " + z]; P[x * " << r
      << " + z] = P[x * " << r << " + best]; P[x * " << r << " + best] = w2; }\n";
    b << "      for (qb_i64 x = 0; x < " << c << "; ++x) { const " << t << " w2 = Q[x * " << c << " + z]; Q[x * " << c
      << " + z] = Q[x * " << c << " + best]; Q[x * " << c << " + best] = w2; }\n    }\n";
    // Normalise P's columns (U S -> U); a (numerically) zero one, and columns c.. of a
    // full basis, are completed by Gram-Schmidt against the unit vectors.
    b << "    const " << t << " tiny = " << eps << " * (sv[0] > 0 ? sv[0] : 1) * " << r << ";\n";
    b << "    for (qb_i64 z = 0; z < " << r << "; ++z) {\n";
    b << "      if (z < " << c << " && sv[z] > tiny) { for (qb_i64 x = 0; x < " << r << "; ++x) P[x * " << r
      << " + z] /= sv[z]; continue; }\n";
    // Some unit vector keeps at least 1/sqrt(r) of its length off the span so far (their
    // squared residuals add up to the remaining dimension): take the first that keeps half that.
    b << "      for (qb_i64 unit = 0; unit < " << r << "; ++unit) {\n";
    b << "        for (qb_i64 x = 0; x < " << r << "; ++x) P[x * " << r << " + z] = x == unit ? 1 : 0;\n";
    b << "        for (int pass = 0; pass < 2; ++pass) for (qb_i64 u = 0; u < z; ++u) {\n";
    b << "          " << t << " dot = 0; for (qb_i64 x = 0; x < " << r << "; ++x) dot += P[x * " << r << " + u] * P[x * " << r
      << " + z];\n";
    b << "          for (qb_i64 x = 0; x < " << r << "; ++x) P[x * " << r << " + z] -= dot * P[x * " << r << " + u];\n        }\n";
    b << "        " << t << " nrm = 0; for (qb_i64 x = 0; x < " << r << "; ++x) nrm += P[x * " << r << " + z] * P[x * " << r
      << " + z];\n        nrm = " << sq << "(nrm);\n";
    b << "        if (nrm > " << 0.5 / std::sqrt(static_cast<double>(r)) << ") { for (qb_i64 x = 0; x < " << r << "; ++x) P[x * "
      << r << " + z] /= nrm; break; }\n";
    b << "      }\n    }\n";
    // Out: U (m x ucols), s, V (n x vrows). B = P S Q^T: tall A: U = P, V = Q; wide A
    // (B = A^T): U = Q, V = P.
    b << "    for (qb_i64 z = 0; z < " << k << "; ++z) o[" << m * w << " + z] = sv[z];\n";
    const std::string pu = wide ? "Q" : "P", pv = wide ? "P" : "Q";
    const std::int64_t lu_ = wide ? c : r, lv = wide ? r : c;  // leading dims of those stores
    b << "    for (qb_i64 x = 0; x < " << m << "; ++x) for (qb_i64 z = 0; z < " << ucols << "; ++z) o[x * " << w
      << " + z] = " << pu << "[x * " << lu_ << " + z];\n";
    b << "    for (qb_i64 x = 0; x < " << nn << "; ++x) for (qb_i64 z = 0; z < " << vrows << "; ++z) o[(" << m + 1
      << " + x) * " << w << " + z] = " << pv << "[x * " << lv << " + z];\n";
    Step& s = new_step(i, n.outputs);
    s.temp_bytes.push_back(static_cast<std::size_t>(batch * per) * itemsize(d));
    s.launches.push_back(Launch{kernel({{pointer(d, true), "a"}, {pointer(d, false), "t0"}, {pointer(d, false), "y"}}, b.str()),
                                batch, {value(n.inputs[0]), temp(0), value(n.outputs[0])}});
  }

  // Each value's buffer is released after the last step that reads it (results never).
  void assign_releases() {
    const Graph& gr = g();
    std::vector<int> last(gr.values.size(), -1);
    for (std::size_t k = 0; k < plan_.steps.size(); ++k) {
      const Step& s = plan_.steps[k];
      auto use = [&](ValueId v) { last[v] = static_cast<int>(k); };
      for (const Launch& l : s.launches)
        for (const Arg& a : l.args)
          if (a.kind == Arg::Value) use(a.value);
      if (s.kind == Step::Alias || s.kind == Step::Gemm) use(s.a);
      if (s.kind == Step::Gemm) use(s.b);
      if (s.kind == Step::Region)
        for (ValueId v : gr.nodes[s.node].inputs) use(v);
      for (ValueId v : s.outputs) use(v);
    }
    std::vector<bool> keep(gr.values.size(), false);
    for (ValueId v : gr.results) keep[v] = true;
    for (std::size_t v = 0; v < last.size(); ++v)
      if (last[v] >= 0 && !keep[v]) plan_.steps[static_cast<std::size_t>(last[v])].release.push_back(static_cast<ValueId>(v));
  }

  std::shared_ptr<const Graph> g_;
  std::string device_;
  Plan plan_;
  std::map<std::string, int> by_key_;
};

}  // namespace

Plan lower(std::shared_ptr<const Graph> graph, const std::string& device) { return Lowerer(std::move(graph), device).run(); }

}  // namespace qb::cuda
