// Threefry-2x32 and the draws made from it (random/threefry.h): Random123's known answers,
// JAX's key derivation and sample mapping (values printed by jax 0.10.2 with x64 enabled),
// and the erfinv behind normals against closed-form points.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "quabla/random/threefry.h"

namespace qb::random {
namespace {

TEST(Threefry, MatchesRandom123KnownAnswers) {
  EXPECT_EQ(threefry2x32({0u, 0u}, {0u, 0u}), (std::array<std::uint32_t, 2>{0x6b200159u, 0x99ba4efeu}));
  EXPECT_EQ(threefry2x32({0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (std::array<std::uint32_t, 2>{0x1cb996fcu, 0xbb002be7u}));
  EXPECT_EQ(threefry2x32({0x13198a2eu, 0x03707344u}, {0x243f6a88u, 0x85a308d3u}),
            (std::array<std::uint32_t, 2>{0xc4923a9cu, 0x483df7a0u}));
}

TEST(Threefry, KeysSplitsAndFoldInAreJaxs) {
  const Key k = key_from_seed(42);
  EXPECT_EQ(k, (Key{0u, 42u}));  // jax.random.PRNGKey(42)
  EXPECT_EQ(key_from_seed((1ull << 40) + 5), (Key{256u, 5u}));
  EXPECT_EQ(split(k, 0), (Key{1832780943u, 270669613u}));  // jax.random.split(PRNGKey(42), 3)
  EXPECT_EQ(split(k, 2), (Key{2465931498u, 255383827u}));
  EXPECT_EQ(fold_in(k, 7), (Key{2547012911u, 1371500959u}));  // jax.random.fold_in(PRNGKey(42), 7)
  std::vector<std::uint32_t> first(3), second(3);
  blocks(k, first, second);
  EXPECT_EQ(first[1] ^ second[1], 2919706841u);  // jax.random.bits(PRNGKey(42), (3,))[1]
}

TEST(Threefry, UniformsAreJaxsBitForBit) {
  std::vector<double> u(3);
  uniform(key_from_seed(42), 0.0, 1.0, u);
  EXPECT_EQ(u[0], 0.4267275666499091);  // jax.random.uniform(PRNGKey(42), (3,)) with x64
  std::vector<float> f(3);
  uniform(key_from_seed(42), 0.0, 1.0, f);
  EXPECT_EQ(f[0], 0.48870956897735596f);  // ... dtype=float32
  std::vector<double> top(100000);
  uniform(key_from_seed(3), 1.0, 1.0 + 0x1p-52, top);
  for (double v : top) ASSERT_TRUE(v >= 1.0 && v < 1.0 + 0x1p-52);  // rounding never reaches maxval
}

TEST(Threefry, NormalsUseAnAccurateErfinv) {
  // sqrt(2) erfinv(u) is the standard normal quantile at (1 + u) / 2.
  std::vector<double> u = {0.0, 0.5, -0.5, 0.9, 0.999999, 1.0 - 0x1p-40, -(1.0 - 0x1p-53), 1e-300};
  // mpmath at 40 digits
  const std::vector<double> z = {0.0,
                                 0.67448975019608174,
                                 -0.67448975019608174,
                                 1.6448536269514728,
                                 4.8916384756929318,
                                 7.1435520343521893,
                                 -8.2923610758135955,
                                 1.2533141373155003e-300};
  sqrt2_erfinv(std::span<double>(u));
  for (std::size_t i = 0; i < u.size(); ++i) EXPECT_NEAR(u[i], z[i], 4e-16 * std::fabs(z[i])) << i;
  std::vector<double> edge = {1.0, -1.0, std::nan("")};
  sqrt2_erfinv(std::span<double>(edge));
  EXPECT_EQ(edge[0], INFINITY);
  EXPECT_EQ(edge[1], -INFINITY);
  EXPECT_TRUE(std::isnan(edge[2]));
}

}  // namespace
}  // namespace qb::random
