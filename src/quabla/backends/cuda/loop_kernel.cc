#include "quabla/backends/cuda/loop_kernel.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

#include "quabla/backends/cpu/scalar_loop.h"
#include "quabla/ir/errors.h"
#include "quabla/backends/cpu/scalar_loop_ir.h"
#include "quabla/transforms/simplify.h"

namespace qb::cuda {

namespace {

using cpu::ScalarBody;
using Kind = ScalarBody::Kind;

bool disabled() {
  const char* v = std::getenv("QUABLA_CUDA_LOOP_KERNELS");
  return v && std::string_view(v) == "0";
}

std::string pointer(DType d, bool is_const) { return std::string(is_const ? "const " : "") + c_type(d) + "*"; }

// Register r's value as a literal of its dtype (floats by their bits: exact).
std::string literal(DType d, const cpu::Reg& r) {
  char buf[64];
  switch (d) {
    case DType::f64: std::snprintf(buf, sizeof buf, "qb_f64_bits(0x%016llxull)", static_cast<unsigned long long>(r.raw)); break;
    case DType::f32: {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &r.f32, sizeof bits);
      std::snprintf(buf, sizeof buf, "qb_f32_bits(0x%08xu)", bits);
      break;
    }
    case DType::i64: std::snprintf(buf, sizeof buf, "(qb_i64)0x%016llxull", static_cast<unsigned long long>(r.i64)); break;
    case DType::i32: std::snprintf(buf, sizeof buf, "(qb_i32)0x%08xu", static_cast<unsigned>(r.i32)); break;
    case DType::bool_: std::snprintf(buf, sizeof buf, "(qb_u8)%u", static_cast<unsigned>(r.b != 0)); break;
    case DType::c64: case DType::c128: QB_NARROW_INT_CASES:
      throw InternalError("cuda loop kernel: complex values and narrow integers are lowered before planning");
  }
  return buf;
}

// Straight-line CUDA C for one scalar body, its registers as locals `<prefix><r>`.
class BodyEmitter {
 public:
  BodyEmitter(const ScalarBody& b, char prefix) : b_(b), prefix_(prefix) {}

  std::string reg(std::uint32_t r) const { return prefix_ + std::to_string(r); }

  void declare(std::ostringstream& o) const {
    for (std::uint32_t r = 0; r < b_.num_regs(); ++r) o << "    " << c_type(b_.reg_dtype(r)) << " " << reg(r) << " = 0;\n";
    for (const auto& [r, value] : b_.register_constants())
      o << "    " << reg(r) << " = " << literal(b_.reg_dtype(r), value) << ";\n";
  }

  // False when an instruction has no device form (a kernel call).
  bool code(std::ostringstream& o) const {
    for (const ScalarBody::Instr& in : b_.code())
      if (!emit(o, in)) return false;
    return true;
  }

  // The carries' next values onto their parameters, as one parallel assignment.
  void moves(std::ostringstream& o, std::size_t first_param, std::size_t count) const {
    const auto m = b_.results_to_params(0, first_param, count);
    o << "      {\n";
    for (std::size_t k = 0; k < m.src.size(); ++k)
      o << "        const " << c_type(b_.reg_dtype(m.src[k])) << " t" << k << " = " << reg(m.src[k]) << ";\n";
    for (std::size_t k = 0; k < m.dst.size(); ++k) o << "        " << reg(m.dst[k]) << " = t" << k << ";\n";
    o << "      }\n";
  }

