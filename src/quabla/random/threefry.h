// Counter-based random numbers: Threefry-2x32 with 20 rounds (Salmon et al., "Parallel
// random numbers: as easy as 1, 2, 3", SC 2011; the generator JAX uses). A key is two
// 32-bit words; block i of a stream is threefry(key, counter(i)). Splitting and folding
// in data use their own counter domains, so derived keys never collide with samples.
#pragma once
#include <array>
#include <cstdint>
#include <span>

namespace qb::random {

using Key = std::array<std::uint32_t, 2>;

std::array<std::uint32_t, 2> threefry2x32(Key key, std::array<std::uint32_t, 2> counter);

Key key_from_seed(std::uint64_t seed);
Key split(Key key, std::uint32_t index);  // the index-th of the keys split from `key`
Key fold_in(Key key, std::uint32_t data);

// The blocks themselves: words[0][i], words[1][i] = threefry(key, counter(i)) (the raw bits
// integer samplers and sort keys are made of).
void blocks(Key key, std::span<std::uint32_t> first, std::span<std::uint32_t> second);

// Fills out with uniform floats in [0, 1) (24 random bits for float, 52 for double).
void uniform(Key key, std::span<float> out);
void uniform(Key key, std::span<double> out);
// Standard normal samples (Box-Muller from two uniforms per sample, computed in double).
void normal(Key key, std::span<float> out);
void normal(Key key, std::span<double> out);
// Standard normal samples truncated to [lower, upper] (inverse CDF).
void truncated_normal(Key key, double lower, double upper, std::span<float> out);
void truncated_normal(Key key, double lower, double upper, std::span<double> out);

}  // namespace qb::random
