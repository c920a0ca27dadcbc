#include "quabla/random/threefry.h"

#include <cmath>

#include <algorithm>
#include <bit>
#include <limits>
#include <type_traits>

#include "quabla/backends/cpu/erfinv.h"
#include "quabla/backends/cpu/vector_math.h"
#include "quabla/runtime/thread_pool.h"

// Compiled with -ffp-contract=off (CMakeLists.txt): the multiply-adds XLA fuses are written
// as std::fma, and no others are fused, so samples round as JAX's on the CPU.

namespace qb::random {

namespace {

constexpr std::uint32_t rotl(std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

constexpr std::int64_t kChunk = 512;

std::array<std::uint32_t, 2> block(Key key, std::uint64_t i) {
  return threefry2x32(key, {static_cast<std::uint32_t>(i >> 32), static_cast<std::uint32_t>(i)});
}

constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};

// Threefry-2x32 on (x0, x1) already holding counter + (ks0, ks1): 20 rounds, fully unrolled
// with constant rotations so that a loop over blocks vectorises (8 blocks per AVX2 step).
template <int Round = 0>
inline void rounds(std::uint32_t& x0, std::uint32_t& x1, const std::uint32_t (&ks)[3]) {
  if constexpr (Round < 5) {
    x0 += x1; x1 = rotl(x1, kRot[(Round % 2) * 4 + 0]) ^ x0;
    x0 += x1; x1 = rotl(x1, kRot[(Round % 2) * 4 + 1]) ^ x0;
    x0 += x1; x1 = rotl(x1, kRot[(Round % 2) * 4 + 2]) ^ x0;
    x0 += x1; x1 = rotl(x1, kRot[(Round % 2) * 4 + 3]) ^ x0;
    x0 += ks[(Round + 1) % 3];
    x1 += ks[(Round + 2) % 3] + static_cast<std::uint32_t>(Round + 1);
    rounds<Round + 1>(x0, x1, ks);
  }
}

// The words of blocks start .. start + m - 1.
void fill_blocks(Key key, std::uint64_t start, std::int64_t m, std::uint32_t* first, std::uint32_t* second) {
  const std::uint32_t ks[3] = {key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDAu};
  for (std::int64_t j = 0; j < m; ++j) {
    const std::uint64_t i = start + static_cast<std::uint64_t>(j);
    std::uint32_t x0 = static_cast<std::uint32_t>(i >> 32) + ks[0], x1 = static_cast<std::uint32_t>(i) + ks[1];
    rounds(x0, x1, ks);
    first[j] = x0;
    second[j] = x1;
  }
}

// [0, 1) from a block: the dtype's mantissa bits under an exponent of 0 (1.m), minus 1,
// which is m 2^-mantissa exactly (and vectorises, unlike an integer conversion).
template <class T>
T unit(std::uint32_t first, std::uint32_t second) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(((first ^ second) >> 9) | 0x3F800000u) - 1.0f;
  } else {
    const std::uint64_t bits = (static_cast<std::uint64_t>(first) << 32) | second;
    return std::bit_cast<double>((bits >> 12) | 0x3FF0000000000000ull) - 1.0;
  }
}

// max(lo, u span + lo) in the sample dtype; NaN propagates as through XLA's max. XLA fuses
// the multiply and the add into one rounding (an FMA), and so does this.
template <class T>
T affine(T u, T lo, T span) {
  const T v = std::fma(u, span, lo);
  return v < lo ? lo : v;
}

// x[j] = max(lo, u span + lo) for the blocks start .. start + m - 1.
template <class T>
void affine_chunk(Key key, std::uint64_t start, std::int64_t m, T lo, T span, T* x) {
  std::uint32_t first[kChunk], second[kChunk];
  fill_blocks(key, start, m, first, second);
  for (std::int64_t j = 0; j < m; ++j) x[j] = affine(unit<T>(first[j], second[j]), lo, span);
}


// Runs body(start, count) over chunks of at most kChunk samples, in parallel.
template <class Body>
void chunked(std::int64_t n, Body&& body) {
  parallel_for(n, 65536, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t start = b; start < e; start += kChunk) body(start, std::min(kChunk, e - start));
  });
}

// float32: Giles's approximation in float arithmetic, operation for operation as XLA's
// ErfInv evaluates it (w = -log1p(-x x), Horner steps fused into FMAs as XLA's CPU code
// does), so float32 normals are JAX's to the last bit or two (log1p's implementations differ
// in the last bit).
void sqrt2_erfinv_chunk(float* x, std::int64_t m) {
  float t[kChunk] = {}, w[kChunk];  // zeroed: GCC cannot see that only m entries are read
  for (std::int64_t j = 0; j < m; ++j) t[j] = -(x[j] * x[j]);
  if (!cpu::vector_unary_f32(Op::Log1p, t, w, m))
    for (std::int64_t j = 0; j < m; ++j) w[j] = std::log1p(t[j]);
  const float sqrt2 = static_cast<float>(std::sqrt(2.0));
  for (std::int64_t j = 0; j < m; ++j) {
    const float wj = -w[j];
    const bool lt = wj < 5.0f;
    const float s = lt ? wj - 2.5f : std::sqrt(wj) - 3.0f;
    float p = static_cast<float>(lt ? cpu::kGilesCentral[0] : cpu::kGilesTail[0]);
    for (int i = 1; i < 9; ++i) p = std::fma(p, s, static_cast<float>(lt ? cpu::kGilesCentral[i] : cpu::kGilesTail[i]));
    float r = p * x[j];
    if (std::fabs(x[j]) == 1.0f) r = x[j] * std::numeric_limits<float>::infinity();
    x[j] = sqrt2 * r;
  }
}

