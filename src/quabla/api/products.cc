// matmul (NumPy rules: 1-D operands promoted and their axis removed, batch axes
// broadcast) and dot (NumPy's dot: the last axis of x against the second-to-last of y).
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/shape_error.h"
#include "quabla/ir/errors.h"

namespace qb::api {

namespace {

void check_operands(Builder& b, std::string_view fname, V x, V y) {
  for (V v : {x, y}) {
    if (b.type(v).shape.empty()) {
      throw ValueError(std::string(fname) + ": operands must be at least 1-D, got a scalar; use * to scale");
    }
  }
}

}  // namespace

V matmul(Builder& b, V x, V y) {
  check_operands(b, "matmul", x, y);
  const V xs[] = {x, y};
  // One float dtype (bool operands count as 0/1; two bools raise like arithmetic does).
  const DType dt = arithmetic_dtype("matmul", b.type(x), b.type(y));
  x = astype(b, xs[0], dt);
  y = astype(b, xs[1], dt);
  const Shape xs0 = b.type(x).shape, ys0 = b.type(y).shape;
  const bool x_vec = xs0.size() == 1, y_vec = ys0.size() == 1;
  if (x_vec) x = reshape(b, x, Shape{1, xs0[0]});
  if (y_vec) y = reshape(b, y, Shape{ys0[0], 1});
  const Shape xsh = b.type(x).shape, ysh = b.type(y).shape;
  const std::int64_t m = xsh[xsh.size() - 2], k = xsh.back(), k2 = ysh[ysh.size() - 2], n = ysh.back();
  if (k != k2) {
    throw ShapeError("matmul: shapes " + shape_str(xs0) + " and " + shape_str(ys0) + " are not aligned: " +
                     std::to_string(k) + " (last axis of the first) != " + std::to_string(k2) +
                     " (second-to-last axis of the second)");
  }
  const Shape xb(xsh.begin(), xsh.end() - 2), yb(ysh.begin(), ysh.end() - 2);
  const Shape batch = broadcast_shapes(xb, yb, "matmul");
  Shape xfull = batch, yfull = batch;
  xfull.insert(xfull.end(), {m, k});
  yfull.insert(yfull.end(), {k, n});
  x = broadcast_to(b, x, xfull, "matmul");
  y = broadcast_to(b, y, yfull, "matmul");
  if (is_int(dt)) {
    // Integer products (exact, wrapping) as broadcast multiply-and-sum: BLAS has no integer
    // GEMM, and integer matrices in these programs are small (index arithmetic, counts).
    Shape x4 = batch, y4 = batch, full = batch;
    x4.insert(x4.end(), {m, k, 1});
    y4.insert(y4.end(), {1, k, n});
    full.insert(full.end(), {m, k, n});
    V prod = b.emit1(Op::Mul, {broadcast_to(b, reshape(b, x, x4), full, "matmul"),
                               broadcast_to(b, reshape(b, y, y4), full, "matmul")});
    Attrs red;
    red.dims = {static_cast<std::int64_t>(batch.size()) + 1};
    V r = b.emit1(Op::ReduceSum, {prod}, std::move(red));
    Shape out = batch;
    if (!x_vec) out.push_back(m);
    if (!y_vec) out.push_back(n);
    return reshape(b, r, out);
  }
  const std::int64_t nb = num_elements(batch);
  // Plain matrices stay rank 2 (no unit batch axis), so vmap can fold a batch of examples
  // into one GEMM (vmap.cc); batched products are flattened to one batch axis.
  V r = batch.empty() ? b.emit1(Op::MatMul, {x, y})
                      : b.emit1(Op::MatMul, {reshape(b, x, Shape{nb, m, k}), reshape(b, y, Shape{nb, k, n})});
  Shape out = batch;
  if (!x_vec) out.push_back(m);
  if (!y_vec) out.push_back(n);
  return reshape(b, r, out);
}

V dot(Builder& b, V x, V y) {
  const auto& xs = b.type(x).shape;
  const auto& ys = b.type(y).shape;
  if (xs.empty() || ys.empty()) return binary(b, "dot", Op::Mul, x, y);
  if (xs.size() <= 2 && ys.size() <= 2) return matmul(b, x, y);
  if (ys.size() == 1) return matmul(b, x, y);
  // N-D: contract the last axis of x with the second-to-last of y.
  const std::int64_t k = xs.back();
  if (ys[ys.size() - 2] != k) {
    throw ShapeError("dot: shapes " + shape_str(xs) + " and " + shape_str(ys) + " are not aligned: " + std::to_string(k) +
                     " != " + std::to_string(ys[ys.size() - 2]));
  }
  std::vector<std::int64_t> perm;
  const std::int64_t yr = static_cast<std::int64_t>(ys.size());
  perm.push_back(yr - 2);
  for (std::int64_t i = 0; i < yr; ++i)
    if (i != yr - 2) perm.push_back(i);
  V yt = reshape(b, transpose(b, y, perm), Shape{k, num_elements(ys) / k});
  V r = matmul(b, reshape(b, x, Shape{num_elements(xs) / k, k}), yt);
  Shape out(xs.begin(), xs.end() - 1);
  out.insert(out.end(), ys.begin(), ys.end() - 2);
  out.push_back(ys.back());
  return reshape(b, r, out);
}

}  // namespace qb::api
