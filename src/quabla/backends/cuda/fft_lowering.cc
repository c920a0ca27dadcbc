#include "quabla/backends/cuda/fft_lowering.h"

#include <bit>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <sstream>

#include "quabla/backends/cpu/kernels.h"

namespace qb::cuda {

namespace {

struct Complex {
  double re, im;
};

// exp(sign * 2 pi i * t / period) for t in [0, period): the CPU's twiddles (fft.cc).
Complex unit_root(std::int64_t t, std::int64_t period, double sign) {
  const double angle = 2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(period);
  return {std::cos(angle), sign * std::sin(angle)};
}

std::vector<std::int64_t> bits_of(const std::vector<double>& v) {
  std::vector<std::int64_t> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(std::bit_cast<std::int64_t>(x));
  return out;
}

// Planar [re..., im...] of a list of complex numbers.
std::vector<double> planar(const std::vector<Complex>& z) {
  std::vector<double> out(2 * z.size());
  for (std::size_t k = 0; k < z.size(); ++k) {
    out[k] = z[k].re;
    out[z.size() + k] = z[k].im;
  }
  return out;
}

// Statements setting `r` to the bit reversal of `d` over `bits` bits.
std::string bit_reverse(const std::string& d, int bits) {
  std::ostringstream b;
  b << "    qb_i64 r = 0;\n    { qb_i64 v = " << d << ";\n      for (int q = 0; q < " << bits
    << "; ++q) { r = (r << 1) | (v & 1); v >>= 1; }\n    }\n";
  return b.str();
}

Arg value(ValueId v) { return Arg{Arg::Value, v, -1, 0}; }
Arg temp(int t) { return Arg{Arg::Temp, 0, t, 0}; }
Arg blob(int b) { return Arg{Arg::Blob, 0, b, 0}; }
Arg imm(std::int64_t v) { return Arg{Arg::Int, 0, -1, v}; }

class Builder {
 public:
  explicit Builder(const FftShape& s) : s_(s), t_(c_type(s.part)) {
    while ((std::int64_t{1} << bits_) < s.n) ++bits_;
    bluestein_ = (std::int64_t{1} << bits_) != s.n;
    if (bluestein_) {
      m_ = 1;
      bits_ = 0;
      while (m_ < 2 * s.n - 1) {
        m_ *= 2;
        ++bits_;
      }
    } else {
      m_ = s.n;
    }
    sign_ = s.inverse ? 1.0 : -1.0;
  }

  FftLowering run(ValueId in, ValueId out) {
    const std::int64_t work = 2 * s_.rows * m_;  // doubles per work buffer
    out_.temp_bytes.push_back(static_cast<std::size_t>(work) * sizeof(double));
    int chirp = -1, filter = -1;
    if (bluestein_) {
      out_.temp_bytes.push_back(static_cast<std::size_t>(work) * sizeof(double));
      const std::vector<Complex> c = chirp_values();
      chirp = add_blob(planar(c));
      filter = add_blob(filter_spectrum(c));
    }
    const int twiddles = m_ > 1 ? add_blob(twiddle_table()) : -1;
    load(in, chirp);
    stages(0, twiddles, 1);
    int result = 0;
    if (bluestein_) {
      multiply(filter);
      stages(1, twiddles, -1);  // the backward transform: the conjugate twiddles
      result = 1;
    }
    store(result, chirp, out);
    return std::move(out_);
  }

 private:
  int add_blob(const std::vector<double>& v) {
    out_.blobs.push_back(bits_of(v));
    return static_cast<int>(out_.blobs.size() - 1);
  }

  // The radix-2 twiddles of length m with the plan's sign: stage half-length h at offset
  // h - 1, as the CPU's table (planar).
  std::vector<double> twiddle_table() const {
    std::vector<Complex> w;
    for (std::int64_t h = 1; h < m_; h *= 2)
      for (std::int64_t k = 0; k < h; ++k) w.push_back(unit_root(k * (m_ / (2 * h)), m_, sign_));
    return planar(w);
  }

