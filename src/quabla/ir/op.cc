#include "quabla/ir/op.h"

namespace qb {

namespace {
struct OpInfo {
  std::string_view name;
  int arity;
  AttrKind attrs;
};
constexpr OpInfo kOpInfo[] = {
#define QB_OP(name, text, arity, attrs) {text, arity, AttrKind::attrs},
#include "quabla/ir/ops.def"
#undef QB_OP
};
}  // namespace

std::string_view op_name(Op op) { return kOpInfo[static_cast<int>(op)].name; }
int op_arity(Op op) { return kOpInfo[static_cast<int>(op)].arity; }
AttrKind op_attr_kind(Op op) { return kOpInfo[static_cast<int>(op)].attrs; }

bool is_elementwise(Op op) {
  switch (op) {
    case Op::Neg: case Op::Abs: case Op::Sign: case Op::Floor: case Op::Ceil: case Op::Round:
    case Op::Sqrt: case Op::Cbrt: case Op::Exp: case Op::Exp2: case Op::Expm1: case Op::Log:
    case Op::Log2: case Op::Log10: case Op::Log1p: case Op::Sin: case Op::Cos: case Op::Tan:
    case Op::Asin: case Op::Acos: case Op::Atan: case Op::Sinh: case Op::Cosh: case Op::Tanh:
    case Op::Asinh: case Op::Acosh: case Op::Atanh: case Op::Erf: case Op::Erfc: case Op::ErfInv:
    case Op::Logistic: case Op::Softplus: case Op::Silu: case Op::GeluTanh: case Op::StopGradient: case Op::IsNan: case Op::IsInf:
    case Op::IsFinite: case Op::Not: case Op::Add: case Op::Sub: case Op::Mul: case Op::Div:
    case Op::Pow: case Op::Atan2: case Op::Hypot: case Op::Rem: case Op::Max: case Op::Min:
    case Op::LogAddExp: case Op::And: case Op::Or: case Op::Xor: case Op::ShiftLeft: case Op::ShiftRight: case Op::Lt: case Op::Le: case Op::Gt:
    case Op::Ge: case Op::Eq: case Op::Ne: case Op::Select: case Op::Convert:
    case Op::Real: case Op::Imag: case Op::Conj: case Op::Complex:
      return true;
    case Op::Parameter: case Op::Constant: case Op::Reshape: case Op::BroadcastInDim:
    case Op::Transpose: case Op::Slice: case Op::Reverse: case Op::Concat: case Op::Pad: case Op::ReduceSum:
    case Op::ReduceProd: case Op::ReduceMax: case Op::ReduceMin: case Op::ReduceAny:
    case Op::ReduceAll: case Op::Cumsum: case Op::MatMul: case Op::Cholesky: case Op::TriangularSolve:
    case Op::Solve: case Op::Slogdet: case Op::Eigh: case Op::Svd: case Op::Qr: case Op::Lu: case Op::Eig: case Op::Threefry: case Op::Gather: case Op::ScatterAdd:
    case Op::Fft: case Op::Take: case Op::Scatter: case Op::Argsort: case Op::SearchSorted:
    case Op::Cond: case Op::Scan: case Op::While: case Op::CustomJvp: case Op::CustomVjp: case Op::CustomVjpLin:
    case Op::Checkpoint: case Op::LinearSolve: case Op::HostCall: case Op::NamedAxis:
      return false;
  }
  return false;
}

bool has_regions(Op op) {
  return op == Op::Cond || op == Op::Scan || op == Op::While || op == Op::CustomJvp || op == Op::CustomVjp ||
         op == Op::CustomVjpLin || op == Op::Checkpoint || op == Op::LinearSolve;
}

}  // namespace qb
