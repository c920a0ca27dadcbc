// Element types of Quabla arrays.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace qb {

// int32 is reserved for indices and counters (API.md §1 [beyond]); no op produces it yet.
enum class DType : std::uint8_t { f32, f64, bool_, i32 };

constexpr std::size_t itemsize(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::bool_: return 1;
    case DType::i32: return 4;
  }
  return 0;
}

constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }

// "float32" | "float64" | "bool" | "int32" (NumPy's names).
std::string_view dtype_name(DType t);
// "f32" | "f64" | "bool" | "i32" (the IR's short names).
std::string_view dtype_short_name(DType t);

}  // namespace qb
