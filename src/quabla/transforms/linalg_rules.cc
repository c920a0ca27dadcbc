#include "quabla/transforms/linalg_rules.h"

#include <cstring>
#include <memory>

#include "quabla/ir/builder.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/buffer.h"

namespace qb::ad {

namespace {

constexpr std::int64_t kLower = 1, kTranspose = 2, kUnit = 4;

// A constant n x n matrix f(i, j) broadcast to `like`'s [..., n, n] shape (of its dtype: a
// complex one gets a real literal converted).
template <class F>
V matrix_mask(Emit& e, V like, F f) {
  ValueType t = e.type(like);
  const DType dtype = t.dtype;
  t.dtype = complex_part(dtype);
  const std::int64_t n = t.shape.back();
  const std::size_t item = itemsize(t.dtype);
  auto buf = Buffer::allocate(static_cast<std::size_t>(n * n) * item);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const double v = f(i, j);
      std::byte* p = buf->data() + static_cast<std::size_t>(i * n + j) * item;
      if (t.dtype == DType::f64) std::memcpy(p, &v, item);
      else {
        const float fv = static_cast<float>(v);
        std::memcpy(p, &fv, item);
      }
    }
  V c = e.b.constant(std::make_shared<Literal>(Literal{ValueType{t.dtype, Shape{n, n}, false}, buf}));
  if (is_complex(dtype)) c = e.convert(c, dtype);
  const auto r = static_cast<std::int64_t>(t.shape.size());
  if (r == 2) return c;
  return e.broadcast(c, t.shape, {r - 2, r - 1});
}

V matmul(Emit& e, V a, V b) { return e.op(Op::MatMul, {a, b}); }

bool is_c(Emit& e, V x) { return is_complex(e.type(x).dtype); }
// The conjugate transpose (the plain one for real matrices): the rules below are written for
// complex matrices and reduce to the real ones.
V adj(Emit& e, V x) {
  const V t = e.mT(x);
  return is_c(e, x) ? e.op(Op::Conj, {t}) : t;
}
// x with its imaginary part dropped, in x's dtype.
V real_part(Emit& e, V x) { return is_c(e, x) ? e.convert(e.op(Op::Real, {x}), e.type(x).dtype) : x; }

// Rows [begin, end) of the second-to-last axis.
V rows(Emit& e, V x, std::int64_t begin, std::int64_t end) {
  const Shape s = e.type(x).shape;
  Attrs a;
  a.starts.assign(s.size(), 0);
  a.limits = s;
  a.strides.assign(s.size(), 1);
  a.starts[s.size() - 2] = begin;
  a.limits[s.size() - 2] = end;
  return e.op(Op::Slice, {x}, std::move(a));
}

// x broadcast to `shape` of the same rank (its size-1 axes stretched).
V expand_to(Emit& e, V x, const Shape& shape) {
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims.push_back(static_cast<std::int64_t>(i));
  return e.broadcast(x, shape, std::move(dims));
}

// The identity matrix broadcast to `like`'s [..., n, n] shape.
V identity_like(Emit& e, V like) {
  return matrix_mask(e, like, [](std::int64_t i, std::int64_t j) { return i == j ? 1.0 : 0.0; });
}

// The reduced SVD's tangent (y packs [U; s; V], k columns), the standard formulas (as
// JAX's rule; ^T is the conjugate transpose for complex matrices, whose ds is Re diag(dS)):
// dS = U^T dA V, ds = diag(dS), F_ij = 1 / (s_j^2 - s_i^2) off the diagonal,
// dU = U (F * (dS S + S dS^T) + (dS - dS^T) / 2 * S^-1) (+ the part outside span(U) when
// m > n), dV = V (F * (S dS + dS^T S)) (+ the part outside span(V) when n > m).
V jvp_svd(Emit& e, V a, V da, V y) {
  const Shape as = e.type(a).shape;
  const auto r = static_cast<std::int64_t>(as.size());
  const std::int64_t m = as[static_cast<std::size_t>(r - 2)], n = as[static_cast<std::size_t>(r - 1)];
  const V u = rows(e, y, 0, m), s_row = rows(e, y, m, m + 1), v = rows(e, y, m + 1, m + 1 + n);
  const V ds_mat = matmul(e, matmul(e, adj(e, u), da), v);  // [..., k, k]
  const V eye = identity_like(e, ds_mat);
  const V ds = real_part(e, e.reduce_sum(e.mul(ds_mat, eye), {r - 1}));  // [..., k]
  const Shape sq = e.type(ds_mat).shape;
  const V sj = expand_to(e, s_row, sq);  // s_j along columns
  const V si = e.mT(sj);
  const V diffs = e.mul(e.add(sj, si), e.sub(sj, si));  // s_j^2 - s_i^2
  const V f = e.sub(e.div(e.like(ds_mat, 1.0), e.add(diffs, eye)), eye);
  const V dss = e.mul(sj, ds_mat);  // dS S
  const V sds = e.mul(si, ds_mat);  // S dS
  // 1/s on the diagonal, 0 where s == 0
  const V s_zero = e.convert(e.eq(s_row, e.zeros(e.type(s_row))), e.type(s_row).dtype);
  const V s_inv = e.sub(e.div(e.like(s_row, 1.0), e.add(s_row, s_zero)), s_zero);
  const V s_inv_mat = e.mul(expand_to(e, s_inv, sq), eye);
  const V dudv_diag = e.mul(e.scale(e.sub(ds_mat, adj(e, ds_mat)), 0.5), s_inv_mat);
  V du = matmul(e, u, e.add(e.mul(f, e.add(dss, adj(e, dss))), dudv_diag));
  V dv = matmul(e, v, e.mul(f, e.add(sds, adj(e, sds))));
  if (m > n) {
    const V dav = matmul(e, da, v);
    Shape us = e.type(u).shape;
    du = e.add(du, e.div(e.sub(dav, matmul(e, u, matmul(e, adj(e, u), dav))), expand_to(e, s_row, us)));
  }
  if (n > m) {
    const V dahu = matmul(e, adj(e, da), u);
    Shape vs = e.type(v).shape;
    dv = e.add(dv, e.div(e.sub(dahu, matmul(e, v, matmul(e, adj(e, v), dahu))), expand_to(e, s_row, vs)));
  }
  Shape row = e.type(s_row).shape;
  Attrs cat;
  cat.axis = r - 2;
  std::vector<V> parts{du, e.reshape(ds, row), dv};
  return e.b.emit(Op::Concat, parts, std::move(cat))[0];
}

// The packed [w; V] layout of eigh's and eig's results: dw [..., n] as the row above dv
// [..., n, n].
V values_over_vectors(Emit& e, V dw, V dv) {
  Shape row = e.type(dv).shape;
  const auto r = static_cast<std::int64_t>(row.size());
  row[static_cast<std::size_t>(r - 2)] = 1;
  Attrs cat;
  cat.axis = r - 2;
  std::vector<V> parts{e.reshape(dw, row), dv};
  return e.b.emit(Op::Concat, parts, std::move(cat))[0];
}

// A reduction over `axis` broadcast back along it.
V spread(Emit& e, V reduced, const Shape& shape, std::int64_t axis) {
  std::vector<std::int64_t> dims;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(shape.size()); ++i) {
    if (i != axis) dims.push_back(i);
  }
  return e.broadcast(reduced, shape, std::move(dims));
}

