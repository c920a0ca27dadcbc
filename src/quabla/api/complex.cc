// Complex numbers at the user level: the parts of an array, conjugation, building one from
// its parts, and the discrete Fourier transform along the last axis (jax.numpy.fft composes
// the rest in Python). Real operands behave as jax.numpy's: real(x) is x, imag(x) zeros.
#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb::api {

namespace {
std::string s(std::string_view v) { return std::string(v); }
}  // namespace

V real_part(Builder& b, V x) { return is_complex(b.type(x).dtype) ? b.emit1(Op::Real, {x}) : x; }

V imag_part(Builder& b, V x) {
  const ValueType t = b.type(x);
  if (is_complex(t.dtype)) return b.emit1(Op::Imag, {x});
  return broadcast_to(b, scalar_constant(b, 0.0, t.dtype), t.shape);
}

V conjugate(Builder& b, V x) { return is_complex(b.type(x).dtype) ? b.emit1(Op::Conj, {x}) : x; }

V make_complex(Builder& b, V re, V im) {
  for (V v : {re, im}) {
    if (is_complex(b.type(v).dtype)) {
      throw TypeError("complex: the real and imaginary parts must be real arrays, got " +
                      s(dtype_name(b.type(v).dtype)));
    }
  }
  const V xs[] = {to_inexact(b, re), to_inexact(b, im)};
  auto v = promote_broadcast(b, "complex", xs, false);
  return b.emit1(Op::Complex, {v[0], v[1]});
}

V fft_last(Builder& b, V x, bool inverse) {
  const ValueType t = b.type(x);
  if (t.shape.empty()) throw ValueError("fft: needs an array of at least one dimension, got a scalar");
  if (t.dtype == DType::bool_) x = astype(b, x, default_float_dtype());
  if (!is_complex(b.type(x).dtype)) x = astype(b, to_inexact(b, x), complex_of(b.type(to_inexact(b, x)).dtype));
  Attrs a;
  a.mode = inverse ? 1 : 0;
  return b.emit1(Op::Fft, {x}, std::move(a));
}

}  // namespace qb::api
