#include "quabla/random/threefry.h"

#include <cmath>

#include <algorithm>

#include "quabla/backends/cpu/vector_math.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::random {

namespace {

constexpr std::uint32_t rotl(std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

// Counter domains (the high counter word): samples use block indices below 2^31.
constexpr std::uint32_t kSplitDomain = 0x80000000u | 0x53504cu;  // "SPL"
constexpr std::uint32_t kFoldDomain = 0x80000000u | 0x464f4cu;   // "FOL"
constexpr std::uint32_t kSeedDomain = 0x80000000u | 0x534545u;   // "SEE"

std::array<std::uint32_t, 2> block(Key key, std::uint64_t i) {
  return threefry2x32(key, {static_cast<std::uint32_t>(i >> 32), static_cast<std::uint32_t>(i)});
}

double u53(std::uint32_t hi, std::uint32_t lo) {
  const std::uint64_t bits = (static_cast<std::uint64_t>(hi) << 20) ^ (lo >> 12);  // 52 random bits
  return static_cast<double>(bits & ((1ull << 52) - 1)) * 0x1p-52;
}

// erfinv by two Newton steps on erf from a closed-form start (Giles' approximation).
double erfinv(double y) {
  if (y <= -1) return -INFINITY;
  if (y >= 1) return INFINITY;
  const double w = -std::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5.0) {
    const double t = w - 2.5;
    x = ((((((((2.81022636e-08 * t + 3.43273939e-07) * t - 3.5233877e-06) * t - 4.39150654e-06) * t +
               0.00021858087) * t - 0.00125372503) * t - 0.00417768164) * t + 0.246640727) * t + 1.50140941) * y;
  } else {
    const double t = std::sqrt(w) - 3.0;
    x = ((((((((-0.000200214257 * t + 0.000100950558) * t + 0.00134934322) * t - 0.00367342844) * t +
               0.00573950773) * t - 0.0076224613) * t + 0.00943887047) * t + 1.00167406) * t + 2.83297682) * y;
  }
  for (int k = 0; k < 2; ++k) x -= (std::erf(x) - y) / (1.1283791670955126 * std::exp(-x * x));
  return x;
}

template <class T, class F>
void fill(Key key, std::span<T> out, F&& sample) {
  parallel_for(static_cast<std::int64_t>(out.size()), 65536, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) out[i] = static_cast<T>(sample(block(key, static_cast<std::uint64_t>(i))));
  });
}

}  // namespace

std::array<std::uint32_t, 2> threefry2x32(Key key, std::array<std::uint32_t, 2> ctr) {
  static constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const std::uint32_t ks[3] = {key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDAu};
  std::uint32_t x0 = ctr[0] + ks[0], x1 = ctr[1] + ks[1];
  for (int round = 0; round < 5; ++round) {  // 5 x 4 = 20 rounds, a key injection after each 4
    for (int j = 0; j < 4; ++j) {
      x0 += x1;
      x1 = rotl(x1, kRot[(round % 2) * 4 + j]) ^ x0;
    }
    x0 += ks[(round + 1) % 3];
    x1 += ks[(round + 2) % 3] + static_cast<std::uint32_t>(round + 1);
  }
  return {x0, x1};
}

Key key_from_seed(std::uint64_t seed) {
  return threefry2x32({static_cast<std::uint32_t>(seed >> 32), static_cast<std::uint32_t>(seed)}, {kSeedDomain, 0});
}

Key split(Key key, std::uint32_t index) { return threefry2x32(key, {kSplitDomain, index}); }
Key fold_in(Key key, std::uint32_t data) { return threefry2x32(key, {kFoldDomain, data}); }

void blocks(Key key, std::span<std::uint32_t> first, std::span<std::uint32_t> second) {
  parallel_for(static_cast<std::int64_t>(first.size()), 65536, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const auto r = block(key, static_cast<std::uint64_t>(i));
      first[i] = r[0];
      second[i] = r[1];
    }
  });
}

void uniform(Key key, std::span<float> out) {
  fill(key, out, [](std::array<std::uint32_t, 2> r) { return static_cast<float>(r[0] >> 8) * 0x1p-24f; });
}
void uniform(Key key, std::span<double> out) {
  fill(key, out, [](std::array<std::uint32_t, 2> r) { return u53(r[0], r[1]); });
}

namespace {
// Box-Muller in chunks, so log and cos run as the vectorised functions the CPU kernels use
// (four times faster than scalar libm here, and the same values a traced draw computes).
template <class T>
void box_muller(Key key, std::span<T> out) {
  parallel_for(static_cast<std::int64_t>(out.size()), 65536, [&](std::int64_t b, std::int64_t e) {
    constexpr std::int64_t kChunk = 512;
    double radius[kChunk], angle[kChunk], log_r[kChunk], cos_a[kChunk];
    for (std::int64_t start = b; start < e; start += kChunk) {
      const std::int64_t m = std::min(kChunk, e - start);
      for (std::int64_t j = 0; j < m; ++j) {
        const auto r = block(key, static_cast<std::uint64_t>(start + j));
        radius[j] = 1.0 - static_cast<double>(r[0]) * 0x1p-32;  // (0, 1]: log never sees 0
        angle[j] = 6.283185307179586 * (static_cast<double>(r[1]) * 0x1p-32);
      }
      if (!cpu::vector_unary_f64(Op::Log, radius, log_r, m))
        for (std::int64_t j = 0; j < m; ++j) log_r[j] = std::log(radius[j]);
      if (!cpu::vector_unary_f64(Op::Cos, angle, cos_a, m))
        for (std::int64_t j = 0; j < m; ++j) cos_a[j] = std::cos(angle[j]);
      for (std::int64_t j = 0; j < m; ++j) out[start + j] = static_cast<T>(std::sqrt(-2.0 * log_r[j]) * cos_a[j]);
    }
  });
}
}  // namespace

void normal(Key key, std::span<float> out) { box_muller(key, out); }
void normal(Key key, std::span<double> out) { box_muller(key, out); }

namespace {
template <class T>
void truncated(Key key, double lower, double upper, std::span<T> out) {
  const double a = std::erf(lower / std::sqrt(2.0)), b = std::erf(upper / std::sqrt(2.0));
  fill(key, out, [&](std::array<std::uint32_t, 2> r) {
    const double u = u53(r[0], r[1]);
    double x = std::sqrt(2.0) * erfinv(a + (b - a) * u);
    return std::fmin(std::fmax(x, lower), upper);
  });
}
}  // namespace

void truncated_normal(Key key, double lower, double upper, std::span<float> out) { truncated(key, lower, upper, out); }
void truncated_normal(Key key, double lower, double upper, std::span<double> out) { truncated(key, lower, upper, out); }

}  // namespace qb::random