  // Bluestein's chirp c_k = exp(sign pi i k^2 / n), k < n.
  std::vector<Complex> chirp_values() const {
    std::vector<Complex> c;
    for (std::int64_t k = 0; k < s_.n; ++k) c.push_back(unit_root((k * k) % (2 * s_.n), 2 * s_.n, sign_));
    return c;
  }

  // The transform (with the plan's sign, unscaled) of the circular filter conj(c_|k|),
  // computed on the host by the CPU's power-of-two transform (planar, m values).
  std::vector<double> filter_spectrum(const std::vector<Complex>& c) const {
    std::vector<double> f(static_cast<std::size_t>(2 * m_), 0.0), spectrum(static_cast<std::size_t>(2 * m_));
    const auto at = [](std::int64_t k) { return static_cast<std::size_t>(k); };
    f[0] = c[0].re;
    f[at(m_)] = -c[0].im;
    for (std::int64_t k = 1; k < s_.n; ++k) {
      f[at(k)] = f[at(m_ - k)] = c[at(k)].re;
      f[at(m_ + k)] = f[at(m_ + m_ - k)] = -c[at(k)].im;
    }
    // cpu::fft's inverse is the +i transform over m; m is a power of two, so undoing the
    // scale is exact.
    cpu::fft(DType::f64, reinterpret_cast<const std::byte*>(f.data()), 1, m_, sign_ > 0,
             reinterpret_cast<std::byte*>(spectrum.data()));
    if (sign_ > 0)
      for (double& v : spectrum) v *= static_cast<double>(m_);
    return spectrum;
  }

  void launch(std::vector<KernelParam> params, std::string body, std::int64_t count, std::vector<Arg> args) {
    out_.launches.push_back(FftKernelLaunch{std::move(params), std::move(body), count, std::move(args)});
  }

  // Work buffer 0, bit-reversed: w[d] = x[bitrev(d)] (times the chirp for Bluestein; zero
  // past n).
  void load(ValueId in, int chirp) {
    const std::int64_t n = s_.n, rows = s_.rows;
    std::ostringstream b;
    b << "    const qb_i64 row = i / " << m_ << ", d = i % " << m_ << ";\n" << bit_reverse("d", bits_);
    b << "    double re = 0, im = 0;\n    if (r < " << n << ") {\n";
    b << "      re = (double)x[row * " << n << " + r];\n";
    if (!s_.real_input) b << "      im = (double)x[(" << rows << " + row) * " << n << " + r];\n";
    if (chirp >= 0) {
      b << "      const double cr = c[r], ci = c[" << n << " + r], a = re;\n";
      b << "      re = a * cr - im * ci;\n      im = a * ci + im * cr;\n";
    }
    b << "    }\n    w[row * " << m_ << " + d] = re;\n    w[(" << rows << " + row) * " << m_ << " + d] = im;\n";
    std::vector<KernelParam> params{{"const " + t_ + "*", "x"}};
    std::vector<Arg> args{value(in)};
    if (chirp >= 0) {
      params.push_back({"const double*", "c"});
      args.push_back(blob(chirp));
    }
    params.push_back({"double*", "w"});
    args.push_back(temp(0));
    launch(std::move(params), b.str(), rows * m_, std::move(args));
  }

