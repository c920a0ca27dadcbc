// The CUDA backend's module functions: availability, library directories, NVRTC compile
// checks and the generated source of a graph (for tests and for users reading what runs).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "quabla/backends/cuda/device.h"
#include "quabla/backends/cuda/loader.h"
#include "quabla/backends/cuda/lowering.h"
#include "quabla/backends/cuda/nvrtc.h"
#include "quabla/python/bindings.h"

namespace qb::py {

void bind_cuda(nb::module_& m) {
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
  m.def("cuda_device_description", [](int ordinal, bool emulate) { return cuda::device(ordinal, emulate).description(); },
        nb::arg("ordinal"), nb::arg("emulate") = false);
  m.def("cuda_release_cached", [](int ordinal, bool emulate) { cuda::device(ordinal, emulate).release_cached(); },
        nb::arg("ordinal"), nb::arg("emulate") = false);
}

}  // namespace qb::py
