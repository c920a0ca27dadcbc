// The complex lowering (transforms/lower_complex.h) and the FFT kernel below the Python
// layer: a lowered program holds no complex value and keeps the byte layout of its complex
// parameters and results; its values match std::complex arithmetic; the FFT matches a direct
// DFT for power-of-two and other lengths, forward and inverse, on planar rows; eig and a
// complex solve through the executable; a host call on complex values raises TypeError.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "quabla/backends/cpu/executable.h"
#include "quabla/backends/cpu/kernels.h"
#include "quabla/ir/errors.h"
#include "quabla/transforms/lower_complex.h"
#include "test_util.h"

namespace qb {
namespace {

using test::make_buffer;
using test::read_buffer;
using test::vt;
using C = std::complex<double>;

std::vector<double> interleave(const std::vector<C>& z) {
  std::vector<double> out;
  for (const C& c : z) {
    out.push_back(c.real());
    out.push_back(c.imag());
  }
  return out;
}

std::vector<C> deinterleave(const std::vector<double>& v) {
  std::vector<C> out;
  for (std::size_t i = 0; i + 1 < v.size(); i += 2) out.emplace_back(v[i], v[i + 1]);
  return out;
}

// f(z, w) = exp(z) * w / (z - 2) + conj(z), and |z| as a second (real) result.
Graph example() {
  Graph g;
  Builder b(g);
  const ValueId z = b.param(vt(DType::c128, {3}));
  const ValueId w = b.param(vt(DType::c128, {3}));
  auto two = std::make_shared<Literal>();
  two->type = vt(DType::c128, {});
  two->data = Buffer::allocate(16);
  store_complex(DType::c128, two->data->data(), 2.0, 0.0);
  Attrs bc;
  bc.shape = {3};
  const ValueId t = b.emit1(Op::BroadcastInDim, {b.constant(two)}, bc);
  const ValueId q = b.emit1(Op::Div, {b.emit1(Op::Mul, {b.emit1(Op::Exp, {z}), w}), b.emit1(Op::Sub, {z, t})});
  b.set_results({b.emit1(Op::Add, {q, b.emit1(Op::Conj, {z})}), b.emit1(Op::Abs, {z})});
  verify(g);
  return g;
}

TEST(LowerComplex, LeavesNoComplexValueAndKeepsTheByteLayout) {
  auto g = std::make_shared<const Graph>(example());
  ASSERT_TRUE(has_complex(*g));
  auto lowered = lower_complex(g);
  EXPECT_FALSE(has_complex(*lowered));
  verify(*lowered);
  EXPECT_EQ(lowered->type(lowered->params[0]), vt(DType::f64, {3, 2}));
  EXPECT_EQ(lowered->type(lowered->results[0]), vt(DType::f64, {3, 2}));
  EXPECT_EQ(lowered->type(lowered->results[1]), vt(DType::f64, {3}));
  // A program without complex values is returned as it is.
  Graph r;
  Builder b(r);
  b.set_results({b.emit1(Op::Sin, {b.param(vt(DType::f64, {2}))})});
  auto real = std::make_shared<const Graph>(r);
  EXPECT_EQ(lower_complex(real), real);
}

TEST(LowerComplex, ValuesMatchStdComplex) {
  cpu::Executable exe(std::make_shared<const Graph>(example()));
  EXPECT_EQ(exe.graph().type(exe.graph().params[0]).dtype, DType::c128);  // the interface keeps its types
  const std::vector<C> z{{0.3, 0.2}, {-1.5, 2.0}, {4.0, -0.5}}, w{{1.0, -1.0}, {0.5, 0.25}, {-2.0, 3.0}};
  auto out = exe.run(std::vector<BufferPtr>{make_buffer<double>(interleave(z)), make_buffer<double>(interleave(w))});
  const auto got = deinterleave(read_buffer<double>(out[0], 6));
  const auto mag = read_buffer<double>(out[1], 3);
  for (std::size_t i = 0; i < 3; ++i) {
    const C want = std::exp(z[i]) * w[i] / (z[i] - 2.0) + std::conj(z[i]);
    EXPECT_NEAR(std::abs(got[i] - want), 0.0, 1e-13 * std::abs(want)) << i;
    EXPECT_NEAR(mag[i], std::abs(z[i]), 1e-15 * std::abs(z[i])) << i;
  }
}

std::vector<C> direct_dft(const std::vector<C>& x, bool inverse) {
  const auto n = static_cast<std::int64_t>(x.size());
  std::vector<C> out(x.size());
  for (std::int64_t k = 0; k < n; ++k) {
    C acc{};
    for (std::int64_t j = 0; j < n; ++j) {
      const double angle = (inverse ? 2.0 : -2.0) * std::numbers::pi * static_cast<double>((j * k) % n) / n;
      acc += x[static_cast<std::size_t>(j)] * C(std::cos(angle), std::sin(angle));
    }
    out[static_cast<std::size_t>(k)] = inverse ? acc / static_cast<double>(n) : acc;
  }
  return out;
}

// Six rows: a group of four transformed in SIMD lanes, then two one at a time.
constexpr int kRows = 6;

TEST(Fft, MatchesTheDirectTransformForAnyLength) {
  for (std::int64_t n : {1, 2, 3, 5, 7, 8, 12, 31, 37, 64, 74, 100, 1000, 1024}) {  // radix 2, mixed radix, Bluestein
    for (bool inverse : {false, true}) {
      std::vector<C> x;
      for (std::int64_t j = 0; j < kRows * n; ++j) x.emplace_back(std::sin(0.7 * j + 1.0), std::cos(1.3 * j) - 0.2);
      std::vector<double> in;  // planar: the real parts of both rows, then the imaginary parts
      for (const C& c : x) in.push_back(c.real());
      for (const C& c : x) in.push_back(c.imag());
      std::vector<double> out(in.size());
      cpu::fft(DType::f64, reinterpret_cast<const std::byte*>(in.data()), kRows, n, inverse,
               reinterpret_cast<std::byte*>(out.data()));
      std::vector<C> got;
      for (std::int64_t k = 0; k < kRows * n; ++k)
        got.emplace_back(out[static_cast<std::size_t>(k)], out[static_cast<std::size_t>(kRows * n + k)]);
      for (int row = 0; row < kRows; ++row) {
        const std::vector<C> part(x.begin() + row * n, x.begin() + (row + 1) * n);
        const auto want = direct_dft(part, inverse);
        for (std::int64_t k = 0; k < n; ++k) {
          EXPECT_NEAR(std::abs(got[static_cast<std::size_t>(row * n + k)] - want[static_cast<std::size_t>(k)]), 0.0,
                      1e-12 * static_cast<double>(n))
              << "n=" << n << " inverse=" << inverse << " k=" << k;
        }
      }
    }
  }
}

TEST(Fft, RealRowsMatchTheDirectTransformWholeAndHalf) {
  for (std::int64_t n : {1, 2, 5, 8, 12, 37, 64, 75}) {
    for (bool inverse : {false, true}) {
      for (bool half : {false, true}) {
        std::vector<double> x;
        for (std::int64_t j = 0; j < kRows * n; ++j) x.push_back(std::sin(0.9 * j) + 0.1 * j);
        const std::int64_t width = half ? n / 2 + 1 : n;
        std::vector<double> out(static_cast<std::size_t>(2 * kRows * width));
        cpu::fft_real(DType::f64, reinterpret_cast<const std::byte*>(x.data()), kRows, n, inverse, half,
                      reinterpret_cast<std::byte*>(out.data()));
        for (std::int64_t row = 0; row < kRows; ++row) {
          std::vector<C> part;
          for (std::int64_t j = 0; j < n; ++j) part.emplace_back(x[static_cast<std::size_t>(row * n + j)], 0.0);
          const auto want = direct_dft(part, inverse);
          for (std::int64_t k = 0; k < width; ++k) {
            const C got(out[static_cast<std::size_t>(row * width + k)], out[static_cast<std::size_t>((kRows + row) * width + k)]);
            EXPECT_NEAR(std::abs(got - want[static_cast<std::size_t>(k)]), 0.0, 1e-12 * static_cast<double>(n))
                << "n=" << n << " inverse=" << inverse << " half=" << half << " k=" << k;
          }
        }
      }
    }
  }
}

// eig of a real 3 x 3 matrix with eigenvalues 1 +- 2i and 5 through the executable (the
// lowering to the planar kernel, geev): A v = w v for every pair, unit columns, and a
// complex solve A x = b (lowered to its real 2n x 2n form) against the residual.
TEST(LowerComplex, EigAndComplexSolveThroughTheExecutable) {
  const std::vector<double> a{1.0, -2.0, 0.5, 2.0, 1.0, 0.0, 0.0, 0.0, 5.0};
  Graph g;
  Builder b(g);
  const ValueId m = b.param(vt(DType::f64, {3, 3}));
  const ValueId rhs = b.param(vt(DType::c128, {3, 1}));
  const ValueId cm = b.emit1(Op::Convert, {m}, [] {
    Attrs c;
    c.dtype = DType::c128;
    return c;
  }());
  const ValueId sum = b.emit1(Op::Add, {cm, b.emit1(Op::MatMul, {rhs, b.emit1(Op::Transpose, {rhs}, [] {
                                                        Attrs t;
                                                        t.dims = {1, 0};
                                                        return t;
                                                      }())})});
  b.set_results({b.emit1(Op::Eig, {m}), b.emit1(Op::Solve, {sum, rhs})});
  verify(g);
  cpu::Executable exe(std::make_shared<const Graph>(g));
  const std::vector<C> bv{{1.0, 0.5}, {-0.25, 2.0}, {0.75, -1.0}};
  auto out = exe.run(std::vector<BufferPtr>{make_buffer<double>(a), make_buffer<double>(interleave(bv))});
  const auto e = deinterleave(read_buffer<double>(out[0], 24));  // [4, 3]: w, then V
  std::vector<C> want{{1.0, 2.0}, {1.0, -2.0}, {5.0, 0.0}};
  for (std::size_t j = 0; j < 3; ++j) {
    const C w = e[j];
    double best = 1e300, norm = 0.0;
    for (const C& c : want) best = std::min(best, std::abs(w - c));
    EXPECT_LT(best, 1e-12) << j;
    for (std::size_t i = 0; i < 3; ++i) {
      C av = 0.0;
      for (std::size_t k = 0; k < 3; ++k) av += a[i * 3 + k] * e[3 + k * 3 + j];
      EXPECT_LT(std::abs(av - w * e[3 + i * 3 + j]), 1e-12) << i << "," << j;
      norm += std::norm(e[3 + i * 3 + j]);
    }
    EXPECT_NEAR(norm, 1.0, 1e-12);
  }
  // (A + b b^T) x = b
  const auto x = deinterleave(read_buffer<double>(out[1], 6));
  for (std::size_t i = 0; i < 3; ++i) {
    C r = -bv[i];
    for (std::size_t k = 0; k < 3; ++k) r += (a[i * 3 + k] + bv[i] * bv[k]) * x[k];
    EXPECT_LT(std::abs(r), 1e-12) << i;
  }
}

// A complex factorization keeps its op in the lowered program (mode bit 8, planar operand
// and result) and runs LAPACK's complex routine: slogdet of a 2 x 2 complex matrix against
// the determinant ad - bc, and the Cholesky factor of a Hermitian matrix against L L^H.
TEST(LowerComplex, ComplexFactorizationsRunTheirComplexKernels) {
  Graph g;
  Builder b(g);
  const ValueId m = b.param(vt(DType::c128, {2, 2}));
  b.set_results({b.emit1(Op::Slogdet, {m}), b.emit1(Op::Cholesky, {m})});
  verify(g);
  auto lowered = lower_complex(std::make_shared<const Graph>(g));
  int planar = 0;
  for (const Node& n : lowered->nodes) planar += (n.op == Op::Slogdet || n.op == Op::Cholesky) && (n.attrs.mode & kLinalgPlanar);
  EXPECT_EQ(planar, 2);
  cpu::Executable exe(std::make_shared<const Graph>(g));
  const std::vector<C> a{{4.0, 0.0}, {1.0, -2.0}, {1.0, 2.0}, {6.0, 0.0}};  // Hermitian, positive definite
  auto out = exe.run(std::vector<BufferPtr>{make_buffer<double>(interleave(a))});
  const auto sl = deinterleave(read_buffer<double>(out[0], 4));
  const C det = a[0] * a[3] - a[1] * a[2];
  EXPECT_LT(std::abs(sl[0] * std::exp(sl[1]) - det), 1e-12);
  EXPECT_EQ(sl[1].imag(), 0.0);
  const auto l = deinterleave(read_buffer<double>(out[1], 8));
  EXPECT_EQ(l[1], C(0.0));  // strict upper triangle
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      C v = 0.0;
      for (int k = 0; k < 2; ++k) v += l[i * 2 + k] * std::conj(l[j * 2 + k]);
      EXPECT_LT(std::abs(v - a[i * 2 + j]), 1e-12) << i << "," << j;
    }
}

TEST(LowerComplex, HostCallOnComplexRaisesTypeError) {
  Graph g;
  Builder b(g);
  Attrs a;
  a.dtype = DType::c64;
  a.shape = {2};
  a.num_consts = -1;
  b.set_results({b.emit1(Op::HostCall, {b.param(vt(DType::c64, {2}))}, a)});
  EXPECT_THROW(lower_complex(std::make_shared<const Graph>(g)), TypeError);
}

}  // namespace
}  // namespace qb