 private:
  bool emit(std::ostringstream& o, const ScalarBody::Instr& in) const {
    const std::string d = reg(in.d), a = reg(in.a), b = reg(in.b), c = reg(in.c);
    auto set = [&](const std::string& rhs) {
      o << "      " << d << " = " << rhs << ";\n";
      return true;
    };
    auto call = [&](const char* f, bool two) { return set(std::string(f) + "(" + a + (two ? ", " + b : "") + ")"); };
    auto cmp = [&](const char* op) { return set("(qb_u8)(" + a + " " + op + " " + b + ")"); };
    switch (in.kind) {
#define QB_COMPARE(P)                      \
  case Kind::P##Lt: return cmp("<");       \
  case Kind::P##Le: return cmp("<=");      \
  case Kind::P##Gt: return cmp(">");       \
  case Kind::P##Ge: return cmp(">=");      \
  case Kind::P##Eq: return cmp("==");      \
  case Kind::P##Ne: return cmp("!=");
#define QB_FLOAT(P, SUF)                                           \
  case Kind::P##Add: return set(a + " + " + b);                    \
  case Kind::P##Sub: return set(a + " - " + b);                    \
  case Kind::P##Mul: return set(a + " * " + b);                    \
  case Kind::P##Div: return set(a + " / " + b);                    \
  case Kind::P##Neg: return set("-" + a);                          \
  case Kind::P##Abs: return call("fabs" SUF, false);               \
  case Kind::P##Sqrt: return call("sqrt" SUF, false);              \
  case Kind::P##Max: return call("qb_max", true);                  \
  case Kind::P##Min: return call("qb_min", true);                  \
  case Kind::P##Pow: return call("pow" SUF, true);                 \
  case Kind::P##IsNan: return call("qb_isnan", false);             \
  case Kind::P##IsInf: return call("qb_isinf", false);             \
  case Kind::P##IsFinite: return call("qb_isfinite", false);       \
  QB_COMPARE(P)
      QB_FLOAT(F64, "")
      QB_FLOAT(F32, "f")
#undef QB_FLOAT
      case Kind::F64Vec: return set(elementwise_expr(in.op, DType::f64, DType::f64, {a}));
      case Kind::F32Vec: return set(elementwise_expr(in.op, DType::f32, DType::f32, {a}));
#define QB_INT(P)                                        \
  case Kind::P##Add: return call("qb_iadd", true);       \
  case Kind::P##Sub: return call("qb_isub", true);       \
  case Kind::P##Mul: return call("qb_imul", true);       \
  case Kind::P##Max: return call("qb_imax", true);       \
  case Kind::P##Min: return call("qb_imin", true);       \
  QB_COMPARE(P)
      QB_INT(I64)
      QB_INT(I32)
#undef QB_INT
#undef QB_COMPARE
      case Kind::BoolNot: return set("(qb_u8)!" + a);
      case Kind::BoolAnd: return set("(qb_u8)(" + a + " && " + b + ")");
      case Kind::BoolOr: return set("(qb_u8)(" + a + " || " + b + ")");
      case Kind::Select: return set(a + " ? " + b + " : " + c);
      case Kind::F64ToF32: return set("(float)" + a);
      case Kind::F32ToF64: return set("(double)" + a);
      case Kind::BoolToI32: case Kind::I64ToI32: return set("(qb_i32)" + a);
      case Kind::BoolToI64: case Kind::I32ToI64: return set("(qb_i64)" + a);
      case Kind::BoolToF32: case Kind::I32ToF32: case Kind::I64ToF32: return set("(float)" + a);
      case Kind::BoolToF64: case Kind::I32ToF64: case Kind::I64ToF64: return set("(double)" + a);
      case Kind::I32ToBool: case Kind::I64ToBool: case Kind::F32ToBool: case Kind::F64ToBool:
        return set("(qb_u8)(" + a + " != 0)");
      case Kind::End: return true;
      case Kind::Call: return false;
    }
    return false;
  }

  const ScalarBody& b_;
  char prefix_;
};

// Where element e of example i lives in an operand or output: batched values hold the
// examples along axis 0 (axis 1 for a scan's xs and ys, after time).
struct Access {
  std::string name;
  std::int64_t count = 0;  // elements per example (per step for xs and ys)
  bool batched = false, per_step = false;

