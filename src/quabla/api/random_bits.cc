// The traced random bits' primitive (ops.def: threefry) with its argument checks.
#include <string>

#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb::api {

V random_threefry(Builder& b, V k0, V k1, const Shape& shape) {
  const ValueType t0 = b.type(k0), t1 = b.type(k1);
  if (t0.dtype != DType::i32 || t1.dtype != DType::i32 || t0.shape != t1.shape) {
    throw TypeError("qb.random: key words must be two int32 arrays of one shape, got " + t0.str() + " and " + t1.str());
  }
  for (std::int64_t d : shape) {
    if (d < 0) throw ValueError("qb.random: negative dimension in the sample shape " + shape_str(shape));
  }
  Attrs a;
  a.shape = shape;
  return b.emit1(Op::Threefry, {k0, k1}, std::move(a));
}

}  // namespace qb::api
