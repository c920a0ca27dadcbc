// quabla._core random functions: keys are pairs of 32-bit words (python/quabla/random.py
// wraps them); sampling fills a new array in C++.
#include <nanobind/stl/array.h>

#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/random/threefry.h"

namespace qb::py {

namespace {

random::Key to_key(std::uint32_t k0, std::uint32_t k1) { return {k0, k1}; }

Shape sample_shape(nb::handle shape, const char* fname) {
  Shape s = parse_shape(shape, fname);
  check_shape(s, fname, /*allow_zero=*/true);  // empty draws are empty arrays, as in JAX
  return s;
}

template <class Fill>
Array sample(nb::handle shape, nb::handle dtype, const char* fname, Fill&& fill) {
  const DType d = parse_dtype(dtype).value_or(default_float_dtype());
  if (!is_float(d)) throw TypeError(std::string(fname) + ": dtype must be qb.float32 or qb.float64");
  Array a = Array::empty(d, sample_shape(shape, fname));
  const auto n = static_cast<std::size_t>(a.size());
  if (d == DType::f32) fill(std::span<float>(a.storage->as<float>(), n));
  else fill(std::span<double>(a.storage->as<double>(), n));
  return a;
}

}  // namespace

void bind_random(nb::module_& m) {
  m.def("threefry2x32", [](std::uint32_t k0, std::uint32_t k1, std::uint32_t c0, std::uint32_t c1) {
    return random::threefry2x32(to_key(k0, k1), {c0, c1});
  });
  // Both words of every block, as int32 arrays holding the same bits (there is no uint32).
  m.def("random_blocks", [](std::uint32_t k0, std::uint32_t k1, nb::handle shape) {
    const Shape s = sample_shape(shape, "bits");
    Array first = Array::empty(DType::i32, s), second = Array::empty(DType::i32, s);
    const auto n = static_cast<std::size_t>(first.size());
    random::blocks(to_key(k0, k1), std::span<std::uint32_t>(reinterpret_cast<std::uint32_t*>(first.storage->as<std::int32_t>()), n),
                   std::span<std::uint32_t>(reinterpret_cast<std::uint32_t*>(second.storage->as<std::int32_t>()), n));
    return nb::make_tuple(first, second);
  });
  m.def("random_uniform", [](std::uint32_t k0, std::uint32_t k1, nb::handle shape, nb::handle dtype, double lo, double hi) {
    return sample(shape, dtype, "uniform", [&](auto out) { random::uniform(to_key(k0, k1), lo, hi, out); });
  }, nb::arg("k0"), nb::arg("k1"), nb::arg("shape"), nb::arg("dtype").none(), nb::arg("lo") = 0.0, nb::arg("hi") = 1.0);
  m.def("random_normal", [](std::uint32_t k0, std::uint32_t k1, nb::handle shape, nb::handle dtype) {
    return sample(shape, dtype, "normal", [&](auto out) { random::normal(to_key(k0, k1), out); });
  }, nb::arg("k0"), nb::arg("k1"), nb::arg("shape"), nb::arg("dtype").none());
  m.def("random_truncated_normal", [](std::uint32_t k0, std::uint32_t k1, double lower, double upper, nb::handle shape,
                                      nb::handle dtype) {
    if (!(lower < upper)) throw ValueError("truncated_normal: lower must be below upper");
    return sample(shape, dtype, "truncated_normal",
                  [&](auto out) { random::truncated_normal(to_key(k0, k1), lower, upper, out); });
  }, nb::arg("k0"), nb::arg("k1"), nb::arg("lower"), nb::arg("upper"), nb::arg("shape"), nb::arg("dtype").none());
}

}  // namespace qb::py
