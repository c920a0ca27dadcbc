// Elementwise kernels. Each op is one scalar function applied over contiguous buffers;
// scalar (broadcast) operands are read once. Large arrays are split into fixed chunks over
// the thread pool (chunking never changes results: each element is computed alone).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "quabla/backends/cpu/erfinv.h"
#include "quabla/backends/cpu/kernels.h"
#include "quabla/backends/cpu/scalar_math.h"
#include "quabla/backends/cpu/vector_math.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

namespace {

constexpr std::int64_t kGrain = 16384;

template <class T>
const T* ptr(const Operand& o) {
  return reinterpret_cast<const T*>(o.data);
}

// The loops over [b, e), their pointers function parameters (locals): a uint8 (bool)
// output may alias anything, so pointers read from a closure would be reloaded after every
// store, and the loop would not vectorise (comparisons ran 5x slower than additions).
template <class In, class Out, class F>
void loop1(const In* x, Out* out, std::int64_t b, std::int64_t e, F f) {
  for (std::int64_t i = b; i < e; ++i) out[i] = static_cast<Out>(f(x[i]));
}

template <class In, class Out, bool ScalarX, bool ScalarY, class F>
void loop2(const In* x, const In* y, Out* out, std::int64_t b, std::int64_t e, F f) {
  const In x0 = x[0], y0 = y[0];
  for (std::int64_t i = b; i < e; ++i) out[i] = static_cast<Out>(f(ScalarX ? x0 : x[i], ScalarY ? y0 : y[i]));
}

template <class In, class Out, class F>
void map1(std::span<const Operand> in, std::byte* out_bytes, std::int64_t n, F f) {
  Out* out = reinterpret_cast<Out*>(out_bytes);
  const In* x = ptr<In>(in[0]);
  if (in[0].scalar) {
    std::fill(out, out + n, static_cast<Out>(f(x[0])));
    return;
  }
  parallel_for(n, kGrain, [out, x, f](std::int64_t b, std::int64_t e) { loop1<In, Out>(x, out, b, e, f); });
}

template <class In, class Out, class F>
void map2(std::span<const Operand> in, std::byte* out_bytes, std::int64_t n, F f) {
  Out* out = reinterpret_cast<Out*>(out_bytes);
  const In* x = ptr<In>(in[0]);
  const In* y = ptr<In>(in[1]);
  const bool xs = in[0].scalar, ys = in[1].scalar;
  parallel_for(n, kGrain, [out, x, y, xs, ys, f](std::int64_t b, std::int64_t e) {
    if (xs && ys) {
      const Out v = static_cast<Out>(f(x[0], y[0]));
      std::fill(out + b, out + e, v);
    } else if (xs) {
      loop2<In, Out, true, false>(x, y, out, b, e, f);
    } else if (ys) {
      loop2<In, Out, false, true>(x, y, out, b, e, f);
    } else {
      loop2<In, Out, false, false>(x, y, out, b, e, f);
    }
  });
}

// Both values loaded, then chosen: a branch-free loop the compiler vectorises into blends
// (a branch on the predicate mispredicts on mixed data: 30x slower on 1e6 random signs).
template <class T, bool ScalarA, bool ScalarC>
void select_range(const std::uint8_t* p, const T* a, const T* c, T* out, std::int64_t b, std::int64_t e) {
  for (std::int64_t i = b; i < e; ++i) {
    const T x = a[ScalarA ? 0 : i], y = c[ScalarC ? 0 : i];
    out[i] = p[i] != 0 ? x : y;
  }
}

template <class T>
void select(std::span<const Operand> in, std::byte* out_bytes, std::int64_t n) {
  T* out = reinterpret_cast<T*>(out_bytes);
  const auto* p = ptr<std::uint8_t>(in[0]);
  const T* a = ptr<T>(in[1]);
  const T* c = ptr<T>(in[2]);
  const bool sa = in[1].scalar, sc = in[2].scalar;
  if (in[0].scalar) {  // one predicate: a copy of one side
    const T* src = p[0] ? a : c;
    const bool scalar = p[0] ? sa : sc;
    parallel_for(n, kGrain, [&](std::int64_t b, std::int64_t e) {
      if (scalar) std::fill(out + b, out + e, src[0]);
      else std::copy(src + b, src + e, out + b);
    });
    return;
  }
  parallel_for(n, kGrain, [&](std::int64_t b, std::int64_t e) {
    if (sa && sc) select_range<T, true, true>(p, a, c, out, b, e);
    else if (sa) select_range<T, true, false>(p, a, c, out, b, e);
    else if (sc) select_range<T, false, true>(p, a, c, out, b, e);
    else select_range<T, false, false>(p, a, c, out, b, e);
  });
}

// Comparisons and select, the same for every dtype; false for any other op.
template <class T>
bool compare_or_select(Op op, std::span<const Operand> in, std::byte* out, std::int64_t n) {
  using B = std::uint8_t;
  switch (op) {
    case Op::Lt: map2<T, B>(in, out, n, [](T a, T b) { return a < b; }); return true;
    case Op::Le: map2<T, B>(in, out, n, [](T a, T b) { return a <= b; }); return true;
    case Op::Gt: map2<T, B>(in, out, n, [](T a, T b) { return a > b; }); return true;
    case Op::Ge: map2<T, B>(in, out, n, [](T a, T b) { return a >= b; }); return true;
    case Op::Eq: map2<T, B>(in, out, n, [](T a, T b) { return a == b; }); return true;
    case Op::Ne: map2<T, B>(in, out, n, [](T a, T b) { return a != b; }); return true;
    case Op::Select: select<T>(in, out, n); return true;
    default: return false;
  }
}

// A unary op through its vector (libmvec) form; false when it has none.
template <class T>
bool vector_op(Op op, std::span<const Operand> in, std::byte* out_bytes, std::int64_t n) {
  if (!has_vector_unary(op)) return false;
  auto run = [op](const T* x, T* y, std::int64_t len) {
    if constexpr (std::is_same_v<T, float>) return vector_unary_f32(op, x, y, len);
    else return vector_unary_f64(op, x, y, len);
  };
  T* out = reinterpret_cast<T*>(out_bytes);
  const T* x = ptr<T>(in[0]);
  if (in[0].scalar) {
    T v;
    run(x, &v, 1);
    std::fill(out, out + n, v);
    return true;
  }
  parallel_for(n, kGrain, [&](std::int64_t b, std::int64_t e) { run(x + b, out + b, e - b); });
  return true;
}

template <class T>
void float_op(Op op, std::span<const Operand> in, std::byte* out, std::int64_t n) {
  using B = std::uint8_t;
  if (vector_op<T>(op, in, out, n)) return;
  switch (op) {
    case Op::Neg: return map1<T, T>(in, out, n, [](T x) { return -x; });
    case Op::Abs: return map1<T, T>(in, out, n, [](T x) { return std::fabs(x); });
    case Op::Sign: return map1<T, T>(in, out, n, [](T x) { return math::sign(x); });
    case Op::Floor: return map1<T, T>(in, out, n, [](T x) { return std::floor(x); });
    case Op::Ceil: return map1<T, T>(in, out, n, [](T x) { return std::ceil(x); });
    case Op::Round: return map1<T, T>(in, out, n, [](T x) { return std::nearbyint(x); });  // half to even
    case Op::Sqrt: return map1<T, T>(in, out, n, [](T x) { return std::sqrt(x); });
    case Op::Cbrt: return map1<T, T>(in, out, n, [](T x) { return std::cbrt(x); });
    case Op::Exp: return map1<T, T>(in, out, n, [](T x) { return std::exp(x); });
    case Op::Exp2: return map1<T, T>(in, out, n, [](T x) { return std::exp2(x); });
    case Op::Expm1: return map1<T, T>(in, out, n, [](T x) { return std::expm1(x); });
    case Op::Log: return map1<T, T>(in, out, n, [](T x) { return std::log(x); });
    case Op::Log2: return map1<T, T>(in, out, n, [](T x) { return std::log2(x); });
    case Op::Log10: return map1<T, T>(in, out, n, [](T x) { return std::log10(x); });
    case Op::Log1p: return map1<T, T>(in, out, n, [](T x) { return std::log1p(x); });
    case Op::Sin: return map1<T, T>(in, out, n, [](T x) { return math::sin(x); });
    case Op::Cos: return map1<T, T>(in, out, n, [](T x) { return math::cos(x); });
    case Op::Tan: return map1<T, T>(in, out, n, [](T x) { return math::tan(x); });
    case Op::Asin: return map1<T, T>(in, out, n, [](T x) { return std::asin(x); });
    case Op::Acos: return map1<T, T>(in, out, n, [](T x) { return std::acos(x); });
    case Op::Atan: return map1<T, T>(in, out, n, [](T x) { return std::atan(x); });
    case Op::Sinh: return map1<T, T>(in, out, n, [](T x) { return std::sinh(x); });
    case Op::Cosh: return map1<T, T>(in, out, n, [](T x) { return std::cosh(x); });
    case Op::Tanh: return map1<T, T>(in, out, n, [](T x) { return std::tanh(x); });
    case Op::Asinh: return map1<T, T>(in, out, n, [](T x) { return std::asinh(x); });
    case Op::Acosh: return map1<T, T>(in, out, n, [](T x) { return std::acosh(x); });
    case Op::Atanh: return map1<T, T>(in, out, n, [](T x) { return std::atanh(x); });
    case Op::Erf: return map1<T, T>(in, out, n, [](T x) { return std::erf(x); });
    case Op::Erfc: return map1<T, T>(in, out, n, [](T x) { return std::erfc(x); });
    case Op::ErfInv: return map1<T, T>(in, out, n, [](T x) { return static_cast<T>(erfinv(static_cast<double>(x))); });
    case Op::Logistic: return map1<T, T>(in, out, n, [](T x) { return math::logistic(x); });
    case Op::Softplus: return map1<T, T>(in, out, n, [](T x) { return math::softplus(x); });
    case Op::Silu: return map1<T, T>(in, out, n, [](T x) { return math::silu(x); });
    case Op::GeluTanh: return map1<T, T>(in, out, n, [](T x) { return math::gelu_tanh(x); });
    case Op::StopGradient: return map1<T, T>(in, out, n, [](T x) { return x; });
    case Op::IsNan: return map1<T, B>(in, out, n, [](T x) { return std::isnan(x); });
    case Op::IsInf: return map1<T, B>(in, out, n, [](T x) { return std::isinf(x); });
    case Op::IsFinite: return map1<T, B>(in, out, n, [](T x) { return std::isfinite(x); });
    case Op::Add: return map2<T, T>(in, out, n, [](T a, T b) { return a + b; });
    case Op::Sub: return map2<T, T>(in, out, n, [](T a, T b) { return a - b; });
    case Op::Mul: return map2<T, T>(in, out, n, [](T a, T b) { return a * b; });
    case Op::Div: return map2<T, T>(in, out, n, [](T a, T b) { return a / b; });
    case Op::Pow: return map2<T, T>(in, out, n, [](T a, T b) { return std::pow(a, b); });
    case Op::Atan2: return map2<T, T>(in, out, n, [](T a, T b) { return std::atan2(a, b); });
    case Op::Hypot: return map2<T, T>(in, out, n, [](T a, T b) { return std::hypot(a, b); });
    case Op::Rem: return map2<T, T>(in, out, n, [](T a, T b) { return std::fmod(a, b); });
    case Op::Max: return map2<T, T>(in, out, n, [](T a, T b) { return math::maximum(a, b); });
    case Op::Min: return map2<T, T>(in, out, n, [](T a, T b) { return math::minimum(a, b); });
    case Op::LogAddExp: return map2<T, T>(in, out, n, [](T a, T b) { return math::logaddexp(a, b); });
    case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::Eq: case Op::Ne: case Op::Select:
      compare_or_select<T>(op, in, out, n);
      return;
    case Op::Not: case Op::And: case Op::Or: case Op::Xor: case Op::ShiftLeft: case Op::ShiftRight:
    case Op::Convert: case Op::Parameter: case Op::Constant:
    case Op::Reshape: case Op::BroadcastInDim: case Op::Transpose: case Op::Slice: case Op::Reverse: case Op::Pad:
    case Op::Concat: case Op::ReduceSum: case Op::ReduceProd: case Op::ReduceMax: case Op::ReduceMin:
    case Op::ReduceAny: case Op::ReduceAll: case Op::Cumsum: case Op::MatMul: case Op::Cholesky:
    case Op::TriangularSolve: case Op::Solve: case Op::Slogdet: case Op::Eigh: case Op::Svd: case Op::Qr: case Op::Lu: case Op::Eig: case Op::Threefry: case Op::Gather:
    case Op::ScatterAdd: case Op::Take: case Op::Scatter: case Op::Argsort: case Op::SearchSorted:
    case Op::Cond: case Op::Scan: case Op::While: case Op::CustomJvp: case Op::CustomVjp: case Op::CustomVjpLin: case Op::Checkpoint: case Op::LinearSolve:
    case Op::HostCall: case Op::NamedAxis: case Op::Real: case Op::Imag: case Op::Conj: case Op::Complex: case Op::Fft:
      break;
  }
  throw InternalError("cpu::elementwise: " + std::string(op_name(op)) + " is not a float elementwise op");
}

void bool_op(Op op, std::span<const Operand> in, std::byte* out, std::int64_t n) {
  using B = std::uint8_t;
  switch (op) {
    case Op::Not: return map1<B, B>(in, out, n, [](B x) { return !x; });
    case Op::And: return map2<B, B>(in, out, n, [](B a, B b) { return a && b; });
    case Op::Or: return map2<B, B>(in, out, n, [](B a, B b) { return a || b; });
    case Op::Xor: return map2<B, B>(in, out, n, [](B a, B b) { return a != b; });
    default:
      if (compare_or_select<B>(op, in, out, n)) return;
      break;  // every other op is rejected below; the float switch above is exhaustive
  }
  throw InternalError("cpu::elementwise: " + std::string(op_name(op)) + " is not a bool elementwise op");
}

// Integer kernels. Arithmetic runs in the unsigned type so that overflow wraps (two's
// complement) instead of being undefined; division and remainder follow XLA at the edges.
template <class T>
void int_op(Op op, std::span<const Operand> in, std::byte* out, std::int64_t n) {
  using U = std::make_unsigned_t<T>;
  constexpr T lo = std::numeric_limits<T>::min();
  constexpr int bits = static_cast<int>(sizeof(T) * 8);
  switch (op) {
    case Op::Neg: return map1<T, T>(in, out, n, [](T x) { return static_cast<T>(U(0) - static_cast<U>(x)); });
    case Op::Abs:
      return map1<T, T>(in, out, n, [](T x) { return x < 0 ? static_cast<T>(U(0) - static_cast<U>(x)) : x; });
    case Op::Sign: return map1<T, T>(in, out, n, [](T x) { return static_cast<T>((x > 0) - (x < 0)); });
    case Op::Floor: case Op::Ceil: case Op::Round: case Op::StopGradient:
      return map1<T, T>(in, out, n, [](T x) { return x; });
    case Op::Not: return map1<T, T>(in, out, n, [](T x) { return static_cast<T>(~x); });
    case Op::Add:
      return map2<T, T>(in, out, n, [](T a, T b) { return static_cast<T>(static_cast<U>(a) + static_cast<U>(b)); });
    case Op::Sub:
      return map2<T, T>(in, out, n, [](T a, T b) { return static_cast<T>(static_cast<U>(a) - static_cast<U>(b)); });
    case Op::Mul:
      return map2<T, T>(in, out, n, [](T a, T b) { return static_cast<T>(static_cast<U>(a) * static_cast<U>(b)); });
    case Op::Div:
      return map2<T, T>(in, out, n, [](T a, T b) -> T {
        if (b == 0) return T(-1);
        if (a == lo && b == T(-1)) return lo;
        return static_cast<T>(a / b);
      });
    case Op::Rem:
      return map2<T, T>(in, out, n, [](T a, T b) -> T {
        if (b == 0) return a;
        if (b == T(-1)) return 0;
        return static_cast<T>(a % b);
      });
    case Op::Pow:
      return map2<T, T>(in, out, n, [](T a, T b) -> T {  // by squaring; a negative power is 0 (but of +-1)
        if (b < 0) return a == 1 ? T(1) : a == T(-1) ? ((b & 1) ? T(-1) : T(1)) : T(0);
        U r = 1, base = static_cast<U>(a);
        for (T e = b; e; e >>= 1) {
          if (e & 1) r *= base;
          base *= base;
        }
        return static_cast<T>(r);
      });
    case Op::Max: return map2<T, T>(in, out, n, [](T a, T b) { return a > b ? a : b; });
    case Op::Min: return map2<T, T>(in, out, n, [](T a, T b) { return a < b ? a : b; });
    case Op::And: return map2<T, T>(in, out, n, [](T a, T b) { return static_cast<T>(a & b); });
    case Op::Or: return map2<T, T>(in, out, n, [](T a, T b) { return static_cast<T>(a | b); });
    case Op::Xor: return map2<T, T>(in, out, n, [](T a, T b) { return static_cast<T>(a ^ b); });
    case Op::ShiftLeft:
      return map2<T, T>(in, out, n, [](T a, T b) -> T {
        return b < 0 || b >= bits ? T(0) : static_cast<T>(static_cast<U>(a) << b);
      });
    case Op::ShiftRight:
      return map2<T, T>(in, out, n, [](T a, T b) -> T {
        return b < 0 || b >= bits ? (a < 0 ? T(-1) : T(0)) : static_cast<T>(a >> b);
      });
    default:
      if (compare_or_select<T>(op, in, out, n)) return;
      break;  // every other op is rejected below; the float switch above is exhaustive
  }
  throw InternalError("cpu::elementwise: " + std::string(op_name(op)) + " is not an integer elementwise op");
}

template <class From>
void convert_from(DType to, std::span<const Operand> in, std::byte* out, std::int64_t n) {
  switch (to) {
    case DType::f32: return map1<From, float>(in, out, n, [](From x) { return static_cast<float>(x); });
    case DType::f64: return map1<From, double>(in, out, n, [](From x) { return static_cast<double>(x); });
    case DType::bool_: return map1<From, std::uint8_t>(in, out, n, [](From x) { return x != From(0); });  // NaN -> true
    case DType::i32: case DType::i64: QB_NARROW_INT_CASES: break;
    case DType::c64: case DType::c128: throw InternalError("cpu::convert: complex values are lowered before planning");
  }
  auto to_int = [&](auto tag) {
    using I = decltype(tag);
    if constexpr (std::is_floating_point_v<From>) return map1<From, I>(in, out, n, [](From x) { return float_to_int<I>(x); });
    else return map1<From, I>(in, out, n, [](From x) { return static_cast<I>(x); });  // integers wrap (NumPy's astype)
  };
  switch (to) {
    case DType::i32: return to_int(std::int32_t{});
    case DType::i64: return to_int(std::int64_t{});
    // The narrow integers appear only in conversions (lower_narrow.h).
    case DType::i8: return to_int(std::int8_t{});
    case DType::i16: return to_int(std::int16_t{});
    case DType::u8: return to_int(std::uint8_t{});
    case DType::u16: return to_int(std::uint16_t{});
    case DType::u32: return to_int(std::uint32_t{});
    default: break;
  }
  throw InternalError("cpu::convert: unsupported target dtype");
}

}  // namespace

