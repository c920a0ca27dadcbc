// The discrete Fourier transform (kernels.h: fft). Lengths that are powers of two run an
// iterative radix-2 transform; any other length goes through Bluestein's identity
// jk = (j^2 + k^2 - (k - j)^2) / 2, which turns the DFT into a circular convolution of a
// power-of-two length m >= 2n - 1, computed with the same radix-2 transform. Every row is
// transformed in double precision whatever its dtype; angles are reduced modulo the period
// in integers first, so twiddles stay exact to rounding for any n.
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

namespace {

using C = std::complex<double>;

// exp(sign * 2 pi i * t / period) for an integer t already reduced to [0, period).
C unit_root(std::int64_t t, std::int64_t period, double sign) {
  const double angle = 2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(period);
  return {std::cos(angle), sign * std::sin(angle)};
}

// A length-m (a power of two) transform plan: the bit-reversal permutation and twiddles.
struct Radix2 {
  std::int64_t m = 1;
  std::vector<std::int64_t> reversed;
  std::vector<C> twiddle;  // exp(sign 2 pi i k / m), k < m / 2

  Radix2(std::int64_t size, double sign) : m(size), reversed(static_cast<std::size_t>(size)) {
    int bits = 0;
    while ((std::int64_t{1} << bits) < m) ++bits;
    for (std::int64_t i = 0; i < m; ++i) {
      std::int64_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      reversed[static_cast<std::size_t>(i)] = r;
    }
    for (std::int64_t k = 0; k < m / 2; ++k) twiddle.push_back(unit_root(k, m, sign));
  }

  void run(std::vector<C>& x) const {
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t r = reversed[static_cast<std::size_t>(i)];
      if (r > i) std::swap(x[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(r)]);
    }
    for (std::int64_t len = 2; len <= m; len *= 2) {
      const std::int64_t half = len / 2, step = m / len;
      for (std::int64_t start = 0; start < m; start += len) {
        for (std::int64_t k = 0; k < half; ++k) {
          const C w = twiddle[static_cast<std::size_t>(k * step)];
          C& a = x[static_cast<std::size_t>(start + k)];
          C& b = x[static_cast<std::size_t>(start + k + half)];
          const C t = w * b;
          b = a - t;
          a += t;
        }
      }
    }
  }
};

bool is_power_of_two(std::int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// Everything one transform length needs, shared by the rows of a batch.
struct Plan {
  std::int64_t n;
  double sign;
  Radix2 forward, backward;  // of length n (power of two) or m (Bluestein)
  std::vector<C> chirp;      // exp(sign pi i k^2 / n), k < n (Bluestein)
  std::vector<C> kernel_hat; // the transformed convolution kernel conj(chirp), circularly (Bluestein)

  Plan(std::int64_t size, double s)
      : n(size), sign(s), forward(is_power_of_two(size) ? size : bluestein_length(size), s),
        backward(forward.m, -s) {
    if (is_power_of_two(n)) return;
    const std::int64_t m = forward.m;
    for (std::int64_t k = 0; k < n; ++k) chirp.push_back(unit_root((k * k) % (2 * n), 2 * n, sign));
    kernel_hat.assign(static_cast<std::size_t>(m), C{});
    kernel_hat[0] = std::conj(chirp[0]);
    for (std::int64_t k = 1; k < n; ++k) {
      kernel_hat[static_cast<std::size_t>(k)] = kernel_hat[static_cast<std::size_t>(m - k)] =
          std::conj(chirp[static_cast<std::size_t>(k)]);
    }
    forward.run(kernel_hat);
  }

  static std::int64_t bluestein_length(std::int64_t n) {
    std::int64_t m = 1;
    while (m < 2 * n - 1) m *= 2;
    return m;
  }

  // x: n values in, the transform out (unscaled). work: scratch of length m.
  void run(std::vector<C>& x, std::vector<C>& work) const {
    if (is_power_of_two(n)) return forward.run(x);
    const std::int64_t m = forward.m;
    work.assign(static_cast<std::size_t>(m), C{});
    for (std::int64_t k = 0; k < n; ++k) work[static_cast<std::size_t>(k)] = x[static_cast<std::size_t>(k)] * chirp[static_cast<std::size_t>(k)];
    forward.run(work);
    for (std::int64_t k = 0; k < m; ++k) work[static_cast<std::size_t>(k)] *= kernel_hat[static_cast<std::size_t>(k)];
    backward.run(work);
    const double scale = 1.0 / static_cast<double>(m);
    for (std::int64_t k = 0; k < n; ++k) {
      x[static_cast<std::size_t>(k)] = work[static_cast<std::size_t>(k)] * scale * chirp[static_cast<std::size_t>(k)];
    }
  }
};

template <class T>
void fft_rows(const T* in, std::int64_t batch, std::int64_t n, bool inverse, T* out) {
  const Plan plan(n, inverse ? 1.0 : -1.0);
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(n, 1));
  parallel_for(batch, grain, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<C> row(static_cast<std::size_t>(n)), work;
    for (std::int64_t b = b0; b < b1; ++b) {
      const T* src = in + 2 * b * n;
      T* dst = out + 2 * b * n;
      for (std::int64_t k = 0; k < n; ++k) {
        row[static_cast<std::size_t>(k)] = C(static_cast<double>(src[2 * k]), static_cast<double>(src[2 * k + 1]));
      }
      plan.run(row, work);
      for (std::int64_t k = 0; k < n; ++k) {
        dst[2 * k] = static_cast<T>(row[static_cast<std::size_t>(k)].real() * scale);
        dst[2 * k + 1] = static_cast<T>(row[static_cast<std::size_t>(k)].imag() * scale);
      }
    }
  });
}

}  // namespace

void fft(DType part, const std::byte* in, std::int64_t batch, std::int64_t n, bool inverse, std::byte* out) {
  if (batch == 0 || n == 0) return;
  switch (part) {
    case DType::f32:
      return fft_rows(reinterpret_cast<const float*>(in), batch, n, inverse, reinterpret_cast<float*>(out));
    case DType::f64:
      return fft_rows(reinterpret_cast<const double*>(in), batch, n, inverse, reinterpret_cast<double*>(out));
    case DType::bool_: case DType::i32: case DType::i64: case DType::c64: case DType::c128: break;
  }
  throw InternalError("cpu::fft: needs the lowered float form");
}

}  // namespace qb::cpu
