// Eager execution (api/eager.h): programs are built once per key and argument signature.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "quabla/api/eager.h"
#include "quabla/api/functions.h"
#include "quabla/ir/errors.h"

namespace qb {
namespace {

using api::V;

Array array_f32(Shape shape, const std::vector<float>& xs) {
  Array a = Array::empty(DType::f32, std::move(shape));
  EXPECT_EQ(static_cast<std::size_t>(a.size()), xs.size());
  std::memcpy(a.storage->data(), xs.data(), xs.size() * sizeof(float));
  return a;
}

std::vector<float> values_f32(const Array& a) {
  std::vector<float> out(static_cast<std::size_t>(a.size()));
  std::memcpy(out.data(), a.data(), out.size() * sizeof(float));
  return out;
}

// x * 2 + y, broadcasting y.
std::vector<Array> axpy(std::span<const Array> args) {
  return eager_call("test_eager.axpy", args, [](Builder& b, std::span<const ValueId> p) {
    V two = api::scalar_constant(b, 2.0, DType::f32);
    V t = api::binary(b, "multiply", Op::Mul, p[0], two);
    return std::vector<ValueId>{api::binary(b, "add", Op::Add, t, p[1])};
  });
}

TEST(Eager, ComputesValues) {
  const Array args[] = {array_f32({2, 2}, {1, 2, 3, 4}), array_f32({2}, {10, 20})};
  auto out = axpy(args);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, (ValueType{DType::f32, {2, 2}, false}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{12, 24, 16, 28}));
}

TEST(Eager, CachesByKeyAndSignature) {
  const Array args[] = {array_f32({3}, {1, 2, 3}), array_f32({3}, {0.5f, 0.5f, 0.5f})};
  axpy(args);
  const std::size_t after_first = eager_cache_size();
  auto out = axpy(args);  // identical call: a cache hit
  EXPECT_EQ(eager_cache_size(), after_first);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2.5f, 4.5f, 6.5f}));

  // Same types, different values: still a hit.
  const Array args2[] = {array_f32({3}, {-1, 0, 1}), array_f32({3}, {1, 1, 1})};
  out = axpy(args2);
  EXPECT_EQ(eager_cache_size(), after_first);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{-1, 1, 3}));

  // A different shape compiles a new program.
  const Array args3[] = {array_f32({4}, {1, 1, 1, 1}), array_f32({4}, {0, 1, 2, 3})};
  out = axpy(args3);
  EXPECT_EQ(eager_cache_size(), after_first + 1);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2, 3, 4, 5}));

  // A weak scalar argument is part of the signature too.
  const Array args4[] = {array_f32({4}, {1, 2, 3, 4}), Array::scalar(1.0, DType::f64, /*weak=*/true)};
  out = axpy(args4);
  EXPECT_EQ(eager_cache_size(), after_first + 2);
  EXPECT_EQ(out[0].type, (ValueType{DType::f32, {4}, false}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{3, 5, 7, 9}));
  axpy(args4);
  EXPECT_EQ(eager_cache_size(), after_first + 2);
}

TEST(Eager, DifferentKeySameTypesIsANewProgram) {
  const Array args[] = {array_f32({2}, {1, 4})};
  auto sqrt_fn = [](Builder& b, std::span<const ValueId> p) {
    return std::vector<ValueId>{api::unary(b, "sqrt", Op::Sqrt, p[0])};
  };
  auto out = eager_call("test_eager.sqrt", args, sqrt_fn);
  const std::size_t n = eager_cache_size();
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 2}));
  out = eager_call("test_eager.sqrt", args, sqrt_fn);
  EXPECT_EQ(eager_cache_size(), n);
  out = eager_call("test_eager.sqrt_again", args, sqrt_fn);
  EXPECT_EQ(eager_cache_size(), n + 1);
}

TEST(Eager, SignatureEncodesTypes) {
  std::string k1 = "f", k2 = "f", k3 = "f";
  const Array a[] = {Array::empty(DType::f32, {2, 3})};
  const Array b[] = {Array::empty(DType::f32, {3, 2})};
  const Array c[] = {Array::empty(DType::f64, {2, 3})};
  append_signature(k1, a);
  append_signature(k2, b);
  append_signature(k3, c);
  EXPECT_NE(k1, k2);
  EXPECT_NE(k1, k3);
  EXPECT_NE(k2, k3);
}

TEST(Eager, BuildErrorsPropagateAndAreNotCached) {
  const Array args[] = {array_f32({2}, {1, 2}), array_f32({3}, {1, 2, 3})};
  const std::size_t n = eager_cache_size();
  EXPECT_THROW(axpy(args), ValueError);  // [2] and [3] do not broadcast
  EXPECT_EQ(eager_cache_size(), n);
}

}  // namespace
}  // namespace qb
