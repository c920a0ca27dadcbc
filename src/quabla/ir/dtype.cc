#include "quabla/ir/dtype.h"

#include <atomic>
#include <cstring>

namespace qb {

namespace {
std::atomic<DType> g_default_float{DType::f64};

template <class T>
void put(void* p, T v) { std::memcpy(p, &v, sizeof(T)); }
}  // namespace

DType default_float_dtype() { return g_default_float.load(std::memory_order_relaxed); }
DType default_int_dtype() { return default_float_dtype() == DType::f32 ? DType::i32 : DType::i64; }
DType exchange_default_float_dtype(DType d) { return g_default_float.exchange(d); }

DType inexact_dtype(DType d) {
  switch (d) {
    case DType::f32: case DType::f64: case DType::c64: case DType::c128: return d;
    case DType::i32: case DType::i8: case DType::i16: case DType::u8: case DType::u16: case DType::u32:
      return DType::f32;  // JAX's: every integer of up to 32 bits computes in float32
    case DType::i64: return DType::f64;
    case DType::bool_: return default_float_dtype();
  }
  return d;
}

void store_double(DType t, void* p, double value) {
  switch (t) {
    case DType::f32: return put(p, static_cast<float>(value));
    case DType::f64: return put(p, value);
    case DType::bool_: return put(p, static_cast<std::uint8_t>(value != 0 || value != value));
    case DType::i32: return put(p, float_to_int<std::int32_t>(value));
    case DType::i64: return put(p, float_to_int<std::int64_t>(value));
    case DType::i8: return put(p, float_to_int<std::int8_t>(value));
    case DType::i16: return put(p, float_to_int<std::int16_t>(value));
    case DType::u8: return put(p, float_to_int<std::uint8_t>(value));
    case DType::u16: return put(p, float_to_int<std::uint16_t>(value));
    case DType::u32: return put(p, float_to_int<std::uint32_t>(value));
    case DType::c64: case DType::c128: return store_complex(t, p, value, 0.0);
  }
}

void store_complex(DType t, void* p, double re, double im) {
  switch (t) {
    case DType::c64:
      put(p, static_cast<float>(re));
      return put(static_cast<char*>(p) + sizeof(float), static_cast<float>(im));
    case DType::c128:
      put(p, re);
      return put(static_cast<char*>(p) + sizeof(double), im);
    case DType::bool_: return put(p, static_cast<std::uint8_t>(re != 0 || im != 0 || re != re || im != im));
    case DType::f32: case DType::f64: case DType::i32: case DType::i64: case DType::i8: case DType::i16:
    case DType::u8: case DType::u16: case DType::u32: return store_double(t, p, re);
  }
}

void store_int64(DType t, void* p, std::int64_t value) {
  switch (t) {
    case DType::f32: return put(p, static_cast<float>(value));
    case DType::f64: return put(p, static_cast<double>(value));
    case DType::bool_: return put(p, static_cast<std::uint8_t>(value != 0));
    case DType::i32: return put(p, static_cast<std::int32_t>(static_cast<std::uint32_t>(value)));
    case DType::i64: return put(p, value);
    case DType::i8: return put(p, static_cast<std::int8_t>(static_cast<std::uint8_t>(value)));
    case DType::i16: return put(p, static_cast<std::int16_t>(static_cast<std::uint16_t>(value)));
    case DType::u8: return put(p, static_cast<std::uint8_t>(value));
    case DType::u16: return put(p, static_cast<std::uint16_t>(value));
    case DType::u32: return put(p, static_cast<std::uint32_t>(value));
    case DType::c64: case DType::c128: return store_complex(t, p, static_cast<double>(value), 0.0);
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::bool_: return "bool";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::c64: return "complex64";
    case DType::c128: return "complex128";
    case DType::i8: return "int8";
    case DType::i16: return "int16";
    case DType::u8: return "uint8";
    case DType::u16: return "uint16";
    case DType::u32: return "uint32";
  }
  return "?";
}

std::string_view dtype_short_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::bool_: return "bool";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::c64: return "c64";
    case DType::c128: return "c128";
    case DType::i8: return "i8";
    case DType::i16: return "i16";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
  }
  return "?";
}

}  // namespace qb