  // The radix-2 butterflies of buffer `buf` in place, one launch per stage (h = 1, 2, ...,
  // m / 2), one thread per butterfly; `conj` -1 conjugates the twiddles.
  void stages(int buf, int twiddles, int conj) {
    if (m_ < 2) return;
    const std::int64_t rows = s_.rows, half = m_ / 2;
    std::ostringstream b;
    b << "    const qb_i64 row = i / " << half << ", t = i % " << half << ", j = t % h;\n";
    b << "    const qb_i64 p = row * " << m_ << " + (t / h) * 2 * h + j, q = p + h;\n";
    b << "    double* re = w;\n    double* im = w + " << rows * m_ << ";\n";
    b << "    const double wr = tw[h - 1 + j], wi = (double)s * tw[" << m_ - 1 << " + h - 1 + j];\n";
    b << "    const double br = re[q] * wr - im[q] * wi, bi = re[q] * wi + im[q] * wr;\n";
    b << "    const double ar = re[p], ai = im[p];\n";
    b << "    re[p] = ar + br;\n    im[p] = ai + bi;\n    re[q] = ar - br;\n    im[q] = ai - bi;\n";
    const std::vector<KernelParam> params{{"double*", "w"}, {"const double*", "tw"}, {"qb_i64", "h"}, {"qb_i64", "s"}};
    for (std::int64_t h = 1; h < m_; h *= 2)
      launch(params, b.str(), rows * half, {temp(buf), blob(twiddles), imm(h), imm(conj)});
  }

  // Bluestein: buffer 1, bit-reversed, = buffer 0 times the filter's spectrum.
  void multiply(int filter) {
    const std::int64_t rows = s_.rows;
    std::ostringstream b;
    b << "    const qb_i64 row = i / " << m_ << ", d = i % " << m_ << ";\n" << bit_reverse("d", bits_);
    b << "    const double ar = a[row * " << m_ << " + r], ai = a[(" << rows << " + row) * " << m_ << " + r];\n";
    b << "    const double kr = f[r], ki = f[" << m_ << " + r];\n";
    b << "    w[row * " << m_ << " + d] = ar * kr - ai * ki;\n";
    b << "    w[(" << rows << " + row) * " << m_ << " + d] = ar * ki + ai * kr;\n";
    launch({{"const double*", "a"}, {"const double*", "f"}, {"double*", "w"}}, b.str(), rows * m_,
           {temp(0), blob(filter), temp(1)});
  }

  // y = the first `width` values of buffer `buf` (over m and times the chirp for
  // Bluestein), scaled by 1/n for an inverse, in the output dtype.
  void store(int buf, int chirp, ValueId out) {
    const std::int64_t rows = s_.rows, width = s_.width;
    std::ostringstream b;
    b << "    const qb_i64 row = i / " << width << ", k = i % " << width << ";\n";
    b << "    double re = w[row * " << m_ << " + k], im = w[(" << rows << " + row) * " << m_ << " + k];\n";
    if (chirp >= 0) {
      b << "    re *= 1.0 / " << m_ << ".0;\n    im *= 1.0 / " << m_ << ".0;\n";
      b << "    const double cr = c[k], ci = c[" << s_.n << " + k], a = re;\n";
      b << "    re = a * cr - im * ci;\n    im = a * ci + im * cr;\n";
    }
    if (s_.inverse) {
      b << "    re *= 1.0 / " << s_.n << ".0;\n    im *= 1.0 / " << s_.n << ".0;\n";
    }
    b << "    y[row * " << width << " + k] = (" << t_ << ")re;\n";
    b << "    y[(" << rows << " + row) * " << width << " + k] = (" << t_ << ")im;\n";
    std::vector<KernelParam> params{{"const double*", "w"}};
    std::vector<Arg> args{temp(buf)};
    if (chirp >= 0) {
      params.push_back({"const double*", "c"});
      args.push_back(blob(chirp));
    }
    params.push_back({t_ + "*", "y"});
    args.push_back(value(out));
    launch(std::move(params), b.str(), rows * width, std::move(args));
  }

  FftShape s_;
  std::string t_;
  int bits_ = 0;
  bool bluestein_ = false;
  std::int64_t m_ = 1;
  double sign_ = -1;
  FftLowering out_;
};

}  // namespace

FftLowering lower_fft(const FftShape& shape, ValueId in, ValueId out) { return Builder(shape).run(in, out); }

}  // namespace qb::cuda
