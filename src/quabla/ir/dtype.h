// Element types of Quabla arrays.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

namespace qb {

// Signed integers wrap on overflow (two's complement, as XLA); they carry no derivatives.
// The narrow integers (i8, i16, u8, u16, u32) are storage and semantics only: the compiler
// computes them in their wide dtype (i32, or i64 for u32) and wraps each result back into
// range (transforms/lower_narrow.h), so backends see them only in conversions.
// c64 and c128 hold (real, imaginary) pairs of f32 and f64, interleaved (NumPy's layout):
// a c64[S] buffer is byte for byte an f32[S..., 2] one. Backends never see them: the
// compiler lowers complex values to real ones first (transforms/lower_complex.h).
enum class DType : std::uint8_t { f32, f64, bool_, i32, i64, c64, c128, i8, i16, u8, u16, u32 };

constexpr std::size_t itemsize(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::bool_: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::c64: return 8;
    case DType::c128: return 16;
    case DType::i8: case DType::u8: return 1;
    case DType::i16: case DType::u16: return 2;
    case DType::u32: return 4;
  }
  return 0;
}

constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }
constexpr bool is_unsigned(DType t) { return t == DType::u8 || t == DType::u16 || t == DType::u32; }
// The integers a backend computes in (i32, i64), and the narrow ones it only stores.
constexpr bool is_wide_int(DType t) { return t == DType::i32 || t == DType::i64; }
constexpr bool is_narrow_int(DType t) {
  return t == DType::i8 || t == DType::i16 || is_unsigned(t);
}
constexpr bool is_int(DType t) { return is_wide_int(t) || is_narrow_int(t); }
// The dtype a narrow integer computes in: every value of it is exact there (i32; i64 for u32).
constexpr DType wide_int(DType t) { return t == DType::u32 ? DType::i64 : is_narrow_int(t) ? DType::i32 : t; }
// The narrow integers as switch cases, for the switches of backends that never see them.
#define QB_NARROW_INT_CASES case DType::i8: case DType::i16: case DType::u8: case DType::u16: case DType::u32
constexpr int int_bits(DType t) { return static_cast<int>(itemsize(t)) * 8; }
// The range of an integer dtype (for i64 the whole of int64).
constexpr std::int64_t int_min(DType t) {
  return is_unsigned(t) ? 0 : t == DType::i64 ? std::numeric_limits<std::int64_t>::min()
                                               : -(std::int64_t{1} << (int_bits(t) - 1));
}
constexpr std::int64_t int_max(DType t) {
  return t == DType::i64 ? std::numeric_limits<std::int64_t>::max()
                         : (std::int64_t{1} << (int_bits(t) - (is_unsigned(t) ? 0 : 1))) - 1;
}
constexpr bool is_complex(DType t) { return t == DType::c64 || t == DType::c128; }
// Float or complex: the dtypes that carry derivatives.
constexpr bool is_inexact(DType t) { return is_float(t) || is_complex(t); }
// The real dtype of a complex one's parts (f32 for c64), and the complex dtype of a float.
constexpr DType complex_part(DType t) { return t == DType::c128 ? DType::f64 : t == DType::c64 ? DType::f32 : t; }
constexpr DType complex_of(DType t) { return t == DType::f64 ? DType::c128 : DType::c64; }

// Float -> integer as XLA converts (and JAX therefore does): toward zero, saturating at the
// type's range, NaN -> 0. A plain static_cast is undefined behaviour outside the range.
template <class I, class F>
constexpr I float_to_int(F x) {
  if (x != x) return 0;
  if (x <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (x >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(x);
}

// Writes one element of dtype t at p: floats round, integers convert as float_to_int, bool
// is value != 0 (NaN is true, as NumPy), complex gets a zero imaginary part.
void store_double(DType t, void* p, double value);
// The same for a complex value: a real dtype takes the real part (NumPy's astype).
void store_complex(DType t, void* p, double re, double im);
// The same for an exact integer (floats round to nearest; integers wrap as NumPy's astype).
void store_int64(DType t, void* p, std::int64_t value);

// The dtype of Python floats and of values promoted to a float (float64 unless
// qb.set_default_dtype chose float32), and the integer dtype that goes with it (int64 with
// float64, int32 with float32, as JAX's x64 flag pairs them). Process-wide.
DType default_float_dtype();
DType default_int_dtype();
DType exchange_default_float_dtype(DType d);  // returns the previous one
// The float dtype an integer or bool computes in where a float is needed (sqrt, true
// division, mean): int32 -> float32 and int64 -> float64 (as JAX), bool -> the default;
// floats and complex stay.
DType inexact_dtype(DType d);

// "float32" | "float64" | "bool" | "int32" | "int64" | "complex64" | "complex128" | "int8" |
// "int16" | "uint8" | "uint16" | "uint32" (NumPy's).
std::string_view dtype_name(DType t);
// "f32" | "f64" | "bool" | "i32" | "i64" | "c64" | "c128" | "i8" | "i16" | "u8" | "u16" | "u32"
// (the IR's short names).
std::string_view dtype_short_name(DType t);

}  // namespace qb
