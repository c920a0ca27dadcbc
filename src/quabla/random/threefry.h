// Counter-based random numbers: Threefry-2x32 with 20 rounds (Salmon et al., "Parallel
// random numbers: as easy as 1, 2, 3", SC 2011), derived and mapped to samples exactly as
// jax.random does (its default, partitionable scheme), so the same key gives JAX's bits:
// a key is two 32-bit words; key(seed) is the seed's two halves; block i of a key is
// threefry(key, (i >> 32, i & 0xFFFFFFFF)); split(key)[i] is block i, fold_in(key, d)
// is block d. Samples take their bits from block i: 32-bit draws the xor of its words,
// 64-bit draws the words side by side.
#pragma once
#include <array>
#include <cstdint>
#include <span>

namespace qb::random {

using Key = std::array<std::uint32_t, 2>;

std::array<std::uint32_t, 2> threefry2x32(Key key, std::array<std::uint32_t, 2> counter);

Key key_from_seed(std::uint64_t seed);
Key split(Key key, std::uint64_t index);  // the index-th of the keys split from `key`
Key fold_in(Key key, std::uint32_t data);

// The blocks themselves: first[i], second[i] = the words of block i (the raw bits integer
// samplers and sort keys are made of).
void blocks(Key key, std::span<std::uint32_t> first, std::span<std::uint32_t> second);

// Uniform floats: the sample dtype's mantissa bits as u in [0, 1), then max(lo, u (hi - lo) + lo)
// in the sample dtype (lo and hi rounded to it first), as jax.random.uniform.
void uniform(Key key, double lo, double hi, std::span<float> out);
void uniform(Key key, double lo, double hi, std::span<double> out);
// Standard normals: sqrt(2) erfinv(u) for u uniform in (-1, 1), as jax.random.normal
// (float32 by Giles's single-precision erfinv, the one XLA uses; float64 within a few ulp).
void normal(Key key, std::span<float> out);
void normal(Key key, std::span<double> out);
// Standard normals truncated to [lower, upper]: sqrt(2) erfinv of u uniform in
// (erf(lower / sqrt 2), erf(upper / sqrt 2)), clipped inside the bounds (jax.random's).
void truncated_normal(Key key, double lower, double upper, std::span<float> out);
void truncated_normal(Key key, double lower, double upper, std::span<double> out);

// sqrt(2) erfinv(u[i]) for |u| < 1, in place, as normal() computes it.
void sqrt2_erfinv(std::span<float> u);
void sqrt2_erfinv(std::span<double> u);

}  // namespace qb::random
