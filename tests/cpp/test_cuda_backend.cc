// The CUDA backend's device-independent parts: code generation, lowering, the caching
// allocator, and whole programs on the host emulator (which runs the generated source).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "quabla/api/functions.h"
#include "quabla/backends/cuda/codegen.h"
#include "quabla/backends/cuda/device.h"
#include "quabla/backends/cuda/lowering.h"
#include "quabla/backends/cuda/program.h"
#include "quabla/ir/errors.h"
#include "test_util.h"

namespace qb {
namespace {

using api::V;
using test::make_buffer;
using test::read_buffer;
using test::vt;

TEST(CudaCodegen, ElementwiseExpressionsFollowTheCpuDefinitions) {
  EXPECT_EQ(cuda::elementwise_expr(Op::Tanh, DType::f32, DType::f32, {"a"}), "tanhf(a)");
  EXPECT_EQ(cuda::elementwise_expr(Op::Tanh, DType::f64, DType::f64, {"a"}), "tanh(a)");
  EXPECT_EQ(cuda::elementwise_expr(Op::Div, DType::i32, DType::i32, {"a", "b"}), "qb_idiv(a, b)");
  EXPECT_EQ(cuda::elementwise_expr(Op::Convert, DType::f64, DType::i64, {"a"}), "qb_f2i64(a)");
  EXPECT_EQ(cuda::elementwise_expr(Op::Lt, DType::f64, DType::bool_, {"a", "b"}), "(qb_u8)(a < b)");
  EXPECT_THROW(cuda::elementwise_expr(Op::MatMul, DType::f32, DType::f32, {"a", "b"}), InternalError);
}

TEST(CudaCodegen, HostModuleWrapsEveryKernel) {
  cuda::KernelSource k{"qb_k0", {{"const float*", "x"}, {"float*", "y"}}, "    y[i] = x[i];\n"};
  const std::string host = cuda::module_source({k}, cuda::Target::Host);
  EXPECT_NE(host.find("extern \"C\" void qb_k0_host(void** a)"), std::string::npos);
  const std::string gpu = cuda::module_source({k}, cuda::Target::Cuda);
  EXPECT_EQ(gpu.find("_host"), std::string::npos);
  EXPECT_NE(gpu.find("__global__"), std::string::npos);
}

// tanh(x) * y summed over the trailing axis: one fused kernel, split into partial sums.
std::shared_ptr<Graph> fused_sum_graph(std::int64_t rows, std::int64_t cols, ValueId* out) {
  auto g = std::make_shared<Graph>();
  Builder b(*g);
  V x = b.param(vt(DType::f64, {rows, cols}));
  V y = b.param(vt(DType::f64, {rows, cols}));
  V s = api::reduce(b, "sum", Op::ReduceSum, api::binary(b, "mul", Op::Mul, api::unary(b, "tanh", Op::Tanh, x), y), api::Axes{std::vector<std::int64_t>{1}},
                    false);
  b.set_results({s});
  *out = s;
  verify(*g);
  return g;
}

TEST(CudaLowering, FusedChainWithSumEpilogue) {
  ValueId out = 0;
  auto g = fused_sum_graph(4, 5000, &out);
  const cuda::Plan plan = cuda::lower(g, "cuda");
  EXPECT_EQ(plan.fused_kernels, 1);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].launches.size(), 2u);  // partial sums, then their fixed-order total
  EXPECT_EQ(plan.steps[0].temp_bytes.size(), 1u);
}

TEST(CudaLowering, UnsupportedOpNamesItselfAndTheDevice) {
  auto g = std::make_shared<Graph>();
  Builder b(*g);
  V a = b.param(vt(DType::f64, {200, 200}));  // past the one-thread-per-matrix kernels' limit
  b.set_results({api::linalg_cholesky(b, a)});
  try {
    cuda::lower(g, "cuda:0");
    FAIL() << "cholesky lowered";
  } catch (const UnsupportedOperation& e) {
    EXPECT_EQ(e.op, "cholesky");
    EXPECT_EQ(e.device, "cuda:0");
  }
}

TEST(CudaEmulator, ProgramMatchesTheCpu) {
  ValueId out = 0;
  auto g = fused_sum_graph(3, 7000, &out);
  std::vector<double> xs(21000), ys(21000);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = std::sin(0.001 * static_cast<double>(i));
    ys[i] = std::cos(0.002 * static_cast<double>(i));
  }
  const std::vector<BufferPtr> args{make_buffer(xs), make_buffer(ys)};
  cpu::Executable cpu_exe(g);
  const auto want = read_buffer<double>(cpu_exe.run(args)[0], 3);
  cuda::Program prog(g, cuda::device(0, true));
  const auto got = read_buffer<double>(prog.run_host(args)[0], 3);
  for (int r = 0; r < 3; ++r) EXPECT_NEAR(got[static_cast<std::size_t>(r)], want[static_cast<std::size_t>(r)], 1e-12 * std::fabs(want[static_cast<std::size_t>(r)]));
  EXPECT_EQ(prog.launches(), 2);
}

TEST(CudaDevice, CachingAllocatorReusesFreedBlocks) {
  cuda::Device& dev = cuda::device(0, true);
  const std::size_t before = dev.bytes_in_use();
  cuda::CUdeviceptr first = 0;
  {
    auto a = dev.allocate(1000);
    first = a->ptr;
    EXPECT_NE(first, 0u);
    EXPECT_EQ(dev.bytes_in_use(), before + 1024);  // a 512-byte size class
  }
  EXPECT_EQ(dev.bytes_in_use(), before);
  auto b = dev.allocate(900);  // same class: the freed block comes back
  EXPECT_EQ(b->ptr, first);
  auto v = cuda::view(b, 256, 100);
  EXPECT_EQ(v->ptr, first + 256);
  b.reset();
  EXPECT_EQ(dev.bytes_in_use(), before + 1024);  // the view keeps its buffer alive
  v.reset();
  EXPECT_EQ(dev.allocate(0)->ptr, 0u);
}

TEST(CudaDevice, NoGpuHasAReason) {
  if (cuda::gpu_count() > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_FALSE(cuda::gpu_unavailable_reason().empty());
  EXPECT_THROW(cuda::device(0, false), ValueError);
}

}  // namespace
}  // namespace qb
