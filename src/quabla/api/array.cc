#include "quabla/api/array.h"

namespace qb {

Array Array::empty(DType dtype, Shape shape) {
  const auto n = static_cast<std::size_t>(num_elements(shape));
  Array a;
  a.storage = Buffer::allocate(n * itemsize(dtype));
  a.type = ValueType{dtype, std::move(shape), false};
  return a;
}

Array Array::scalar(double value, DType dtype, bool weak) {
  Array a = empty(dtype, {});
  a.type.weak = weak;
  switch (dtype) {
    case DType::f32: *a.storage->as<float>() = static_cast<float>(value); break;
    case DType::f64: *a.storage->as<double>() = value; break;
    case DType::bool_: *a.storage->as<std::uint8_t>() = value != 0; break;
    case DType::i32: *a.storage->as<std::int32_t>() = static_cast<std::int32_t>(value); break;
  }
  return a;
}

}  // namespace qb
