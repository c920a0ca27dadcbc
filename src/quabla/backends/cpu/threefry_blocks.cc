// ops.def's threefry on the CPU: each key's blocks by random/threefry.cc's vectorised rounds
// (the kernel concrete keys sample with), so a jitted draw costs what an eager one does.
#include <algorithm>
#include <span>

#include "quabla/backends/cpu/kernels.h"
#include "quabla/random/threefry.h"
#include "quabla/runtime/thread_pool.h"

namespace qb::cpu {

void threefry_blocks(const std::int32_t* k0, const std::int32_t* k1, std::int64_t keys, std::int64_t n,
                     std::int32_t* out) {
  const auto count = static_cast<std::size_t>(n);
  auto one = [&](std::int64_t k) {
    auto* first = reinterpret_cast<std::uint32_t*>(out + static_cast<std::size_t>(k) * 2 * count);
    const random::Key key{static_cast<std::uint32_t>(k0[k]), static_cast<std::uint32_t>(k1[k])};
    random::blocks(key, std::span(first, count), std::span(first + count, count));
  };
  // A large draw splits its own blocks over the pool (random::blocks); many small ones (a
  // vmapped key stack) are split by key instead.
  if (keys == 1 || n >= 65536) {
    for (std::int64_t k = 0; k < keys; ++k) one(k);
    return;
  }
  parallel_for(keys, std::max<std::int64_t>(1, 65536 / std::max<std::int64_t>(n, 1)), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t k = b; k < e; ++k) one(k);
  });
}

}  // namespace qb::cpu
