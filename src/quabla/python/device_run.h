// Running a compiled graph on device arrays (device_run.cc).
#pragma once
#include <vector>

#include "quabla/backends/cuda/program.h"
#include "quabla/backends/mlx/program.h"
#include "quabla/python/device_array.h"

namespace qb::py {

// `g` compiled as `p` run on `hs`, device arrays on p's device (and, when `upload`, host
// arrays copied there as constants; otherwise a host array is a ValueError); the results
// are device arrays there. Shapes and dtypes are checked against g's parameters.
nb::list run_cuda_handles(const cuda::Program& p, const Graph& g, const std::vector<nb::handle>& hs, bool upload);
nb::list run_mlx_handles(const mlxb::Program& p, const Graph& g, const std::vector<nb::handle>& hs, bool upload);

}  // namespace qb::py
