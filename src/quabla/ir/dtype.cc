#include "quabla/ir/dtype.h"

namespace qb {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::bool_: return "bool";
    case DType::i32: return "int32";
  }
  return "?";
}

std::string_view dtype_short_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::bool_: return "bool";
    case DType::i32: return "i32";
  }
  return "?";
}

}  // namespace qb
