// The discrete Fourier transform (kernels.h: fft). Lengths that are powers of two run an
// iterative radix-2 transform; lengths whose prime factors are at most kMaxRadix a
// self-sorting mixed-radix one; any other length goes through Bluestein's identity
// jk = (j^2 + k^2 - (k - j)^2) / 2, which turns the DFT into a circular convolution of a
// power-of-two length m >= 2n - 1, computed with the same radix-2 transform. Every row is
// transformed in double precision whatever its dtype; angles are reduced modulo the period
// in integers first, so twiddles stay exact to rounding for any n.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <optional>
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

// A length-m (a power of two) transform on split real and imaginary arrays: the
// bit-reversal permutation, then log2(m) butterfly stages. Each stage reads its own
// contiguous twiddle table, so the inner loop runs over unit-stride arrays (vectorisable;
// std::complex's multiplication would call __muldc3 for its NaN rules instead).
struct Radix2 {
  std::int64_t m = 1;
  std::vector<std::int64_t> reversed;
  std::vector<double> wr, wi;  // stage with half-length h at offset h - 1: exp(sign 2 pi i k / 2h)

  double sign_ = -1;

  Radix2(std::int64_t size, double sign) : m(size), reversed(static_cast<std::size_t>(size)), sign_(sign) {
    int bits = 0;
    while ((std::int64_t{1} << bits) < m) ++bits;
    for (std::int64_t i = 0; i < m; ++i) {
      std::int64_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      reversed[static_cast<std::size_t>(i)] = r;
    }
    for (std::int64_t h = 1; h < m; h *= 2) {
      for (std::int64_t k = 0; k < h; ++k) {
        const C w = unit_root(k * (m / (2 * h)), m, sign);
        wr.push_back(w.real());
        wi.push_back(w.imag());
      }
    }
  }

  void run(double* __restrict re, double* __restrict im) const {
    for (std::int64_t i = 0; i < m; ++i) {
      const std::int64_t r = reversed[static_cast<std::size_t>(i)];
      if (r > i) {
        std::swap(re[i], re[r]);
        std::swap(im[i], im[r]);
      }
    }
    std::int64_t first = 1;
    if (m >= 4) {
      // The first two stages as one radix-4 pass over groups of four (their inner loops
      // would be one and two butterflies long): twiddles 1, then 1 and w = sign i.
      for (std::int64_t g = 0; g < m; g += 4) {
        const double b0r = re[g] + re[g + 1], b0i = im[g] + im[g + 1];
        const double b1r = re[g] - re[g + 1], b1i = im[g] - im[g + 1];
        const double b2r = re[g + 2] + re[g + 3], b2i = im[g + 2] + im[g + 3];
        const double b3r = re[g + 2] - re[g + 3], b3i = im[g + 2] - im[g + 3];
        const double wr3 = -sign_ * b3i, wi3 = sign_ * b3r;  // w b3
        re[g] = b0r + b2r;
        im[g] = b0i + b2i;
        re[g + 2] = b0r - b2r;
        im[g + 2] = b0i - b2i;
        re[g + 1] = b1r + wr3;
        im[g + 1] = b1i + wi3;
        re[g + 3] = b1r - wr3;
        im[g + 3] = b1i - wi3;
      }
      first = 4;
    }
    for (std::int64_t h = first; h < m; h *= 2) {
      const double* __restrict tr = wr.data() + (h - 1);
      const double* __restrict ti = wi.data() + (h - 1);
      for (std::int64_t start = 0; start < m; start += 2 * h) {
        double* __restrict ar = re + start;
        double* __restrict ai = im + start;
        double* __restrict br = re + start + h;
        double* __restrict bi = im + start + h;
        for (std::int64_t k = 0; k < h; ++k) {
          const double xr = br[k] * tr[k] - bi[k] * ti[k];
          const double xi = br[k] * ti[k] + bi[k] * tr[k];
          br[k] = ar[k] - xr;
          bi[k] = ai[k] - xi;
          ar[k] += xr;
          ai[k] += xi;
        }
      }
    }
  }
};

