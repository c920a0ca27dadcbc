// qb.linalg's primitives with their argument checks: float or complex stacks of square
// matrices, a right-hand side that is a stack of matrices or one
// vector, batch axes broadcast.
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb::api {

namespace {

// a as a float or complex [..., n, n] stack, or a ValueError naming fname.
void check_square(Builder& b, std::string_view fname, V a) {
  const ValueType t = b.type(a);
  if (!is_inexact(t.dtype)) {
    throw ValueError(std::string(fname) + ": expected float or complex matrices, got " + t.str() +
                     "; convert with .astype(qb.float64)");
  }
  const auto& s = t.shape;
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2]) {
    throw ValueError(std::string(fname) + ": expected a square matrix or a stack of them [..., n, n], got shape " +
                     shape_str(s));
  }
}

// (a, rhs) with equal batch axes and rhs as [..., n, k]; vector tells whether rhs was [n].
std::pair<V, V> batch_pair(Builder& b, std::string_view fname, V a, V rhs, bool& vector) {
  check_square(b, fname, a);
  const ValueType at = b.type(a), bt = b.type(rhs);
  if (bt.dtype != at.dtype) {
    if (is_complex(at.dtype) && is_float(bt.dtype) && bt.dtype == complex_part(at.dtype)) {
      rhs = astype(b, rhs, at.dtype);  // a real right-hand side of a complex system
    } else if (!is_inexact(bt.dtype) && bt.dtype != DType::bool_ && !is_int(bt.dtype)) {
      throw ValueError(std::string(fname) + ": unsupported right-hand side " + bt.str());
    } else if (is_inexact(bt.dtype) && !bt.weak) {
      throw ValueError(std::string(fname) + ": the matrix is " + at.str() + " and the right-hand side " + bt.str() +
                       "; give both one float (or complex) dtype");
    } else {
      rhs = astype(b, rhs, at.dtype);
    }
  }
  const std::int64_t n = at.shape.back();
  Shape rs = b.type(rhs).shape;
  vector = rs.size() == 1;
  if (vector) {
    rhs = reshape(b, rhs, Shape{rs[0], 1});
    rs = b.type(rhs).shape;
  }
  if (rs.size() < 2 || rs[rs.size() - 2] != n) {
    throw ValueError(std::string(fname) + ": the right-hand side " + bt.str() + " does not match the matrix " + at.str() +
                     " (expected [..., " + std::to_string(n) + ", k] or [" + std::to_string(n) +
                     "]); for a stack of vectors use solve(a, b[..., None])[..., 0]");
  }
  const Shape ab(at.shape.begin(), at.shape.end() - 2), rb(rs.begin(), rs.end() - 2);
  const Shape batch = broadcast_shapes(ab, rb, fname);
  Shape af = batch, rf = batch;
  af.insert(af.end(), {n, n});
  rf.insert(rf.end(), {n, rs.back()});
  return {broadcast_to(b, a, af, fname), broadcast_to(b, rhs, rf, fname)};
}

V finish(Builder& b, V x, bool vector) {
  if (!vector) return x;
  Shape s = b.type(x).shape;
  s.pop_back();
  return reshape(b, x, s);
}

// A one-operand op on a stack of (any) matrices, with its mode.
V matrix_op(Builder& b, std::string_view fname, Op op, V a, std::int64_t mode) {
  const ValueType t = b.type(a);
  if (!is_inexact(t.dtype) || t.shape.size() < 2) {
    throw ValueError(std::string(fname) + ": expected a float or complex matrix or stack of them [..., m, n], got " +
                     t.str());
  }
  Attrs at;
  at.mode = mode;
  return b.emit1(op, {a}, std::move(at));
}

// A one-operand op on a stack of square matrices.
V square_op(Builder& b, std::string_view fname, Op op, V a) {
  check_square(b, fname, a);
  return b.emit1(op, {a});
}

}  // namespace

V linalg_cholesky(Builder& b, V a) { return square_op(b, "cholesky", Op::Cholesky, a); }

V linalg_triangular_solve(Builder& b, V a, V rhs, bool lower, bool transpose, bool unit_diagonal) {
  bool vector = false;
  auto [m, r] = batch_pair(b, "solve_triangular", a, rhs, vector);
  Attrs at;
  at.mode = (lower ? 1 : 0) | (transpose ? 2 : 0) | (unit_diagonal ? 4 : 0);
  return finish(b, b.emit1(Op::TriangularSolve, {m, r}, std::move(at)), vector);
}

V linalg_solve(Builder& b, V a, V rhs) {
  bool vector = false;
  auto [m, r] = batch_pair(b, "solve", a, rhs, vector);
  return finish(b, b.emit1(Op::Solve, {m, r}), vector);
}

V linalg_slogdet(Builder& b, V a) { return square_op(b, "slogdet", Op::Slogdet, a); }

V linalg_svd(Builder& b, V a, bool full_matrices) { return matrix_op(b, "svd", Op::Svd, a, full_matrices ? 1 : 0); }

V linalg_qr(Builder& b, V a, bool complete) { return matrix_op(b, "qr", Op::Qr, a, complete ? 1 : 0); }

V linalg_lu(Builder& b, V a) { return square_op(b, "lu", Op::Lu, a); }

V linalg_eigh(Builder& b, V a) { return square_op(b, "eigh", Op::Eigh, a); }

V linalg_eig(Builder& b, V a, bool values_only) {
  check_square(b, values_only ? "eigvals" : "eig", a);
  Attrs at;
  at.mode = values_only ? 1 : 0;
  return b.emit1(Op::Eig, {a}, std::move(at));
}

}  // namespace qb::api
