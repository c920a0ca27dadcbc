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
  store_double(dtype, a.storage->data(), value);
  return a;
}

}  // namespace qb