bool is_power_of_two(std::int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// The largest prime factor the mixed-radix transform takes; lengths with a larger one go
// through Bluestein's algorithm (its generic butterfly costs r^2 per r outputs).
constexpr std::int64_t kMaxRadix = 31;

// n's radices (4s first, then primes up to kMaxRadix), or empty when a larger prime divides n.
std::vector<std::int64_t> radices_of(std::int64_t n) {
  std::vector<std::int64_t> r;
  while (n % 4 == 0) {
    r.push_back(4);
    n /= 4;
  }
  for (std::int64_t p = 2; p <= kMaxRadix && n > 1; ++p) {
    while (n % p == 0) {
      r.push_back(p);
      n /= p;
    }
  }
  if (n != 1) r.clear();
  return r;
}

// A self-sorting (Stockham) mixed-radix transform on split arrays: stage s of radix R reads
// R values n/R apart, twiddles them by the position within the sub-transforms built so far
// (Ns long), takes their R-point DFT and writes it Ns apart, ping-ponging between the data
// and a scratch pair, so no bit reversal is needed and any length whose prime factors are
// at most kMaxRadix runs in about n sum(R) operations.
struct MixedRadix {
  std::int64_t n = 1;
  double sign = -1;
  struct Stage {
    std::int64_t radix, span;       // R, and Ns: the sub-transform length before this stage
    std::vector<double> wr, wi;     // twiddle (k, q) at k R + q: exp(sign 2 pi i q k / (Ns R))
    std::vector<double> rr, ri;     // the R-point DFT's roots exp(sign 2 pi i t / R), t < R
  };
  std::vector<Stage> stages;

  MixedRadix(std::int64_t size, double s, const std::vector<std::int64_t>& radices) : n(size), sign(s) {
    std::int64_t span = 1;
    for (std::int64_t radix : radices) {
      Stage st{radix, span, {}, {}, {}, {}};
      for (std::int64_t k = 0; k < span; ++k) {
        for (std::int64_t q = 0; q < radix; ++q) {
          const C w = unit_root((q * k) % (span * radix), span * radix, sign);
          st.wr.push_back(w.real());
          st.wi.push_back(w.imag());
        }
      }
      for (std::int64_t t = 0; t < radix; ++t) {
        const C w = unit_root(t, radix, sign);
        st.rr.push_back(w.real());
        st.ri.push_back(w.imag());
      }
      stages.push_back(std::move(st));
      span *= radix;
    }
  }

  // re, im: n values in, the transform out; sr, si: n doubles of scratch each.
  void run(double* re, double* im, double* sr, double* si) const {
    double *ar = re, *ai = im, *br = sr, *bi = si;
    for (const Stage& st : stages) {
      stage(st, ar, ai, br, bi);
      std::swap(ar, br);
      std::swap(ai, bi);
    }
    if (ar != re) {
      std::copy(ar, ar + n, re);
      std::copy(ai, ai + n, im);
    }
  }

 private:
  void stage(const Stage& st, const double* __restrict ar, const double* __restrict ai, double* __restrict br,
             double* __restrict bi) const {
    const std::int64_t R = st.radix, Ns = st.span, step = n / R;
    double vr[kMaxRadix], vi[kMaxRadix];
    // j = block Ns + k runs over the step = n / R butterflies; k is the position within the
    // sub-transforms so far (its twiddles), the outputs go Ns apart from block Ns R + k.
    for (std::int64_t block = 0, j = 0; j < step; ++block) {
      for (std::int64_t k = 0; k < Ns; ++k, ++j) {
        const double* tr = st.wr.data() + k * R;
        const double* ti = st.wi.data() + k * R;
        for (std::int64_t q = 0; q < R; ++q) {
          const double xr = ar[j + q * step], xi = ai[j + q * step];
          vr[q] = xr * tr[q] - xi * ti[q];
          vi[q] = xr * ti[q] + xi * tr[q];
        }
        butterfly(st, vr, vi, br + block * Ns * R + k, bi + block * Ns * R + k, Ns);
      }
    }
  }

  // The R-point DFT of v, written at out[0], out[Ns], ..., out[(R - 1) Ns].
  void butterfly(const Stage& st, const double* vr, const double* vi, double* __restrict br, double* __restrict bi,
                 std::int64_t Ns) const {
    switch (st.radix) {
      case 2:
        br[0] = vr[0] + vr[1];
        bi[0] = vi[0] + vi[1];
        br[Ns] = vr[0] - vr[1];
        bi[Ns] = vi[0] - vi[1];
        return;
      case 4: {
        // w = exp(sign i pi / 2) = sign i: V1 = (a0 - a2) + w (a1 - a3), V3 = (a0 - a2) - w (a1 - a3)
        const double s0r = vr[0] + vr[2], s0i = vi[0] + vi[2], d0r = vr[0] - vr[2], d0i = vi[0] - vi[2];
        const double s1r = vr[1] + vr[3], s1i = vi[1] + vi[3], d1r = vr[1] - vr[3], d1i = vi[1] - vi[3];
        const double wr = -sign * d1i, wi = sign * d1r;  // sign i (a1 - a3)
        br[0] = s0r + s1r;
        bi[0] = s0i + s1i;
        br[Ns] = d0r + wr;
        bi[Ns] = d0i + wi;
        br[2 * Ns] = s0r - s1r;
        bi[2 * Ns] = s0i - s1i;
        br[3 * Ns] = d0r - wr;
        bi[3 * Ns] = d0i - wi;
        return;
      }
      case 3: {
        constexpr double h = 0.86602540378443864676;  // sin(2 pi / 3)
        const double tr = vr[1] + vr[2], ti = vi[1] + vi[2];
        const double dr = sign * h * (vr[1] - vr[2]), di = sign * h * (vi[1] - vi[2]);
        const double mr = vr[0] - 0.5 * tr, mi = vi[0] - 0.5 * ti;
        br[0] = vr[0] + tr;
        bi[0] = vi[0] + ti;
        br[Ns] = mr - di;  // m + i d
        bi[Ns] = mi + dr;
        br[2 * Ns] = mr + di;
        bi[2 * Ns] = mi - dr;
        return;
      }
      case 5: {
        // With w = exp(sign 2 pi i / 5): V1,4 = m1 +- i n1, V2,3 = m2 +- i n2, where
        // m1 = a0 + c1 (a1 + a4) + c2 (a2 + a3), n1 = sign (s1 (a1 - a4) + s2 (a2 - a3)),
        // m2 = a0 + c2 (a1 + a4) + c1 (a2 + a3), n2 = sign (s2 (a1 - a4) - s1 (a2 - a3)).
        constexpr double c1 = 0.30901699437494742410, c2 = -0.80901699437494742410;
        constexpr double s1 = 0.95105651629515357212, s2 = 0.58778525229247312917;
        const double t1r = vr[1] + vr[4], t1i = vi[1] + vi[4], t2r = vr[2] + vr[3], t2i = vi[2] + vi[3];
        const double t3r = vr[1] - vr[4], t3i = vi[1] - vi[4], t4r = vr[2] - vr[3], t4i = vi[2] - vi[3];
        const double m1r = vr[0] + c1 * t1r + c2 * t2r, m1i = vi[0] + c1 * t1i + c2 * t2i;
        const double m2r = vr[0] + c2 * t1r + c1 * t2r, m2i = vi[0] + c2 * t1i + c1 * t2i;
        const double n1r = sign * (s1 * t3r + s2 * t4r), n1i = sign * (s1 * t3i + s2 * t4i);
        const double n2r = sign * (s2 * t3r - s1 * t4r), n2i = sign * (s2 * t3i - s1 * t4i);
        br[0] = vr[0] + t1r + t2r;
        bi[0] = vi[0] + t1i + t2i;
        br[Ns] = m1r - n1i;
        bi[Ns] = m1i + n1r;
        br[4 * Ns] = m1r + n1i;
        bi[4 * Ns] = m1i - n1r;
        br[2 * Ns] = m2r - n2i;
        bi[2 * Ns] = m2i + n2r;
        br[3 * Ns] = m2r + n2i;
        bi[3 * Ns] = m2i - n2r;
        return;
      }
      default: {
        const std::int64_t R = st.radix;
        for (std::int64_t t = 0; t < R; ++t) {
          double sr = 0, si = 0;
          std::int64_t e = 0;  // q t mod R
          for (std::int64_t q = 0; q < R; ++q) {
            sr += vr[q] * st.rr[static_cast<std::size_t>(e)] - vi[q] * st.ri[static_cast<std::size_t>(e)];
            si += vr[q] * st.ri[static_cast<std::size_t>(e)] + vi[q] * st.rr[static_cast<std::size_t>(e)];
            e += t;
            if (e >= R) e -= R;
          }
          br[t * Ns] = sr;
          bi[t * Ns] = si;
        }
      }
    }
  }
};

// Everything one transform length needs, shared by the rows of a batch.
struct Plan {
  std::int64_t n;
  std::vector<std::int64_t> radices;  // non-empty: the mixed-radix transform of n
  std::optional<MixedRadix> mixed;
  Radix2 forward, backward;        // of length n (power of two) or m (Bluestein)
  std::vector<double> cr, ci;      // chirp exp(sign pi i k^2 / n), k < n (Bluestein)
  std::vector<double> kr, ki;      // the transformed convolution kernel conj(chirp), circularly

  Plan(std::int64_t size, double sign)
      : n(size), radices(is_power_of_two(size) ? std::vector<std::int64_t>{} : radices_of(size)),
        forward(is_power_of_two(size) ? size : radices.empty() ? bluestein_length(size) : 1, sign),
        backward(forward.m, -sign) {
    if (!radices.empty()) mixed.emplace(n, sign, radices);
    if (is_power_of_two(n) || mixed) return;
    const std::int64_t m = forward.m;
    for (std::int64_t k = 0; k < n; ++k) {
      const C c = unit_root((k * k) % (2 * n), 2 * n, sign);
      cr.push_back(c.real());
      ci.push_back(c.imag());
    }
    kr.assign(static_cast<std::size_t>(m), 0.0);
    ki.assign(static_cast<std::size_t>(m), 0.0);
    kr[0] = cr[0];
    ki[0] = -ci[0];
    for (std::int64_t k = 1; k < n; ++k) {
      kr[static_cast<std::size_t>(k)] = kr[static_cast<std::size_t>(m - k)] = cr[static_cast<std::size_t>(k)];
      ki[static_cast<std::size_t>(k)] = ki[static_cast<std::size_t>(m - k)] = -ci[static_cast<std::size_t>(k)];
    }
    forward.run(kr.data(), ki.data());
  }

  static std::int64_t bluestein_length(std::int64_t n) {
    std::int64_t m = 1;
    while (m < 2 * n - 1) m *= 2;
    return m;
  }

  // Scratch a row needs: 2 m doubles (Bluestein), 2 n (mixed radix).
  std::int64_t scratch() const { return mixed ? 2 * n : 2 * forward.m; }

  // re, im: n values in, the transform out (unscaled), in the first n entries of work
  // (which has scratch() doubles; re and im may point into it).
  void run(double* re, double* im, double* work) const {
    if (mixed) return mixed->run(re, im, work, work + n);
    if (is_power_of_two(n)) return forward.run(re, im);
    const std::int64_t m = forward.m;
    double* __restrict wr = work;
    double* __restrict wi = work + m;
    for (std::int64_t k = 0; k < n; ++k) {
      const double a = re[k], b = im[k], c = cr[static_cast<std::size_t>(k)], d = ci[static_cast<std::size_t>(k)];
      wr[k] = a * c - b * d;
      wi[k] = a * d + b * c;
    }
    std::fill(wr + n, wr + m, 0.0);
    std::fill(wi + n, wi + m, 0.0);
    forward.run(wr, wi);
    for (std::int64_t k = 0; k < m; ++k) {
      const double a = wr[k], b = wi[k], c = kr[static_cast<std::size_t>(k)], d = ki[static_cast<std::size_t>(k)];
      wr[k] = a * c - b * d;
      wi[k] = a * d + b * c;
    }
    backward.run(wr, wi);
    const double scale = 1.0 / static_cast<double>(m);
    for (std::int64_t k = 0; k < n; ++k) {
      const double a = wr[k] * scale, b = wi[k] * scale, c = cr[static_cast<std::size_t>(k)], d = ci[static_cast<std::size_t>(k)];
      re[k] = a * c - b * d;
      im[k] = a * d + b * c;
    }
  }
};

template <class T>
void fft_rows(const T* in, std::int64_t batch, std::int64_t n, bool inverse, T* out) {
  const Plan plan(n, inverse ? 1.0 : -1.0);
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(n, 1));
  parallel_for(batch, grain, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<double> row(static_cast<std::size_t>(2 * n)), work(static_cast<std::size_t>(plan.scratch()));
    double* re = row.data();
    double* im = row.data() + n;
    for (std::int64_t b = b0; b < b1; ++b) {
      const T* src_re = in + b * n;
      const T* src_im = in + (batch + b) * n;
      T* dst_re = out + b * n;
      T* dst_im = out + (batch + b) * n;
      for (std::int64_t k = 0; k < n; ++k) {
        re[k] = static_cast<double>(src_re[k]);
        im[k] = static_cast<double>(src_im[k]);
      }
      plan.run(re, im, work.data());
      for (std::int64_t k = 0; k < n; ++k) {
        dst_re[k] = static_cast<T>(re[k] * scale);
        dst_im[k] = static_cast<T>(im[k] * scale);
      }
    }
  });
}

