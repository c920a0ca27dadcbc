// quabla._core.DeviceArray: an array in a CUDA device's memory (qb.device_put, results of
// jitted programs called on device arrays). It holds its device buffer and type only; every
// computation on it runs in a program compiled for its device, and a host copy is explicit
// (to_host, NumPy conversion, tolist, item, printing).
#pragma once
#include <string>

#include "quabla/api/array.h"
#include "quabla/backends/cuda/device.h"
#include "quabla/backends/mlx/program.h"
#include "quabla/python/bindings.h"

namespace qb::py {

// On a CUDA device (buffer set) or held by MLX (mlx set).
struct DeviceArray {
  cuda::DeviceBufferPtr buffer;
  mlxb::ResidentPtr mlx;
  ValueType type;
  int ordinal = 0;
  bool emulated = false;

  std::string device_name() const { return mlx ? "mlx" : "cuda:" + std::to_string(ordinal); }
  cuda::Device& device() const { return cuda::device(ordinal, emulated); }
};

Array to_host(const DeviceArray& d);
DeviceArray to_device(const Array& a, int ordinal, bool emulated);
DeviceArray to_mlx(const Array& a);
bool is_device_array(nb::handle h);
// Throws DeviceOperand, or a plain TypeError while tracing (a concrete device array cannot
// be closed over by a traced function: it is passed as an argument instead).
[[noreturn]] void reject_device_array(nb::handle h, const char* where);

}  // namespace qb::py
