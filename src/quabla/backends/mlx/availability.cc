// The MLX backend's entry points when Quabla is built without MLX.
#ifndef QUABLA_HAVE_MLX
#include "quabla/backends/mlx/program.h"
#include "quabla/ir/errors.h"

namespace qb::mlxb {

bool available() { return false; }

std::string unavailable_reason() {
  return "this build of Quabla has no MLX backend: install the mlx package where Quabla is built (pip install "
         "mlx[cpu] on Linux, mlx on macOS) and rebuild (pip install --no-build-isolation ., or scripts/setup.sh)";
}

std::string version() { return {}; }

ResidentPtr upload(const BufferPtr&, const ValueType&) {
  throw UnsupportedOperation("device_put(..., 'mlx'): " + unavailable_reason(), "device_put", "mlx");
}

BufferPtr download(const Resident&, const ValueType&) { throw InternalError("mlx: no MLX backend in this build"); }

std::shared_ptr<const Program> compile(std::shared_ptr<const Graph>) {
  throw UnsupportedOperation("device='mlx': " + unavailable_reason(), "jit", "mlx");
}

}  // namespace qb::mlxb
#endif
