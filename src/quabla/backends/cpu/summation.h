// The one summation order of contiguous runs, shared by the reduction kernel and the
// reduction epilogues of fused kernels so both give bitwise the same sums: a run is cut into
// blocks of kSumBlock elements from its start, each block is summed pairwise, and the block
// sums are summed pairwise. Error grows with log(n), as NumPy's pairwise sum.
#pragma once
#include <cstdint>
#include <vector>

namespace qb::cpu {

constexpr std::int64_t kSumBlock = 1024;

template <class T>
T pairwise_sum(const T* x, std::int64_t n) {
  if (n <= 64) {
    T acc[8] = {};
    std::int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) acc[l] += x[i + l];
    T s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; ++i) s += x[i];
    return s;
  }
  const std::int64_t half = (n / 2) & ~std::int64_t{7};
  return pairwise_sum(x, half) + pairwise_sum(x + half, n - half);
}

template <class T>
T blocked_sum(const T* x, std::int64_t n) {
  if (n <= kSumBlock) return pairwise_sum(x, n);
  std::vector<T> partial;
  partial.reserve(static_cast<std::size_t>((n + kSumBlock - 1) / kSumBlock));
  for (std::int64_t b = 0; b < n; b += kSumBlock) partial.push_back(pairwise_sum(x + b, std::min(kSumBlock, n - b)));
  return pairwise_sum(partial.data(), static_cast<std::int64_t>(partial.size()));
}

}  // namespace qb::cpu
