// The discrete Fourier transform (kernels.h: fft). Lengths whose prime factors are at most
// kMaxRadix (powers of two included) run a self-sorting (Stockham) mixed-radix transform,
// radix 4 first; any other length goes through Bluestein's identity
// jk = (j^2 + k^2 - (k - j)^2) / 2, which turns the DFT into a circular convolution of a
// power-of-two length m >= 2n - 1, computed with the same transform. Every row is
// transformed in double precision whatever its dtype; angles are reduced modulo the period
// in integers first, so twiddles stay exact to rounding for any n.
//
// The transforms are templates over the value type: one row at a time (double), or four
// rows at once (Lanes: one SIMD vector holds the same index of four rows), which batches of
// rows take. The four-row form does each lane's arithmetic in the same order as the
// one-row form, and this file is compiled without floating-point contraction, so a row's
// transform does not depend on the rows batched with it (vmap gives the bits of a loop).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <type_traits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/ir/errors.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

namespace {

using C = std::complex<double>;

// Four rows' values at one index (GCC/Clang vector extension: SIMD where the target has it).
typedef double Lanes __attribute__((vector_size(4 * sizeof(double))));
constexpr std::int64_t kLanes = 4;

// exp(sign * 2 pi i * t / period) for an integer t already reduced to [0, period).
C unit_root(std::int64_t t, std::int64_t period, double sign) {
  const double angle = 2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(period);
  return {std::cos(angle), sign * std::sin(angle)};
}

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
// R values n/R apart, twiddles them by the position k within the sub-transforms built so
// far (Ns long), takes their R-point DFT and writes it Ns apart, ping-ponging between the
// data and a scratch pair, so no bit reversal is needed and any length whose prime factors
// are at most kMaxRadix runs in about n sum(R) operations. Within a stage the innermost
// loop runs over k, reading and writing unit-stride arrays (the twiddles are stored by q,
// then k), so it vectorises.
struct Stockham {
  std::int64_t n = 1;
  double sign = -1;
  struct Stage {
    std::int64_t radix, span;     // R, and Ns: the sub-transform length before this stage
    std::vector<double> wr, wi;   // twiddle (q, k), q = 1..R-1, at (q - 1) Ns + k: exp(sign 2 pi i q k / (Ns R))
    std::vector<double> rr, ri;   // the R-point DFT's roots exp(sign 2 pi i t / R), t < R
  };
  std::vector<Stage> stages;