  std::string at(std::int64_t batch, std::size_t e) const {
    std::ostringstream o;
    o << name << "[";
    if (per_step) o << "(t * " << (batched ? batch : 1) << (batched ? " + i" : "") << ") * " << count << " + " << e;
    else if (batched) o << "i * " << count << " + " << e;
    else o << e;
    o << "]";
    return o.str();
  }
};

// The node's operand or output type is the example's with the batch axis where the record
// says (after the time axis for per_step values), the time axis `steps` long.
bool matches(const ValueType& node_type, const ValueType& example, bool batched, bool per_step, std::int64_t batch,
             std::int64_t steps) {
  if (node_type.dtype != example.dtype) return false;
  Shape want;
  if (per_step) want.push_back(steps);
  if (batched) want.push_back(batch);
  want.insert(want.end(), example.shape.begin(), example.shape.end());
  return node_type.shape == want;
}

std::shared_ptr<const ScalarBody> scalar_form(const std::shared_ptr<const Graph>& region) {
  auto body = ScalarBody::compile(std::make_shared<const Graph>(simplify(*region)));
  return body && body->self_contained() ? body : nullptr;
}

void load(std::ostringstream& o, const BodyEmitter& em, std::span<const std::uint32_t> regs, const Access& a,
          std::int64_t batch, const char* indent) {
  for (std::size_t e = 0; e < regs.size(); ++e) o << indent << em.reg(regs[e]) << " = " << a.at(batch, e) << ";\n";
}

void store(std::ostringstream& o, const BodyEmitter& em, std::span<const std::uint32_t> regs, const Access& a,
           std::int64_t batch, const char* indent) {
  if (regs.empty()) return;
  o << indent << (a.batched ? "{\n" : "if (i == 0) {\n");  // a value shared by every example: written once
  for (std::size_t e = 0; e < regs.size(); ++e) o << indent << "  " << a.at(batch, e) << " = " << em.reg(regs[e]) << ";\n";
  o << indent << "}\n";
}

std::optional<LoopKernel> scan_kernel(const Graph& g, const Node& n, const ExampleLoop& r) {
  const auto nc = static_cast<std::size_t>(n.attrs.num_consts), nk = static_cast<std::size_t>(n.attrs.num_carry);
  const std::size_t nx = n.inputs.size() - nc - nk, ny = n.outputs.size() - nk;
  const Graph& ex = *r.example[0];
  if (ex.params.size() != 1 + n.inputs.size() || ex.results.size() != n.outputs.size()) return std::nullopt;
  const std::int64_t len = n.attrs.length;
  LoopKernel k;
  k.batch = r.batch;
  std::vector<Access> in(n.inputs.size()), out(n.outputs.size());
  for (std::size_t q = 0; q < n.inputs.size(); ++q) {
    const bool per_step = q >= nc + nk;
    const ValueType& et = ex.type(ex.params[1 + q]);
    if (!matches(g.type(n.inputs[q]), et, r.in_batched[q], per_step, r.batch, len)) return std::nullopt;
    in[q] = Access{"in" + std::to_string(q), num_elements(et.shape), r.in_batched[q], per_step};
    k.params.push_back({pointer(et.dtype, true), in[q].name});
  }
  for (std::size_t j = 0; j < n.outputs.size(); ++j) {
    const bool per_step = j >= nk;
    const ValueType& et = ex.type(ex.results[j]);
    if (!matches(g.type(n.outputs[j]), et, r.out_batched[j], per_step, r.batch, len)) return std::nullopt;
    out[j] = Access{"out" + std::to_string(j), num_elements(et.shape), r.out_batched[j], per_step};
    k.params.push_back({pointer(et.dtype, false), out[j].name});
  }
  auto body = scalar_form(r.example[0]);
  if (!body || body->num_params() != 1 + n.inputs.size() || body->param_regs(0).size() != 1 ||
      body->reg_dtype(body->param_regs(0)[0]) != DType::f64) {
    return std::nullopt;
  }
  const BodyEmitter em(*body, 'v');
  std::ostringstream o;
  em.declare(o);
  for (std::size_t q = 0; q < nc + nk; ++q) load(o, em, body->param_regs(1 + q), in[q], r.batch, "    ");
  o << "    for (qb_i64 step = 0; step < " << len << "; ++step) {\n";
  o << "      const qb_i64 t = " << (n.attrs.reverse ? std::to_string(len - 1) + " - step" : std::string("step")) << ";\n";
  o << "      " << em.reg(body->param_regs(0)[0]) << " = (double)(" << n.attrs.start << " + t);\n";
  for (std::size_t q = 0; q < nx; ++q) load(o, em, body->param_regs(1 + nc + nk + q), in[nc + nk + q], r.batch, "      ");
  if (!em.code(o)) return std::nullopt;
  for (std::size_t j = 0; j < ny; ++j) store(o, em, body->result_regs(nk + j), out[nk + j], r.batch, "      ");
  em.moves(o, 1 + nc, nk);
  o << "    }\n";
  for (std::size_t q = 0; q < nk; ++q) store(o, em, body->param_regs(1 + nc + q), out[q], r.batch, "    ");
  k.body = o.str();
  return k;
}

std::optional<LoopKernel> while_kernel(const Graph& g, const Node& n, const ExampleLoop& r) {
  const auto nc = static_cast<std::size_t>(n.attrs.num_consts);
  const std::size_t nk = n.inputs.size() - nc;
  const Graph& cond_g = *r.example[0];
  const Graph& body_g = *r.example[1];
  if (cond_g.params.size() != n.inputs.size() || body_g.params.size() != n.inputs.size() ||
      body_g.results.size() != nk || cond_g.results.size() != 1) {
    return std::nullopt;
  }
  LoopKernel k;
  k.batch = r.batch;
  std::vector<Access> in(n.inputs.size()), out(nk);
  for (std::size_t q = 0; q < n.inputs.size(); ++q) {
    const ValueType& et = body_g.type(body_g.params[q]);
    if (!matches(g.type(n.inputs[q]), et, r.in_batched[q], false, r.batch, 0)) return std::nullopt;
    in[q] = Access{"in" + std::to_string(q), num_elements(et.shape), r.in_batched[q], false};
    k.params.push_back({pointer(et.dtype, true), in[q].name});
  }
  for (std::size_t j = 0; j < nk; ++j) {
    const ValueType& et = body_g.type(body_g.results[j]);
    if (!matches(g.type(n.outputs[j]), et, r.out_batched[j], false, r.batch, 0)) return std::nullopt;
    out[j] = Access{"out" + std::to_string(j), num_elements(et.shape), r.out_batched[j], false};
    k.params.push_back({pointer(et.dtype, false), out[j].name});
  }
  k.params.push_back({"qb_i64", "max_steps"});
  k.params.push_back({"qb_u8*", "pending"});
  auto cond = scalar_form(r.example[0]);
  auto body = scalar_form(r.example[1]);
  if (!cond || !body || cond->num_params() != n.inputs.size() || body->num_params() != n.inputs.size() ||
      cond->result_regs(0).size() != 1 || cond->reg_dtype(cond->result_regs(0)[0]) != DType::bool_) {
    return std::nullopt;
  }
  const BodyEmitter ec(*cond, 'c'), eb(*body, 'v');
  std::ostringstream o;
  ec.declare(o);
  eb.declare(o);
  for (std::size_t q = 0; q < nc; ++q) load(o, ec, cond->param_regs(q), in[q], r.batch, "    ");
  for (std::size_t q = 0; q < n.inputs.size(); ++q) load(o, eb, body->param_regs(q), in[q], r.batch, "    ");
  o << "    qb_u8 more = 1;\n";
  o << "    for (qb_i64 step = 0; step < max_steps; ++step) {\n";
  for (std::size_t q = nc; q < n.inputs.size(); ++q) {
    const auto from = body->param_regs(q), to = cond->param_regs(q);
    for (std::size_t e = 0; e < from.size(); ++e) o << "      " << ec.reg(to[e]) << " = " << eb.reg(from[e]) << ";\n";
  }
  if (!ec.code(o)) return std::nullopt;
  o << "      if (!" << ec.reg(cond->result_regs(0)[0]) << ") { more = 0; break; }\n";
  if (!eb.code(o)) return std::nullopt;
  eb.moves(o, nc, nk);
  o << "    }\n";
  for (std::size_t j = 0; j < nk; ++j) store(o, eb, body->param_regs(nc + j), out[j], r.batch, "    ");
  o << "    pending[i] = more;\n";
  k.body = o.str();
  return k;
}

}  // namespace

std::optional<LoopKernel> example_loop_kernel(const Graph& g, const Node& n) {
  const ExampleLoop* r = example_loop_of(n);
  if (!r || disabled() || r->batch <= 0) return std::nullopt;
  return n.op == Op::Scan ? scan_kernel(g, n, *r) : while_kernel(g, n, *r);
}

}  // namespace qb::cuda