// Real rows: an even length n transforms as n/2 complex values z_j = x_2j + i x_2j+1, split
// afterwards (X_k = E_k + w^k O_k with E, O the spectra of the even and odd samples, read off
// Z_k and conj(Z_{n/2-k})); the upper half of the spectrum is the conjugate of the lower.
// An odd length runs the complex transform with zero imaginary parts. The inverse of a real
// row is the conjugate of its forward transform, over n.
template <class T>
void fft_real_rows(const T* in, std::int64_t batch, std::int64_t n, bool inverse, bool half_out, T* out) {
  const bool half = n % 2 == 0 && n >= 2;
  const std::int64_t width = half_out ? n / 2 + 1 : n;  // output entries per row
  const std::int64_t h = half ? n / 2 : n;
  const Plan plan(h, -1.0);
  std::vector<double> tw_r, tw_i;  // exp(-2 pi i k / n), k <= n/2
  if (half) {
    for (std::int64_t k = 0; k <= h; ++k) {
      const C w = unit_root(k % n, n, -1.0);
      tw_r.push_back(w.real());
      tw_i.push_back(w.imag());
    }
  }
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  const double conj_sign = inverse ? -1.0 : 1.0;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(n, 1));
  parallel_for(batch, grain, [&](std::int64_t b0, std::int64_t b1) {
    std::vector<double> row(static_cast<std::size_t>(2 * h)), work(static_cast<std::size_t>(plan.scratch()));
    double* re = row.data();
    double* im = row.data() + h;
    for (std::int64_t b = b0; b < b1; ++b) {
      const T* src = in + b * n;
      T* dst_re = out + b * width;
      T* dst_im = out + (batch + b) * width;
      auto put = [&](std::int64_t k, double xr, double xi) {
        if (k >= width) return;
        dst_re[k] = static_cast<T>(xr * scale);
        dst_im[k] = static_cast<T>(conj_sign * xi * scale);
      };
      if (!half) {
        for (std::int64_t k = 0; k < n; ++k) {
          re[k] = static_cast<double>(src[k]);
          im[k] = 0.0;
        }
        plan.run(re, im, work.data());
        for (std::int64_t k = 0; k < n; ++k) put(k, re[k], im[k]);
        continue;
      }
      for (std::int64_t j = 0; j < h; ++j) {
        re[j] = static_cast<double>(src[2 * j]);
        im[j] = static_cast<double>(src[2 * j + 1]);
      }
      plan.run(re, im, work.data());
      for (std::int64_t k = 0; k <= h; ++k) {
        const std::int64_t a = k % h, c = (h - k) % h;
        // E = (Z_a + conj Z_c) / 2, O = (Z_a - conj Z_c) / (2i)
        const double er = 0.5 * (re[a] + re[c]), ei = 0.5 * (im[a] - im[c]);
        const double or_ = 0.5 * (im[a] + im[c]), oi = -0.5 * (re[a] - re[c]);
        const double wr = tw_r[static_cast<std::size_t>(k)], wi = tw_i[static_cast<std::size_t>(k)];
        const double xr = er + wr * or_ - wi * oi, xi = ei + wr * oi + wi * or_;
        put(k, xr, xi);
        if (k > 0 && k < h) put(n - k, xr, -xi);
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
    case DType::bool_: case DType::i32: case DType::i64: case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;
  }
  throw InternalError("cpu::fft: needs the lowered float form");
}

void fft_real(DType part, const std::byte* in, std::int64_t batch, std::int64_t n, bool inverse, bool half,
              std::byte* out) {
  if (batch == 0 || n == 0) return;
  switch (part) {
    case DType::f32:
      return fft_real_rows(reinterpret_cast<const float*>(in), batch, n, inverse, half, reinterpret_cast<float*>(out));
    case DType::f64:
      return fft_real_rows(reinterpret_cast<const double*>(in), batch, n, inverse, half, reinterpret_cast<double*>(out));
    case DType::bool_: case DType::i32: case DType::i64: case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;
  }
  throw InternalError("cpu::fft_real: needs a float operand");
}

}  // namespace qb::cpu
