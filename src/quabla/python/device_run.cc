// Running a compiled graph on device arrays: the one place that checks where each argument
// lives, takes its device buffer, and wraps the results as device arrays. Used by jitted
// programs (quabla._core.Program) and by eager transforms of device arrays (Graph.call).
#include "quabla/python/device_run.h"

#include "quabla/ir/errors.h"

namespace qb::py {

namespace {

void check_count(const Graph& g, std::size_t n) {
  if (n != g.params.size()) {
    throw TypeError("compiled program expects " + std::to_string(g.params.size()) + " array arguments, got " +
                    std::to_string(n));
  }
}

void check_type(const ValueType& want, const ValueType& got, std::size_t i) {
  if (got.dtype != want.dtype || got.shape != want.shape) {
    throw TypeError("compiled program argument " + std::to_string(i) + " must be " + want.str() + ", got " + got.str());
  }
}

// A host argument beside device arrays: an error, or (upload) a constant copied there.
const Array* host_argument(nb::handle h, std::size_t i, const std::string& where, bool upload, const char* how) {
  if (!upload || !nb::isinstance<Array>(h)) {
    throw ValueError("argument " + std::to_string(i) + " is a host array but other arguments are on " + where +
                     "; arrays of one call must be on one device: move it with " + how);
  }
  const Array& a = nb::cast<const Array&>(h);
  if (a.is_tracer()) {
    throw TypeError("a concrete array on " + where + " met a traced value; pass device arrays as arguments of the "
                    "jitted or transformed function instead of closing over them");
  }
  return &a;
}

}  // namespace

nb::list run_cuda_handles(const cuda::Program& p, const Graph& g, const std::vector<nb::handle>& hs, bool upload) {
  check_count(g, hs.size());
  const std::string here = p.device().description();
  std::vector<cuda::DeviceBufferPtr> bufs;
  int ordinal = 0;
  bool emulated = false;
  for (nb::handle h : hs) {
    if (!is_device_array(h)) continue;
    const DeviceArray& d = nb::cast<const DeviceArray&>(h);
    ordinal = d.ordinal;
    emulated = d.emulated;
  }
  for (std::size_t i = 0; i < hs.size(); ++i) {
    const ValueType& t = g.type(g.params[i]);
    if (!is_device_array(hs[i])) {
      const Array* a = host_argument(hs[i], i, here, upload, "qb.device_put(x, 'cuda:N')");
      check_type(t, a->type, i);
      bufs.push_back(to_device(*a, ordinal, emulated).buffer);
      continue;
    }
    const DeviceArray& d = nb::cast<const DeviceArray&>(hs[i]);
    if (d.mlx) reject_device_array(hs[i], "calling a program compiled for CUDA");
    if (&d.device() != &p.device()) {
      throw ValueError("argument " + std::to_string(i) + " is on " + d.device().description() +
                       " but the program runs on " + here + "; move it with qb.device_put");
    }
    check_type(t, d.type, i);
    bufs.push_back(d.buffer);
  }
  auto results = p.run(std::move(bufs));
  nb::list out;
  for (std::size_t j = 0; j < results.size(); ++j) {
    DeviceArray d;
    d.buffer = std::move(results[j]);
    d.type = g.type(g.results[j]);
    d.type.weak = false;
    d.ordinal = ordinal;
    d.emulated = emulated;
    out.append(nb::cast(std::move(d)));
  }
  return out;
}

nb::list run_mlx_handles(const mlxb::Program& p, const Graph& g, const std::vector<nb::handle>& hs, bool upload) {
  check_count(g, hs.size());
  std::vector<mlxb::ResidentPtr> in;
  for (std::size_t i = 0; i < hs.size(); ++i) {
    const ValueType& t = g.type(g.params[i]);
    if (!is_device_array(hs[i]) || !nb::cast<const DeviceArray&>(hs[i]).mlx) {
      if (is_device_array(hs[i])) {
        throw ValueError("argument " + std::to_string(i) + " is on " + nb::cast<const DeviceArray&>(hs[i]).device_name() +
                         " but other arguments are MLX arrays; arrays of one call must be on one device: move it "
                         "with qb.device_put(x, 'mlx')");
      }
      const Array* a = host_argument(hs[i], i, "mlx", upload, "qb.device_put(x, 'mlx')");
      check_type(t, a->type, i);
      in.push_back(to_mlx(*a).mlx);
      continue;
    }
    const DeviceArray& d = nb::cast<const DeviceArray&>(hs[i]);
    check_type(t, d.type, i);
    in.push_back(d.mlx);
  }
  nb::list out;
  auto res = p.run_resident(in);
  for (std::size_t j = 0; j < res.size(); ++j) {
    DeviceArray d;
    d.mlx = std::move(res[j]);
    d.type = g.type(g.results[j]);
    d.type.weak = false;
    out.append(nb::cast(std::move(d)));
  }
  return out;
}

}  // namespace qb::py