// The eigendecomposition's tangent, nondegenerate perturbation theory (as JAX's rule with
// enable_eigvec_derivs): with P = V^-1 dA V, dw = diag(P); dV = U + V diag(c) with U =
// V (F * P), F_ij = 1 / (w_j - w_i) off the diagonal, and c fixed by geev's normalisation of
// each column (unit 2-norm, largest component k real): c = -Re(v^H u) - i Im(u_k) / v_k.
// Eigenvalues only: dw_i = sum_j (V^-1 dA)_ij V_ji, V from a full decomposition.
V jvp_eig(Emit& e, const Node& node, V a, V da, V y) {
  V full = y;
  const bool values_only = node.attrs.mode & 1;
  if (values_only) full = e.op(Op::Eig, {a});
  const ValueType ft = e.type(full);
  const DType cd = ft.dtype;
  const auto r = static_cast<std::int64_t>(ft.shape.size());
  const std::int64_t n = ft.shape.back();
  const V w = rows(e, full, 0, 1), v = rows(e, full, 1, n + 1);  // [..., 1, n], [..., n, n]
  if (e.type(da).dtype != cd) da = e.convert(da, cd);
  const V vinv_da = solve(e, v, da);
  if (values_only) return e.reduce_sum(e.mul(vinv_da, e.mT(v)), {r - 1});
  const V p = matmul(e, vinv_da, v);
  const V eye = identity_like(e, p);
  const V dw = e.reduce_sum(e.mul(p, eye), {r - 1});
  const Shape sq = e.type(p).shape;
  const V wj = expand_to(e, w, sq), wi = e.mT(wj);
  const V f = e.sub(e.div(e.like(p, 1.0), e.add(eye, e.sub(wj, wi))), eye);
  const V u = matmul(e, v, e.mul(f, p));
  // The largest component of each column (the first, on ties: argmax's).
  const V mag = e.op(Op::Abs, {v});
  Attrs down;
  down.dims = {r - 2};
  const V top = spread(e, e.op(Op::ReduceMax, {mag}, down), sq, r - 2);
  const V at_top = e.convert(e.eq(mag, top), DType::i32);
  Attrs cum;
  cum.axis = r - 2;
  const V first = e.eq(e.op(Op::Cumsum, {at_top}, std::move(cum)), e.like(at_top, 1.0));
  const V pick = e.convert(e.op(Op::And, {first, e.eq(at_top, e.like(at_top, 1.0))}), cd);
  const V re = e.neg(e.op(Op::Real, {e.reduce_sum(e.mul(e.op(Op::Conj, {v}), u), {r - 2})}));
  const V im = e.neg(e.div(e.op(Op::Imag, {e.reduce_sum(e.mul(pick, u), {r - 2})}),
                           e.op(Op::Real, {e.reduce_sum(e.mul(pick, v), {r - 2})})));
  const V c = spread(e, e.op(Op::Complex, {re, im}), sq, r - 2);
  return values_over_vectors(e, dw, e.add(u, e.mul(v, c)));
}

}  // namespace

