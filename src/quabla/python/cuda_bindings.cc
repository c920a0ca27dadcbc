// The device backends' module functions: CUDA availability, library directories, NVRTC
// compile checks, device arrays; MLX availability.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "quabla/api/trace.h"
#include "quabla/backends/cuda/device.h"
#include "quabla/backends/cuda/loader.h"
#include "quabla/backends/cuda/lowering.h"
#include "quabla/backends/cuda/nvrtc.h"
#include "quabla/backends/mlx/program.h"
#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/python/device_array.h"
#include "quabla/python/dtype_object.h"

namespace qb::py {

Array to_host(const DeviceArray& d) {
  if (d.mlx) {
    Array a;
    a.storage = mlxb::download(*d.mlx, d.type);
    a.type = d.type;
    return a;
  }
  Array a = Array::empty(d.type.dtype, d.type.shape);
  d.device().download(a.storage->data(), d.buffer->ptr, d.buffer->bytes);
  return a;
}

namespace {
void reject_complex_on_mlx(const Array& a) {
  if (is_complex(a.dtype())) {
    throw TypeError("qb.device_put: complex arrays (" + std::string(dtype_name(a.dtype())) +
                    ") are not supported on MLX yet (the CPU and CUDA backends run them); keep them on the "
                    "host, or move the real and imaginary parts (x.real, x.imag)");
  }
  if (is_narrow_int(a.dtype())) {
    throw TypeError("qb.device_put: " + std::string(dtype_name(a.dtype())) +
                    " arrays are not supported on MLX yet (the CPU and CUDA backends run them); convert with "
                    ".astype(qb.int32) first, or keep them on the host");
  }
}
}  // namespace

DeviceArray to_device(const Array& a, int ordinal, bool emulated) {
  a.require_concrete("qb.device_put");
  DeviceArray d;
  d.type = a.type;
  d.type.weak = false;
  d.ordinal = ordinal;
  d.emulated = emulated;
  const std::size_t bytes = static_cast<std::size_t>(a.size()) * itemsize(a.dtype());
  d.buffer = d.device().allocate(bytes);
  d.device().upload(d.buffer->ptr, a.data(), bytes);
  return d;
}

DeviceArray to_mlx(const Array& a) {
  a.require_concrete("qb.device_put");
  reject_complex_on_mlx(a);
  DeviceArray d;
  d.type = a.type;
  d.type.weak = false;
  d.mlx = mlxb::upload(a.storage, d.type);
  return d;
}

bool is_device_array(nb::handle h) { return nb::isinstance<DeviceArray>(h); }

void reject_device_array(nb::handle h, const char* where) {
  const DeviceArray& d = nb::cast<const DeviceArray&>(h);
  if (innermost_open_trace()) {
    throw TypeError(std::string(where) + ": got a concrete array on " + d.device_name() +
                    " inside a traced function; pass it as an argument of the jitted or transformed "
                    "function instead of closing over it");
  }
  throw DeviceOperand(std::string(where) + ": got an array on " + d.device_name() +
                      " where host arrays are expected; arrays are not copied implicitly: copy it back with "
                      "x.to_host(), or put the others on its device with qb.device_put(x, '" + d.device_name() + "')");
}

nb::object run_on_device(const char* name, nb::tuple args) {
  return nb::module_::import_("quabla._device_eager").attr("run")(name, args);
}

void bind_cuda(nb::module_& m) {
  nb::class_<DeviceArray>(m, "DeviceArray")
      .def_prop_ro("shape", [](const DeviceArray& d) {
        nb::list l;
        for (auto e : d.type.shape) l.append(e);
        return nb::tuple(l);
      })
      .def_prop_ro("dtype", [](const DeviceArray& d) { return DTypeObject{d.type.dtype}; })
      .def_prop_ro("ndim", [](const DeviceArray& d) { return d.type.shape.size(); })
      .def_prop_ro("size", [](const DeviceArray& d) { return num_elements(d.type.shape); })
      .def_prop_ro("device", &DeviceArray::device_name)
      .def_prop_ro("_emulated", [](const DeviceArray& d) { return d.emulated; })
      .def("to_host", &to_host, "A host copy (a qb.Array).")
      .def("__len__", [](const DeviceArray& d) -> std::int64_t {
        if (d.type.shape.empty()) throw TypeError("len() of a 0-d array");
        return d.type.shape[0];
      });
  m.def("device_put", [](nb::handle x, int ordinal, bool emulated) {
    if (is_device_array(x)) {
      const DeviceArray& d = nb::cast<const DeviceArray&>(x);
      if (!d.mlx && d.ordinal == ordinal && d.emulated == emulated) return d;
      return to_device(to_host(d), ordinal, emulated);  // device to device, through the host
    }
    return to_device(to_array(x), ordinal, emulated);
  }, nb::arg("x"), nb::arg("ordinal"), nb::arg("emulated") = false);
  m.def("mlx_put", [](nb::handle x) {
    if (is_device_array(x)) {
      const DeviceArray& d = nb::cast<const DeviceArray&>(x);
      if (d.mlx) return d;
      return to_mlx(to_host(d));
    }
    return to_mlx(to_array(x));
  }, nb::arg("x"));
  m.def("cuda_set_library_dirs", [](std::vector<std::string> dirs) { cuda::set_library_dirs(std::move(dirs)); },
        nb::arg("dirs"));
  m.def("cuda_info", [] {
    nb::dict d;
    d["gpu_count"] = cuda::gpu_count();
    d["reason"] = cuda::gpu_unavailable_reason();
    std::string why;
    const std::string v = cuda::nvrtc_version(&why);
    d["nvrtc_version"] = v;
    d["nvrtc_reason"] = why;
    nb::list names;
    for (int i = 0; i < cuda::gpu_count(); ++i) names.append(cuda::device(i, false).description());
    d["devices"] = names;
    return d;
  });
  m.def("nvrtc_compile", [](const std::string& source, const std::string& arch) { return cuda::compile_ptx(source, arch); },
        nb::arg("source"), nb::arg("arch") = "sm_90");
  m.def("nvrtc_compile_cubin", [](const std::string& source, const std::string& arch) {
    const std::string image = cuda::compile_cubin(source, arch);
    return nb::bytes(image.data(), image.size());
  }, nb::arg("source"), nb::arg("arch") = "sm_90");
  m.def("cuda_device_description", [](int ordinal, bool emulate) { return cuda::device(ordinal, emulate).description(); },
        nb::arg("ordinal"), nb::arg("emulate") = false);
  m.def("nccl_info", [] {
    nb::dict d;
    std::string why;
    const std::string v = cuda::nccl_version(&why);
    d["version"] = v;
    d["reason"] = why;
    return d;
  });
  m.def("mlx_info", [] {
    nb::dict d;
    d["available"] = mlxb::available();
    d["reason"] = mlxb::unavailable_reason();
    d["version"] = mlxb::version();
    return d;
  });
  m.def("cuda_synchronize", [](int ordinal, bool emulate) { cuda::device(ordinal, emulate).synchronize(); },
        nb::arg("ordinal"), nb::arg("emulate") = false);
  m.def("cuda_release_cached", [](int ordinal, bool emulate) { cuda::device(ordinal, emulate).release_cached(); },
        nb::arg("ordinal"), nb::arg("emulate") = false);
}

}  // namespace qb::py