// float64: the accurate inverse (backends/cpu/erfinv.cc), times sqrt(2).
void sqrt2_erfinv_chunk(double* x, std::int64_t m) {
  cpu::erfinv_f64(x, x, m);
  const double sqrt2 = std::sqrt(2.0);
  for (std::int64_t j = 0; j < m; ++j) x[j] = sqrt2 * x[j];
}

template <class T>
void sqrt2_erfinv_all(std::span<T> u) {
  chunked(static_cast<std::int64_t>(u.size()), [&](std::int64_t start, std::int64_t m) {
    sqrt2_erfinv_chunk(u.data() + start, m);
  });
}

template <class T>
void uniform_draw(Key key, double lo, double hi, std::span<T> out) {
  const T lo_t = static_cast<T>(lo), hi_t = static_cast<T>(hi), span = hi_t - lo_t;
  const T below_hi = std::nextafter(hi_t, lo_t);
  chunked(static_cast<std::int64_t>(out.size()), [&](std::int64_t start, std::int64_t m) {
    T* x = out.data() + start;
    affine_chunk(key, static_cast<std::uint64_t>(start), m, lo_t, span, x);
    // Samples stay below hi: where rounding reaches it (JAX then returns hi itself), the
    // float below it.
    for (std::int64_t j = 0; j < m; ++j) x[j] = x[j] >= hi_t ? below_hi : x[j];
  });
}

// sqrt(2) erfinv(u) for u = max(lo, unit span + lo), clipped to [clip_lo, clip_hi].
template <class T>
void erfinv_draw(Key key, T lo, T span, T clip_lo, T clip_hi, std::span<T> out) {
  chunked(static_cast<std::int64_t>(out.size()), [&](std::int64_t start, std::int64_t m) {
    T* x = out.data() + start;
    affine_chunk(key, static_cast<std::uint64_t>(start), m, lo, span, x);
    sqrt2_erfinv_chunk(x, m);
    for (std::int64_t j = 0; j < m; ++j) x[j] = std::min(std::max(x[j], clip_lo), clip_hi);
  });
}

template <class T>
void normal_draw(Key key, std::span<T> out) {
  // u uniform in (-1, 1): lo = the float above -1, as JAX's _normal_real.
  const T lo = std::nextafter(static_cast<T>(-1), static_cast<T>(0)), span = static_cast<T>(1) - lo;
  const T inf = std::numeric_limits<T>::infinity();
  erfinv_draw<T>(key, lo, span, -inf, inf, out);
}

template <class T>
void truncated_draw(Key key, double lower, double upper, std::span<T> out) {
  const T sqrt2 = static_cast<T>(std::sqrt(2.0));
  const T lo = static_cast<T>(lower), hi = static_cast<T>(upper);
  const T a = std::erf(lo / sqrt2), b = std::erf(hi / sqrt2);
  const T inf = std::numeric_limits<T>::infinity();
  erfinv_draw<T>(key, a, b - a, std::nextafter(lo, inf), std::nextafter(hi, -inf), out);
}

}  // namespace

std::array<std::uint32_t, 2> threefry2x32(Key key, std::array<std::uint32_t, 2> ctr) {
  const std::uint32_t ks[3] = {key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDAu};
  std::uint32_t x0 = ctr[0] + ks[0], x1 = ctr[1] + ks[1];
  rounds(x0, x1, ks);  // 5 x 4 = 20 rounds, a key injection after each 4
  return {x0, x1};
}

Key key_from_seed(std::uint64_t seed) { return {static_cast<std::uint32_t>(seed >> 32), static_cast<std::uint32_t>(seed)}; }
Key split(Key key, std::uint64_t index) { return block(key, index); }
Key fold_in(Key key, std::uint32_t data) { return threefry2x32(key, {0u, data}); }

void blocks(Key key, std::span<std::uint32_t> first, std::span<std::uint32_t> second) {
  chunked(static_cast<std::int64_t>(first.size()), [&](std::int64_t start, std::int64_t m) {
    fill_blocks(key, static_cast<std::uint64_t>(start), m, first.data() + start, second.data() + start);
  });
}

void uniform(Key key, double lo, double hi, std::span<float> out) { uniform_draw(key, lo, hi, out); }
void uniform(Key key, double lo, double hi, std::span<double> out) { uniform_draw(key, lo, hi, out); }
void normal(Key key, std::span<float> out) { normal_draw(key, out); }
void normal(Key key, std::span<double> out) { normal_draw(key, out); }
void truncated_normal(Key key, double lower, double upper, std::span<float> out) { truncated_draw(key, lower, upper, out); }
void truncated_normal(Key key, double lower, double upper, std::span<double> out) { truncated_draw(key, lower, upper, out); }
void sqrt2_erfinv(std::span<float> u) { sqrt2_erfinv_all(u); }
void sqrt2_erfinv(std::span<double> u) { sqrt2_erfinv_all(u); }

}  // namespace qb::random