V triangular_solve(Emit& e, V a, V b, std::int64_t mode) {
  Attrs at;
  at.mode = mode;
  return e.op(Op::TriangularSolve, {a, b}, std::move(at));
}

V solve(Emit& e, V a, V b) { return e.op(Op::Solve, {a, b}); }

std::optional<V> jvp_linalg(Emit& e, const Node& n, const std::vector<V>& x, const std::vector<std::optional<V>>& t,
                            V y) {
  switch (n.op) {
    case Op::Cholesky: {
      // dL = L phi(L^-1 dA L^-H), phi: the lower triangle with the diagonal halved.
      const V l = y;
      const V left = triangular_solve(e, l, *t[0], kLower);                  // L^-1 dA
      const V both = adj(e, triangular_solve(e, l, adj(e, left), kLower));   // L^-1 dA L^-H
      const V phi = e.mul(both, matrix_mask(e, both, [](std::int64_t i, std::int64_t j) {
                            return i > j ? 1.0 : (i == j ? 0.5 : 0.0);
                          }));
      return matmul(e, l, phi);
    }
    case Op::TriangularSolve: {
      // X = op(A)^-1 B: dX = op(A)^-1 (dB - op(dA) X), dA masked to the triangle A is read from.
      const std::int64_t mode = n.attrs.mode;
      std::optional<V> rhs = t[1];
      if (t[0]) {
        const bool lower = mode & kLower, unit = mode & kUnit;
        V da = e.mul(*t[0], matrix_mask(e, *t[0], [&](std::int64_t i, std::int64_t j) {
                       if (unit && i == j) return 0.0;
                       return (lower ? i >= j : i <= j) ? 1.0 : 0.0;
                     }));
        if (mode & kTranspose) da = e.mT(da);
        const V term = matmul(e, da, y);
        rhs = rhs ? e.sub(*rhs, term) : e.neg(term);
      }
      return triangular_solve(e, x[0], *rhs, mode);
    }
    case Op::Solve: {
      // X = A^-1 B: dX = A^-1 (dB - dA X).
      std::optional<V> rhs = t[1];
      if (t[0]) {
        const V term = matmul(e, *t[0], y);
        rhs = rhs ? e.sub(*rhs, term) : e.neg(term);
      }
      return solve(e, x[0], *rhs);
    }
    case Op::Slogdet: {
      // d log|det A| = Re trace(A^-1 dA); a real sign's derivative is zero.
      const V s = solve(e, x[0], *t[0]);
      const auto r = static_cast<std::int64_t>(e.type(s).shape.size());
      const V tr = e.reduce_sum(e.mul(s, identity_like(e, s)), {r - 2, r - 1});
      Shape one = e.type(tr).shape;
      one.push_back(1);
      const V d = e.reshape(tr, one);
      Attrs cat;
      cat.axis = static_cast<std::int64_t>(one.size()) - 1;
      // complex: d log|det| = Re tr, d sign = sign * i Im tr (a real sign's derivative is 0)
      const V dlog = real_part(e, d);
      V dsign = e.zeros(e.type(d));
      if (is_c(e, d)) {
        Attrs first;
        const Shape ys = e.type(y).shape;
        first.starts.assign(ys.size(), 0);
        first.limits = ys;
        first.limits.back() = 1;
        first.strides.assign(ys.size(), 1);
        dsign = e.mul(e.op(Op::Slice, {y}, std::move(first)), e.sub(d, dlog));
      }
      std::vector<V> parts{dsign, dlog};
      return e.b.emit(Op::Concat, parts, std::move(cat))[0];
    }
    case Op::Eigh: {
      // y = [w; V]. With M = V^H dA V: dw = Re diag(M), dV = V (F * M), F_ij = 1 / (w_j - w_i)
      // off the diagonal and 0 on it (inf for repeated eigenvalues, as JAX's rule gives).
      const Shape ys = e.type(y).shape;
      const auto r = static_cast<std::int64_t>(ys.size());
      const std::int64_t n = ys.back();
      const V w = rows(e, y, 0, 1);   // [..., 1, n]
      const V v = rows(e, y, 1, n + 1);  // [..., n, n]
      const V m = matmul(e, matmul(e, adj(e, v), *t[0]), v);
      const V eye = identity_like(e, m);
      const V dw = real_part(e, e.reduce_sum(e.mul(m, eye), {r - 1}));  // [..., n]
      Shape sq = e.type(m).shape;
      const V wj = expand_to(e, w, sq);                             // w_j along columns
      const V wi = e.mT(wj);                                         // w_i along rows
      const V f = e.sub(e.div(e.like(m, 1.0), e.add(eye, e.sub(wj, wi))), eye);
      return values_over_vectors(e, dw, matmul(e, v, e.mul(f, m)));
    }
    case Op::Eig: return jvp_eig(e, n, x[0], *t[0], y);
    case Op::Svd: {
      if (n.attrs.mode & 1) {
        throw ValueError("svd: the derivative of full_matrices=True is not defined (the extra columns are not "
                         "unique); use full_matrices=False");
      }
      return jvp_svd(e, x[0], *t[0], y);
    }
    case Op::Qr: {
      // Reduced QR with m >= n: with X = dA R^-1 and C = Q^H X, dO = tril(C, -1) - tril(C, -1)^H
      // (+ i Im diag(C) for complex matrices),
      // dQ = Q (dO - C) + X, dR = (C - dO) R.
      const Shape as = e.type(x[0]).shape;
      const auto r = static_cast<std::int64_t>(as.size());
      const std::int64_t m = as[static_cast<std::size_t>(r - 2)], nn = as[static_cast<std::size_t>(r - 1)];
      if ((n.attrs.mode & 1) || m < nn) {
        throw ValueError("qr: derivatives are defined for the reduced QR of a matrix with at least as many rows as "
                         "columns (mode='reduced', m >= n), as in JAX");
      }
      const V q = rows(e, y, 0, m), rr = rows(e, y, m, m + nn);
      const V xr = e.mT(triangular_solve(e, rr, e.mT(*t[0]), kTranspose));  // dA R^-1 (R upper)
      const V c = matmul(e, adj(e, q), xr);
      const V low = e.mul(c, matrix_mask(e, c, [](std::int64_t i, std::int64_t j) { return i > j ? 1.0 : 0.0; }));
      V d_o = e.sub(low, adj(e, low));
      if (is_c(e, c)) d_o = e.add(d_o, e.mul(identity_like(e, c), e.sub(c, real_part(e, c))));  // JAX's diagonal term
      const V dq = e.add(matmul(e, q, e.sub(d_o, c)), xr);
      const V dr = matmul(e, e.sub(c, d_o), rr);
      Attrs cat;
      cat.axis = r - 2;
      std::vector<V> parts{dq, dr};
      return e.b.emit(Op::Concat, parts, std::move(cat))[0];
    }
    case Op::Lu: {
      // P A = L U: with X = L^-1 (P dA) U^-1, dL = L tril(X, -1), dU = triu(X) U; the
      // permutation and pivot rows have zero tangents.
      const Shape ys = e.type(y).shape;
      const auto r = static_cast<std::int64_t>(ys.size());
      const std::int64_t nn = ys.back();
      const V lu = rows(e, y, 2, nn + 2);
      const V perm = e.mT(rows(e, y, 0, 1));  // [..., n, 1]
      const V cols = matrix_mask(e, lu, [](std::int64_t, std::int64_t j) { return static_cast<double>(j); });
      const V p = e.convert(e.eq(expand_to(e, perm, e.type(lu).shape), cols), e.type(lu).dtype);
      const V pda = matmul(e, p, *t[0]);
      const V left = triangular_solve(e, lu, pda, kLower | kUnit);                     // L^-1 P dA
      const V xm = e.mT(triangular_solve(e, lu, e.mT(left), kTranspose));             // ... U^-1
      const V strict = matrix_mask(e, lu, [](std::int64_t i, std::int64_t j) { return i > j ? 1.0 : 0.0; });
      const V upper = matrix_mask(e, lu, [](std::int64_t i, std::int64_t j) { return i <= j ? 1.0 : 0.0; });
      const V eye = identity_like(e, lu);
      const V l = e.add(e.mul(lu, strict), eye), u = e.mul(lu, upper);
      const V dl = matmul(e, l, e.mul(xm, strict));
      const V du = matmul(e, e.mul(xm, upper), u);
      Shape two = ys;
      two[static_cast<std::size_t>(r - 2)] = 2;
      Attrs cat;
      cat.axis = r - 2;
      std::vector<V> parts{e.zeros(ValueType{e.type(y).dtype, two, false}), e.add(dl, du)};
      return e.b.emit(Op::Concat, parts, std::move(cat))[0];
    }
    default:
      return std::nullopt;
  }
}

}  // namespace qb::ad
