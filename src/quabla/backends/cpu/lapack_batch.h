// How the LAPACK kernels (linalg.cc, eig.cc) run over a batch of matrices.
#pragma once

#include <cstdint>
#include <functional>

namespace qb::cpu {

// Runs body(b0, b1) over the batch's matrices [b0, b1): chunks over the pool for a batch (a
// fixed split whatever the thread count, each matrix computed by one single-threaded LAPACK
// call, so results never depend on the thread count); a single large matrix on the caller
// with OpenBLAS's threads switched on for the call only (the rest of the process calls
// OpenBLAS single-threaded, gemm.cc). OpenBLAS's count is global, so those calls are
// serialised.
void for_each_matrix(std::int64_t batch, std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& body);

}  // namespace qb::cpu
