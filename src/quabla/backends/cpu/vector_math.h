// Vectorised transcendental functions: glibc's libmvec (AVX2 variants, documented maximum
// error of a few ULP, IEEE special values and subnormals handled). Each element's result
// depends only on its value: tails are padded into a full vector, never sent to scalar
// libm, so chunking and thread count never change a result.
//
// Available when the build found libmvec with its glibc 2.35 function set and targets AVX2
// (QUABLA_HAVE_LIBMVEC); otherwise these return nullptr and kernels use scalar libm.
#pragma once
#include <cstddef>
#include <cstdint>

#include "quabla/ir/op.h"

namespace qb::cpu {

// y[i] = f(x[i]) for i in [0, n), or false when `op` has no vector form for float.
bool vector_unary_f32(Op op, const float* x, float* y, std::int64_t n);
bool vector_unary_f64(Op op, const double* x, double* y, std::int64_t n);
bool has_vector_unary(Op op);

}  // namespace qb::cpu