void elementwise(Op op, DType in_dtype, DType out_dtype, std::span<const Operand> in, std::byte* out,
                 std::int64_t n) {
  if (op == Op::Convert) {
    switch (in_dtype) {
      case DType::f32: return convert_from<float>(out_dtype, in, out, n);
      case DType::f64: return convert_from<double>(out_dtype, in, out, n);
      case DType::bool_: return convert_from<std::uint8_t>(out_dtype, in, out, n);
      case DType::i32: return convert_from<std::int32_t>(out_dtype, in, out, n);
      case DType::i64: return convert_from<std::int64_t>(out_dtype, in, out, n);
      case DType::i8: return convert_from<std::int8_t>(out_dtype, in, out, n);
      case DType::i16: return convert_from<std::int16_t>(out_dtype, in, out, n);
      case DType::u8: return convert_from<std::uint8_t>(out_dtype, in, out, n);
      case DType::u16: return convert_from<std::uint16_t>(out_dtype, in, out, n);
      case DType::u32: return convert_from<std::uint32_t>(out_dtype, in, out, n);
      case DType::c64: case DType::c128: break;  // lowered before planning
    }
    throw InternalError("cpu::convert: unsupported source dtype");
  }
  switch (in_dtype) {
    case DType::f32: return float_op<float>(op, in, out, n);
    case DType::f64: return float_op<double>(op, in, out, n);
    case DType::bool_: return bool_op(op, in, out, n);
    case DType::i32: return int_op<std::int32_t>(op, in, out, n);
    case DType::i64: return int_op<std::int64_t>(op, in, out, n);
    case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;  // lowered before planning
  }
  throw InternalError("cpu::elementwise: unknown dtype");
}

}  // namespace qb::cpu