  Stockham(std::int64_t size, double s, const std::vector<std::int64_t>& radices) : n(size), sign(s) {
    std::int64_t span = 1;
    for (std::int64_t radix : radices) {
      Stage st{radix, span, {}, {}, {}, {}};
      for (std::int64_t q = 1; q < radix; ++q) {
        for (std::int64_t k = 0; k < span; ++k) {
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

  // re, im: n values in, the transform out; sr, si: n values of scratch each.
  template <class V>
  void run(V* re, V* im, V* sr, V* si) const {
    V *ar = re, *ai = im, *br = sr, *bi = si;
    for (const Stage& st : stages) {
      switch (st.radix) {
        case 2: stage2(st, ar, ai, br, bi); break;
        case 3: stage3(st, ar, ai, br, bi); break;
        case 4: stage4(st, ar, ai, br, bi); break;
        case 5: stage5(st, ar, ai, br, bi); break;
        default: stage_generic(st, ar, ai, br, bi); break;
      }
      std::swap(ar, br);
      std::swap(ai, bi);
    }
    if (ar != re) {
      std::copy(ar, ar + n, re);
      std::copy(ai, ai + n, im);
    }
  }

 private:
  // How a stage's loop body reads and writes at index k: Same<V> one V at a time (for
  // V = Lanes the twiddle, one double, is broadcast); Chunk four consecutive k of doubles
  // as one Lanes (unaligned vector loads; the twiddles too). Chunk does each element's
  // arithmetic as Same<double> does, so a row's bits do not depend on where chunks start.
  template <class V>
  struct Same {
    using U = V;
    static U get(const V* p, std::int64_t k) { return p[k]; }
    static void put(V* p, std::int64_t k, U v) { p[k] = v; }
    static double tw(const double* w, std::int64_t k) { return w[k]; }
  };
  struct Chunk {
    using U = Lanes;
    static U get(const double* p, std::int64_t k) {
      U v;
      std::memcpy(&v, p + k, sizeof v);
      return v;
    }
    static void put(double* p, std::int64_t k, U v) { std::memcpy(p + k, &v, sizeof v); }
    static U tw(const double* w, std::int64_t k) { return get(w, k); }
  };

  // Runs body(access, k) for k < Ns: in chunks of kLanes where V is double, then one by one.
  template <class V, class Body>
  static void over_k(std::int64_t Ns, Body&& body) {
    std::int64_t k = 0;
    if constexpr (std::is_same_v<V, double>)
      for (; k + kLanes <= Ns; k += kLanes) body(Chunk{}, k);
    for (; k < Ns; ++k) body(Same<V>{}, k);
  }

  // Each stage: blocks of Ns butterflies j = j0 + k; the inputs (n / R apart), the outputs
  // (from o0, Ns apart) and the twiddles (row q - 1 of the table) are unit-stride in k.
  template <class V>
  void stage2(const Stage& st, const V* ar, const V* ai, V* br, V* bi) const {
    const std::int64_t step = n / 2, Ns = st.span;
    const double* w1r = st.wr.data();
    const double* w1i = st.wi.data();
    for (std::int64_t j0 = 0, o0 = 0; j0 < step; j0 += Ns, o0 += 2 * Ns) {
      over_k<V>(Ns, [&]<class A>(A, std::int64_t k) {
        using U = typename A::U;
        const U x1r = A::get(ar + j0 + step, k), x1i = A::get(ai + j0 + step, k);
        const auto c1 = A::tw(w1r, k), d1 = A::tw(w1i, k);
        const U v1r = x1r * c1 - x1i * d1, v1i = x1r * d1 + x1i * c1;
        const U v0r = A::get(ar + j0, k), v0i = A::get(ai + j0, k);
        A::put(br + o0, k, v0r + v1r);
        A::put(bi + o0, k, v0i + v1i);
        A::put(br + o0 + Ns, k, v0r - v1r);
        A::put(bi + o0 + Ns, k, v0i - v1i);
      });
    }
  }

  template <class V>
  void stage3(const Stage& st, const V* ar, const V* ai, V* br, V* bi) const {
    constexpr double h = 0.86602540378443864676;  // sin(2 pi / 3)
    const std::int64_t step = n / 3, Ns = st.span;
    const double sh = sign * h;
    const double* wr = st.wr.data();
    const double* wi = st.wi.data();
    for (std::int64_t j0 = 0, o0 = 0; j0 < step; j0 += Ns, o0 += 3 * Ns) {
      over_k<V>(Ns, [&]<class A>(A, std::int64_t k) {
        using U = typename A::U;
        const U x1r = A::get(ar + j0 + step, k), x1i = A::get(ai + j0 + step, k);
        const U x2r = A::get(ar + j0 + 2 * step, k), x2i = A::get(ai + j0 + 2 * step, k);
        const auto c1 = A::tw(wr, k), d1 = A::tw(wi, k), c2 = A::tw(wr + Ns, k), d2 = A::tw(wi + Ns, k);
        const U v1r = x1r * c1 - x1i * d1, v1i = x1r * d1 + x1i * c1;
        const U v2r = x2r * c2 - x2i * d2, v2i = x2r * d2 + x2i * c2;
        const U v0r = A::get(ar + j0, k), v0i = A::get(ai + j0, k);
        const U tr = v1r + v2r, ti = v1i + v2i;
        const U dr = (v1r - v2r) * sh, di = (v1i - v2i) * sh;
        const U mr = v0r - tr * 0.5, mi = v0i - ti * 0.5;
        A::put(br + o0, k, v0r + tr);
        A::put(bi + o0, k, v0i + ti);
        A::put(br + o0 + Ns, k, mr - di);  // m + i d
        A::put(bi + o0 + Ns, k, mi + dr);
        A::put(br + o0 + 2 * Ns, k, mr + di);
        A::put(bi + o0 + 2 * Ns, k, mi - dr);
      });
    }
  }

  template <class V>
  void stage4(const Stage& st, const V* ar, const V* ai, V* br, V* bi) const {
    const std::int64_t step = n / 4, Ns = st.span;
    const double sg = sign;
    const double* wr = st.wr.data();
    const double* wi = st.wi.data();
    for (std::int64_t j0 = 0, o0 = 0; j0 < step; j0 += Ns, o0 += 4 * Ns) {
      over_k<V>(Ns, [&]<class A>(A, std::int64_t k) {
        using U = typename A::U;
        const U x1r = A::get(ar + j0 + step, k), x1i = A::get(ai + j0 + step, k);
        const U x2r = A::get(ar + j0 + 2 * step, k), x2i = A::get(ai + j0 + 2 * step, k);
        const U x3r = A::get(ar + j0 + 3 * step, k), x3i = A::get(ai + j0 + 3 * step, k);
        const auto c1 = A::tw(wr, k), d1 = A::tw(wi, k), c2 = A::tw(wr + Ns, k), d2 = A::tw(wi + Ns, k);
        const auto c3 = A::tw(wr + 2 * Ns, k), d3 = A::tw(wi + 2 * Ns, k);
        const U v1r = x1r * c1 - x1i * d1, v1i = x1r * d1 + x1i * c1;
        const U v2r = x2r * c2 - x2i * d2, v2i = x2r * d2 + x2i * c2;
        const U v3r = x3r * c3 - x3i * d3, v3i = x3r * d3 + x3i * c3;
        const U v0r = A::get(ar + j0, k), v0i = A::get(ai + j0, k);
        // w = exp(sign i pi / 2) = sign i: V1 = (a0 - a2) + w (a1 - a3), V3 = (a0 - a2) - w (a1 - a3)
        const U s0r = v0r + v2r, s0i = v0i + v2i, d0r = v0r - v2r, d0i = v0i - v2i;
        const U s1r = v1r + v3r, s1i = v1i + v3i, e1r = v1r - v3r, e1i = v1i - v3i;
        const U tr = e1i * -sg, ti = e1r * sg;  // sign i (a1 - a3)
        A::put(br + o0, k, s0r + s1r);
        A::put(bi + o0, k, s0i + s1i);
        A::put(br + o0 + Ns, k, d0r + tr);
        A::put(bi + o0 + Ns, k, d0i + ti);
        A::put(br + o0 + 2 * Ns, k, s0r - s1r);
        A::put(bi + o0 + 2 * Ns, k, s0i - s1i);
        A::put(br + o0 + 3 * Ns, k, d0r - tr);
        A::put(bi + o0 + 3 * Ns, k, d0i - ti);
      });
    }
  }

  template <class V>
  void stage5(const Stage& st, const V* ar, const V* ai, V* br, V* bi) const {
    // With w = exp(sign 2 pi i / 5): V1,4 = m1 +- i n1, V2,3 = m2 +- i n2, where
    // m1 = a0 + c1 (a1 + a4) + c2 (a2 + a3), n1 = sign (s1 (a1 - a4) + s2 (a2 - a3)),
    // m2 = a0 + c2 (a1 + a4) + c1 (a2 + a3), n2 = sign (s2 (a1 - a4) - s1 (a2 - a3)).
    constexpr double c1 = 0.30901699437494742410, c2 = -0.80901699437494742410;
    constexpr double s1 = 0.95105651629515357212, s2 = 0.58778525229247312917;
    const std::int64_t step = n / 5, Ns = st.span;
    const double sg = sign;
    const double* wr = st.wr.data();
    const double* wi = st.wi.data();
    for (std::int64_t j0 = 0, o0 = 0; j0 < step; j0 += Ns, o0 += 5 * Ns) {
      over_k<V>(Ns, [&]<class A>(A, std::int64_t k) {
        using U = typename A::U;
        U vr[5], vi[5];
        vr[0] = A::get(ar + j0, k);
        vi[0] = A::get(ai + j0, k);
        for (std::int64_t q = 1; q < 5; ++q) {
          const U a = A::get(ar + j0 + q * step, k), b = A::get(ai + j0 + q * step, k);
          const auto c = A::tw(wr + (q - 1) * Ns, k), d = A::tw(wi + (q - 1) * Ns, k);
          vr[q] = a * c - b * d;
          vi[q] = a * d + b * c;
        }
        const U t1r = vr[1] + vr[4], t1i = vi[1] + vi[4], t2r = vr[2] + vr[3], t2i = vi[2] + vi[3];
        const U t3r = vr[1] - vr[4], t3i = vi[1] - vi[4], t4r = vr[2] - vr[3], t4i = vi[2] - vi[3];
        const U m1r = vr[0] + t1r * c1 + t2r * c2, m1i = vi[0] + t1i * c1 + t2i * c2;
        const U m2r = vr[0] + t1r * c2 + t2r * c1, m2i = vi[0] + t1i * c2 + t2i * c1;
        const U n1r = (t3r * s1 + t4r * s2) * sg, n1i = (t3i * s1 + t4i * s2) * sg;
        const U n2r = (t3r * s2 - t4r * s1) * sg, n2i = (t3i * s2 - t4i * s1) * sg;
        A::put(br + o0, k, vr[0] + t1r + t2r);
        A::put(bi + o0, k, vi[0] + t1i + t2i);
        A::put(br + o0 + Ns, k, m1r - n1i);
        A::put(bi + o0 + Ns, k, m1i + n1r);
        A::put(br + o0 + 4 * Ns, k, m1r + n1i);
        A::put(bi + o0 + 4 * Ns, k, m1i - n1r);
        A::put(br + o0 + 2 * Ns, k, m2r - n2i);
        A::put(bi + o0 + 2 * Ns, k, m2i + n2r);
        A::put(br + o0 + 3 * Ns, k, m2r + n2i);
        A::put(bi + o0 + 3 * Ns, k, m2i - n2r);
      });
    }
  }

  template <class V>
  void stage_generic(const Stage& st, const V* __restrict ar, const V* __restrict ai, V* __restrict br,
                     V* __restrict bi) const {
    const std::int64_t R = st.radix, step = n / R, Ns = st.span;
    V vr[kMaxRadix], vi[kMaxRadix];
    for (std::int64_t j0 = 0, o0 = 0; j0 < step; j0 += Ns, o0 += R * Ns) {
      for (std::int64_t k = 0; k < Ns; ++k) {
        const std::int64_t j = j0 + k;
        vr[0] = ar[j];
        vi[0] = ai[j];
        for (std::int64_t q = 1; q < R; ++q) {
          const V a = ar[j + q * step], b = ai[j + q * step];
          const std::size_t t = static_cast<std::size_t>((q - 1) * Ns + k);
          vr[q] = a * st.wr[t] - b * st.wi[t];
          vi[q] = a * st.wi[t] + b * st.wr[t];
        }
        for (std::int64_t t = 0; t < R; ++t) {
          V sr = vr[0], si = vi[0];  // the q = 0 term, root 1
          std::int64_t e = t;        // q t mod R
          for (std::int64_t q = 1; q < R; ++q) {
            const double cr = st.rr[static_cast<std::size_t>(e)], ci = st.ri[static_cast<std::size_t>(e)];
            sr = sr + (vr[q] * cr - vi[q] * ci);
            si = si + (vr[q] * ci + vi[q] * cr);
            e += t;
            if (e >= R) e -= R;
          }
          br[o0 + k + t * Ns] = sr;
          bi[o0 + k + t * Ns] = si;
        }
      }
    }
  }
};

std::int64_t bluestein_length(std::int64_t n) {
  std::int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  return m;
}

// Everything one transform length needs, shared by the rows of a batch.
struct Plan {
  std::int64_t n;
  std::int64_t m;                  // the transform's length: n, or Bluestein's power of two
  std::optional<Stockham> forward, backward;  // of length m; backward only for Bluestein
  std::vector<double> cr, ci;      // chirp exp(sign pi i k^2 / n), k < n (Bluestein)
  std::vector<double> kr, ki;      // the transformed convolution kernel conj(chirp), circularly

  Plan(std::int64_t size, double sign) : n(size), m(size) {
    std::vector<std::int64_t> radices = radices_of(n);
    if (!radices.empty() || n == 1) {
      forward.emplace(n, sign, radices);
      return;
    }
    m = bluestein_length(n);
    radices = radices_of(m);
    forward.emplace(m, sign, radices);
    backward.emplace(m, -sign, radices);
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
    std::vector<double> sr(static_cast<std::size_t>(m)), si(static_cast<std::size_t>(m));
    forward->run(kr.data(), ki.data(), sr.data(), si.data());
  }

  bool bluestein() const { return backward.has_value(); }

  // Scratch a row (or a group of lanes) needs: 2 m values for the transform's ping-pong,
  // 2 m more for Bluestein's padded sequence.
  std::int64_t scratch() const { return bluestein() ? 4 * m : 2 * m; }

  // re, im: n values in, the transform out (unscaled); work: scratch() values.
  template <class V>
  void run(V* re, V* im, V* work) const {
    if (!bluestein()) return forward->run(re, im, work, work + n);
    V* __restrict wr = work;
    V* __restrict wi = work + m;
    V* sr = work + 2 * m;
    V* si = work + 3 * m;
    for (std::int64_t k = 0; k < n; ++k) {
      const V a = re[k], b = im[k];
      const double c = cr[static_cast<std::size_t>(k)], d = ci[static_cast<std::size_t>(k)];
      wr[k] = a * c - b * d;
      wi[k] = a * d + b * c;
    }
    std::fill(wr + n, wr + m, V{});
    std::fill(wi + n, wi + m, V{});
    forward->run(wr, wi, sr, si);
    for (std::int64_t k = 0; k < m; ++k) {
      const V a = wr[k], b = wi[k];
      const double c = kr[static_cast<std::size_t>(k)], d = ki[static_cast<std::size_t>(k)];
      wr[k] = a * c - b * d;
      wi[k] = a * d + b * c;
    }
    backward->run(wr, wi, sr, si);
    const double scale = 1.0 / static_cast<double>(m);
    for (std::int64_t k = 0; k < n; ++k) {
      const V a = wr[k] * scale, b = wi[k] * scale;
      const double c = cr[static_cast<std::size_t>(k)], d = ci[static_cast<std::size_t>(k)];
      re[k] = a * c - b * d;
      im[k] = a * d + b * c;
    }
  }
};

// Plans by (length, sign): building one takes O(n) sines and cosines, more than the
// transform of a small batch, and programs transform the same lengths call after call. At
// most kCachedPlans are kept (then the cache starts over; plans in use stay alive).
constexpr std::size_t kCachedPlans = 64;

std::shared_ptr<const Plan> plan_for(std::int64_t n, double sign) {
  static std::mutex mutex;
  static std::map<std::pair<std::int64_t, bool>, std::shared_ptr<const Plan>> plans;
  const std::pair<std::int64_t, bool> key{n, sign > 0};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = plans.find(key); it != plans.end()) return it->second;
  }
  auto plan = std::make_shared<const Plan>(n, sign);  // built outside the lock
  const std::lock_guard<std::mutex> lock(mutex);
  if (plans.size() >= kCachedPlans) plans.clear();
  return plans.emplace(key, std::move(plan)).first->second;
}

// Rows b0.. of a batch, one at a time or kLanes at once: `load(b, re, im)` fills a row's
// n values (V = double) or a lane group's (V = Lanes, lane l = row b + l), `store` takes
// them back. Groups of kLanes rows take the vector form; the rest, one row each.
template <class Load, class Store>
void for_rows(std::int64_t b0, std::int64_t b1, std::int64_t len, std::int64_t scratch, Load&& load, Store&& store,
              const auto& transform) {
  std::int64_t b = b0;
  if (b1 - b0 >= kLanes) {
    std::vector<Lanes> row(static_cast<std::size_t>(2 * len)), work(static_cast<std::size_t>(scratch));
    for (; b + kLanes <= b1; b += kLanes) {
      load(b, row.data(), row.data() + len);
      transform(row.data(), row.data() + len, work.data());
      store(b, row.data(), row.data() + len);
    }
  }
  if (b < b1) {
    std::vector<double> row(static_cast<std::size_t>(2 * len)), work(static_cast<std::size_t>(scratch));
    for (; b < b1; ++b) {
      load(b, row.data(), row.data() + len);
      transform(row.data(), row.data() + len, work.data());
      store(b, row.data(), row.data() + len);
    }
  }
}

template <class V>
constexpr std::int64_t lanes_of() {
  return std::is_same_v<V, Lanes> ? kLanes : 1;
}

#if defined(__clang__)
#define QB_LANE_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
typedef std::int64_t LaneMask __attribute__((vector_size(4 * sizeof(std::int64_t))));
#define QB_LANE_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, LaneMask{__VA_ARGS__})
#endif

// Rows a, b, c, d's values k..k+3 in, the lanes of indices k..k+3 out (and back: the 4x4
// transpose is its own inverse), in registers.
inline void transpose4(Lanes& a, Lanes& b, Lanes& c, Lanes& d) {
  const Lanes t0 = QB_LANE_SHUFFLE(a, b, 0, 4, 1, 5), t1 = QB_LANE_SHUFFLE(a, b, 2, 6, 3, 7);
  const Lanes t2 = QB_LANE_SHUFFLE(c, d, 0, 4, 1, 5), t3 = QB_LANE_SHUFFLE(c, d, 2, 6, 3, 7);
  a = QB_LANE_SHUFFLE(t0, t2, 0, 1, 4, 5);
  b = QB_LANE_SHUFFLE(t0, t2, 2, 3, 6, 7);
  c = QB_LANE_SHUFFLE(t1, t3, 0, 1, 4, 5);
  d = QB_LANE_SHUFFLE(t1, t3, 2, 3, 6, 7);
}

// Four consecutive values of a row as doubles, and back.
template <class T>
Lanes load4(const T* p) {
  if constexpr (std::is_same_v<T, double>) {
    Lanes v;
    std::memcpy(&v, p, sizeof v);
    return v;
  } else {
    typedef float Floats __attribute__((vector_size(4 * sizeof(float))));
    Floats f;
    std::memcpy(&f, p, sizeof f);
    return __builtin_convertvector(f, Lanes);
  }
}
template <class T>
void store4(T* p, Lanes v) {
  if constexpr (std::is_same_v<T, double>) {
    std::memcpy(p, &v, sizeof v);
  } else {
    typedef float Floats __attribute__((vector_size(4 * sizeof(float))));
    const Floats f = __builtin_convertvector(v, Floats);
    std::memcpy(p, &f, sizeof f);
  }
}

// out[k] = index `stride k` of the lanes_of<V>() rows, k < count (a Lanes: four rows).
// Whether four rows start at consecutive elements (columns of a transform along a
// non-last axis: their values at each index are one vector).
template <class T>
bool consecutive(const T* const* rows) {
  return rows[1] == rows[0] + 1 && rows[2] == rows[0] + 2 && rows[3] == rows[0] + 3;
}

template <class V, class T>
void load_rows(const T* const* rows, std::int64_t count, std::int64_t stride, V* out) {
  std::int64_t k = 0;
  if constexpr (std::is_same_v<V, Lanes>) {
    if (stride >= kLanes && consecutive(rows)) {
      for (; k < count; ++k) out[k] = load4(rows[0] + stride * k);
      return;
    }
    if (stride == 1) {
      for (; k + kLanes <= count; k += kLanes) {
        Lanes a = load4(rows[0] + k), b = load4(rows[1] + k), c = load4(rows[2] + k), d = load4(rows[3] + k);
        transpose4(a, b, c, d);
        out[k] = a;
        out[k + 1] = b;
        out[k + 2] = c;
        out[k + 3] = d;
      }
    } else if (stride == 2) {  // the even samples (rows as given) or the odd ones (rows + 1)
      for (; 2 * (k + kLanes) <= 2 * count - 1; k += kLanes) {
        Lanes v[kLanes];
        for (std::int64_t l = 0; l < kLanes; ++l) {
          const Lanes p = load4(rows[l] + 2 * k), q = load4(rows[l] + 2 * k + 4);
          v[l] = QB_LANE_SHUFFLE(p, q, 0, 2, 4, 6);
        }
        transpose4(v[0], v[1], v[2], v[3]);
        for (std::int64_t l = 0; l < kLanes; ++l) out[k + l] = v[l];
      }
    }
    for (; k < count; ++k) {
      out[k] = Lanes{static_cast<double>(rows[0][stride * k]), static_cast<double>(rows[1][stride * k]),
                     static_cast<double>(rows[2][stride * k]), static_cast<double>(rows[3][stride * k])};
    }
  } else {
    for (; k < count; ++k) out[k] = static_cast<double>(rows[0][stride * k]);
  }
}

// Index k of the lanes_of<V>() rows = in[k] * scale, k < count.
template <class V, class T>
void store_rows(T* const* rows, std::int64_t count, std::int64_t stride, const V* in, double scale) {
  std::int64_t k = 0;
  if constexpr (std::is_same_v<V, Lanes>) {
    if (stride >= kLanes && consecutive(rows)) {
      for (; k < count; ++k) store4(rows[0] + stride * k, in[k] * scale);
      return;
    }
    if (stride != 1) {
      for (; k < count; ++k) {
        const Lanes v = in[k] * scale;
        for (std::int64_t l = 0; l < kLanes; ++l) rows[l][stride * k] = static_cast<T>(v[l]);
      }
      return;
    }
    for (; k + kLanes <= count; k += kLanes) {
      Lanes a = in[k] * scale, b = in[k + 1] * scale, c = in[k + 2] * scale, d = in[k + 3] * scale;
      transpose4(a, b, c, d);
      store4(rows[0] + k, a);
      store4(rows[1] + k, b);
      store4(rows[2] + k, c);
      store4(rows[3] + k, d);
    }
    for (; k < count; ++k) {
      const Lanes v = in[k] * scale;
      for (std::int64_t l = 0; l < kLanes; ++l) rows[l][k] = static_cast<T>(v[l]);
    }
  } else {
    for (; k < count; ++k) rows[0][stride * k] = static_cast<T>(in[k] * scale);
  }
}

// Rows per task: enough work per task to amortise the pool's hand-off, in whole lane groups.
std::int64_t row_grain(std::int64_t n) {
  const std::int64_t g = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(n, 1));
  return (g + kLanes - 1) / kLanes * kLanes;
}

// Where row r of `len` values starts in a layout of blocks of len x inner values (row
// (o, c) = r's quotient and remainder by inner holds o len inner + c + k inner, k < len).
std::int64_t row_start(std::int64_t r, std::int64_t len, std::int64_t inner) {
  return (r / inner) * len * inner + r % inner;
}

template <class T>
void fft_rows(const T* in, std::int64_t batch, std::int64_t n, bool inverse, T* out, std::int64_t in_inner,
              std::int64_t out_inner) {
  const auto shared = plan_for(n, inverse ? 1.0 : -1.0);
  const Plan& plan = *shared;
  const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
  parallel_for(batch, row_grain(n), [&](std::int64_t b0, std::int64_t b1) {
    auto load = [&](std::int64_t b, auto* re, auto* im) {
      using V = std::remove_pointer_t<decltype(re)>;
      const T* src_re[kLanes];
      const T* src_im[kLanes];
      for (std::int64_t l = 0; l < lanes_of<V>(); ++l) {
        src_re[l] = in + row_start(b + l, n, in_inner);
        src_im[l] = in + batch * n + row_start(b + l, n, in_inner);
      }
      load_rows(src_re, n, in_inner, re);
      load_rows(src_im, n, in_inner, im);
    };
    auto store = [&](std::int64_t b, auto* re, auto* im) {
      using V = std::remove_pointer_t<decltype(re)>;
      T* dst_re[kLanes];
      T* dst_im[kLanes];
      for (std::int64_t l = 0; l < lanes_of<V>(); ++l) {
        dst_re[l] = out + row_start(b + l, n, out_inner);
        dst_im[l] = out + batch * n + row_start(b + l, n, out_inner);
      }
      store_rows(dst_re, n, out_inner, re, scale);
      store_rows(dst_im, n, out_inner, im, scale);
    };
    for_rows(b0, b1, n, plan.scratch(), load, store, [&](auto* re, auto* im, auto* work) { plan.run(re, im, work); });
  });
}

// Real rows: an even length n transforms as n/2 complex values z_j = x_2j + i x_2j+1, split
// afterwards (X_k = E_k + w^k O_k with E, O the spectra of the even and odd samples, read off
// Z_k and conj(Z_{n/2-k})); the upper half of the spectrum is the conjugate of the lower.
// An odd length runs the complex transform with zero imaginary parts. The inverse of a real
// row is the conjugate of its forward transform, over n.
template <class T>
void fft_real_rows(const T* in, std::int64_t batch, std::int64_t n, bool inverse, bool half_out, T* out,
                   std::int64_t in_inner, std::int64_t out_inner) {
  const bool half = n % 2 == 0 && n >= 2;
  const std::int64_t width = half_out ? n / 2 + 1 : n;  // output entries per row
  const std::int64_t h = half ? n / 2 : n;
  const auto shared = plan_for(h, -1.0);
  const Plan& plan = *shared;
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
  parallel_for(batch, row_grain(n), [&](std::int64_t b0, std::int64_t b1) {
    std::vector<double> staged_rows;
    std::vector<Lanes> staged_lanes;
    auto staging = [&](auto v) -> auto& {
      if constexpr (std::is_same_v<decltype(v), Lanes>) return staged_lanes;
      else return staged_rows;
    };
    auto load = [&](std::int64_t b, auto* re, auto* im) {
      using V = std::remove_pointer_t<decltype(re)>;
      const T* src[kLanes];
      for (std::int64_t l = 0; l < lanes_of<V>(); ++l) src[l] = in + row_start(b + l, n, in_inner);
      if (half) {
        // z_j = x_2j + i x_2j+1: the even and odd samples, read as two strided rows
        const T* odd[kLanes];
        for (std::int64_t l = 0; l < lanes_of<V>(); ++l) odd[l] = src[l] + in_inner;
        load_rows(src, h, 2 * in_inner, re);
        load_rows(odd, h, 2 * in_inner, im);
      } else {
        load_rows(src, n, in_inner, re);
        std::fill(im, im + n, V{});
      }
    };
    auto store = [&](std::int64_t b, auto* re, auto* im) {
      using V = std::remove_pointer_t<decltype(re)>;
      T* dst_re[kLanes];
      T* dst_im[kLanes];
      for (std::int64_t l = 0; l < lanes_of<V>(); ++l) {
        dst_re[l] = out + row_start(b + l, width, out_inner);
        dst_im[l] = out + batch * width + row_start(b + l, width, out_inner);
      }
      // The spectrum staged in lane form (the imaginary parts already conjugated for an
      // inverse; multiplying by +-1 is exact), then stored row by row.
      auto& staged = staging(V{});
      staged.resize(static_cast<std::size_t>(2 * width));
      V* sr = staged.data();
      V* si = staged.data() + width;
      if (!half) {
        for (std::int64_t k = 0; k < width; ++k) {
          sr[k] = re[k];
          si[k] = im[k] * conj_sign;
        }
      } else {
        for (std::int64_t k = 0; k <= h; ++k) {
          const std::int64_t a = k % h, c = (h - k) % h;
          // E = (Z_a + conj Z_c) / 2, O = (Z_a - conj Z_c) / (2i)
          const V er = (re[a] + re[c]) * 0.5, ei = (im[a] - im[c]) * 0.5;
          const V or_ = (im[a] + im[c]) * 0.5, oi = (re[a] - re[c]) * -0.5;
          const double wr = tw_r[static_cast<std::size_t>(k)], wi = tw_i[static_cast<std::size_t>(k)];
          const V xr = er + or_ * wr - oi * wi, xi = ei + oi * wr + or_ * wi;
          if (k < width) {
            sr[k] = xr;
            si[k] = xi * conj_sign;
          }
          if (k > 0 && k < h && n - k < width) {
            sr[n - k] = xr;
            si[n - k] = -xi * conj_sign;
          }
        }
      }
      store_rows(dst_re, width, out_inner, sr, scale);
      store_rows(dst_im, width, out_inner, si, scale);
    };
    for_rows(b0, b1, h, plan.scratch(), load, store, [&](auto* re, auto* im, auto* work) { plan.run(re, im, work); });
  });
}

}  // namespace

void fft(DType part, const std::byte* in, std::int64_t batch, std::int64_t n, bool inverse, std::byte* out,
         std::int64_t in_inner, std::int64_t out_inner) {
  if (batch == 0 || n == 0) return;
  switch (part) {
    case DType::f32:
      return fft_rows(reinterpret_cast<const float*>(in), batch, n, inverse, reinterpret_cast<float*>(out), in_inner,
                      out_inner);
    case DType::f64:
      return fft_rows(reinterpret_cast<const double*>(in), batch, n, inverse, reinterpret_cast<double*>(out), in_inner,
                      out_inner);
    case DType::bool_: case DType::i32: case DType::i64: case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;
  }
  throw InternalError("cpu::fft: needs the lowered float form");
}

void fft_real(DType part, const std::byte* in, std::int64_t batch, std::int64_t n, bool inverse, bool half,
              std::byte* out, std::int64_t in_inner, std::int64_t out_inner) {
  if (batch == 0 || n == 0) return;
  switch (part) {
    case DType::f32:
      return fft_real_rows(reinterpret_cast<const float*>(in), batch, n, inverse, half, reinterpret_cast<float*>(out),
                           in_inner, out_inner);
    case DType::f64:
      return fft_real_rows(reinterpret_cast<const double*>(in), batch, n, inverse, half, reinterpret_cast<double*>(out),
                           in_inner, out_inner);
    case DType::bool_: case DType::i32: case DType::i64: case DType::c64: case DType::c128: QB_NARROW_INT_CASES: break;
  }
  throw InternalError("cpu::fft_real: needs a float operand");
}

}  // namespace qb::cpu
