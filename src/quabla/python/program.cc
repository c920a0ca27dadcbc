// Tracing and compiled programs: quabla._core.Trace records a function's operations on
// tracer arrays; finish() simplifies the graph and compiles it for the CPU.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "quabla/api/eager.h"
#include "quabla/api/trace.h"
#include "quabla/backends/cpu/executable.h"
#include "quabla/backends/cuda/program.h"
#include "quabla/backends/mlx/program.h"
#include "quabla/ir/errors.h"
#include "quabla/python/bindings.h"
#include "quabla/python/device_array.h"
#include "quabla/python/device_run.h"
#include "quabla/transforms/simplify.h"

namespace qb::py {

namespace {

// The signature key of a device array: 'D', its device, dtype and shape (host arrays have no
// 'D'). The device is part of it: jit without device= compiles for where its arguments are.
void append_device_key(const DeviceArray& d, std::string& key) {
  key += 'D';
  key += d.mlx ? std::string("m") : std::to_string(d.ordinal) + (d.emulated ? "e" : "");
  key += ':';
  key += dtype_short_name(d.type.dtype);
  for (auto e : d.type.shape) {
    key += ',';
    key += std::to_string(e);
  }
  key += ';';
}

struct Program {
  std::shared_ptr<const Graph> traced;     // as recorded
  std::shared_ptr<cpu::Executable> exe;    // simplified and planned
  std::shared_ptr<cuda::Program> cuda;     // the same graph on a CUDA device, when compiled for one
  std::shared_ptr<const mlxb::Program> mlx;  // or lowered to MLX

  std::vector<Array> run(const std::vector<Array>& args) const {
    const Graph& g = exe->graph();
    if (args.size() != g.params.size()) {
      throw TypeError("compiled program expects " + std::to_string(g.params.size()) + " array arguments, got " +
                      std::to_string(args.size()));
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      args[i].require_concrete("calling a compiled program");
      const ValueType& t = g.type(g.params[i]);
      if (args[i].dtype() != t.dtype || args[i].shape() != t.shape) {
        throw TypeError("compiled program argument " + std::to_string(i) + " must be " + t.str() + ", got " +
                        args[i].type.str());
      }
    }
    if (cuda) return run_cuda(args);
    if (mlx) return run_mlx(args);
    return run_cpu_program(*exe, args);
  }

  // Arguments of any kind: all host arrays run as run() does; device arrays (all on this
  // program's device) run without copies and give device arrays.
  nb::list run_handles(const std::vector<nb::handle>& hs) const {
    bool device = false;
    for (nb::handle h : hs) device = device || is_device_array(h);
    nb::list out;
    if (!device) {
      std::vector<Array> args;
      args.reserve(hs.size());
      for (nb::handle h : hs) args.push_back(nb::cast<Array>(h));
      for (Array& a : run(args)) out.append(nb::cast(std::move(a)));
      return out;
    }
    const Graph& g = exe->graph();
    if (mlx) return run_mlx_handles(*mlx, g, hs, false);
    if (!cuda) {
      for (nb::handle h : hs)
        if (is_device_array(h)) reject_device_array(h, "calling a program compiled for the CPU");
    }
    return run_cuda_handles(*cuda, g, hs, false);
  }

  static std::vector<BufferPtr> storages(const std::vector<Array>& args) {
    std::vector<BufferPtr> bufs;
    bufs.reserve(args.size());
    for (const Array& a : args) bufs.push_back(a.storage);
    return bufs;
  }

  std::vector<Array> run_mlx(const std::vector<Array>& args) const { return wrap(mlx->run_host(storages(args))); }
  std::vector<Array> run_cuda(const std::vector<Array>& args) const { return wrap(cuda->run_host(storages(args))); }

  // Host results as Arrays of the program's result types.
  std::vector<Array> wrap(std::vector<BufferPtr> outs) const {
    const Graph& g = exe->graph();
    std::vector<Array> result;
    for (std::size_t i = 0; i < outs.size(); ++i) {
      Array a;
      a.storage = std::move(outs[i]);
      a.type = g.type(g.results[i]);  // weak where computed from weak values only
      result.push_back(std::move(a));
    }
    return result;
  }

};

}  // namespace

void bind_program(nb::module_& m) {
  // The jit fast path: a string key of the types of a tuple of Arrays (None when any
  // argument is not a concrete Array), so a cached call needs no pytree flattening.
  m.def("array_signature", [](nb::args args) -> nb::object {
    std::string key;
    for (nb::handle h : args) {
      if (is_device_array(h)) {
        append_device_key(nb::cast<const DeviceArray&>(h), key);
        continue;
      }
      if (!nb::isinstance<Array>(h)) return nb::none();
      const Array& a = nb::cast<const Array&>(h);
      if (a.is_tracer()) return nb::none();
      key += dtype_short_name(a.dtype());
      for (auto d : a.shape()) {
        key += ',';
        key += std::to_string(d);
      }
      key += a.type.weak ? "~;" : ";";
    }
    return nb::str(key.c_str(), key.size());
  });

  nb::class_<Program>(m, "Program")
      .def("run", [](const Program& p, nb::handle args) {
        std::vector<nb::handle> hs;
        for (nb::handle h : nb::borrow<nb::sequence>(args)) hs.push_back(h);
        return p.run_handles(hs);
      }, nb::arg("args"))
      .def("run_args", [](const Program& p, nb::args args) {
        bool plain = true;
        for (nb::handle h : args) plain = plain && nb::isinstance<Array>(h);
        if (plain) {  // the jit fast path: host arrays only
          std::vector<Array> in;
          in.reserve(args.size());
          for (nb::handle h : args) in.push_back(nb::cast<const Array&>(h));
          return nb::cast(p.run(in));
        }
        std::vector<nb::handle> hs(args.begin(), args.end());
        return nb::object(p.run_handles(hs));
      })
      .def("as_text", [](const Program& p) { return print(p.exe->graph()); })
      .def_prop_ro("device", [](const Program& p) {
        return p.cuda ? p.cuda->device().description() : p.mlx ? std::string("mlx") : std::string("cpu");
      })
      .def_prop_ro("mlx_compiled", [](const Program& p) { return p.mlx && p.mlx->compiled(); })
      .def("cuda_source", [](const Program& p) {
        if (!p.cuda) throw ValueError("cuda_source: this program was compiled for the CPU");
        return p.cuda->cuda_source();
      })
      .def("plan_text", [](const Program& p) { return p.exe->plan_text(); })
      .def("traced_text", [](const Program& p) { return print(*p.traced); })
      .def("stats", [](const Program& p) {
        const auto& s = p.exe->stats();
        nb::dict d;
        d["kernels"] = s.kernels;
        d["buffers"] = s.buffers;
        d["peak_bytes"] = s.peak_bytes;
        d["matmul_flops"] = s.matmul_flops;
        d["loops"] = s.loops;
        d["scalar_loops"] = s.scalar_loops;
        d["nodes"] = p.exe->graph().nodes.size();
        if (p.cuda) {
          d["kernels"] = p.cuda->launches();
          d["generated_kernels"] = p.cuda->plan().kernels.size();
          d["fused_kernels"] = p.cuda->plan().fused_kernels;
          d["loop_kernels"] = p.cuda->plan().loop_kernels;
        }
        return d;
      });

  nb::class_<Trace>(m, "Trace")
      .def(nb::new_([] { return std::make_shared<Trace>(); }))
      .def("parameter", [](Trace& t, nb::handle shape, nb::handle dtype, bool weak) {
        auto d = parse_dtype(dtype);
        if (!d) throw TypeError("Trace.parameter: a dtype is required");
        return t.parameter(ValueType{*d, parse_shape(shape, "Trace.parameter"), weak});
      }, nb::arg("shape"), nb::arg("dtype"), nb::arg("weak") = false)
      .def("text", [](const Trace& t) { return print(t.graph); })
      .def_prop_ro("open", [](const Trace& t) { return t.open; })
      // How many tracers of enclosing traces the function read (closures over an outer
      // transform's values); a program with any cannot run on its own.
      .def_prop_ro("num_captured", [](const Trace& t) { return t.captured.size(); })
      // cuda_ordinal >= 0 compiles for that CUDA device (the host emulator when
      // cuda_emulate) as well as for the CPU; run() then runs on the device.
      .def("finish", [](Trace& t, nb::handle results, int cuda_ordinal, bool cuda_emulate, bool mlx) {
        std::vector<Array> outs;
        for (nb::handle h : nb::borrow<nb::sequence>(results)) outs.push_back(to_operand(h));
        auto traced = t.finish(outs);
        auto simplified = std::make_shared<const Graph>(simplify(*traced));
        Program p{traced, std::make_shared<cpu::Executable>(simplified), nullptr, nullptr};
        if (cuda_ordinal >= 0) p.cuda = std::make_shared<cuda::Program>(simplified, cuda::device(cuda_ordinal, cuda_emulate));
        if (mlx) p.mlx = mlxb::compile(simplified);
        return p;
      }, nb::arg("results"), nb::arg("cuda_ordinal") = -1, nb::arg("cuda_emulate") = false, nb::arg("mlx") = false)
      .def("stage_everything", [](const std::shared_ptr<Trace>& t) { stage_everything_in(t); },
           "Record every operation run while this trace is innermost (a cond branch).")
      .def("close", [](Trace& t) { t.open = false; });
}

}  // namespace qb::py

namespace qb::py {

namespace {

// Appends a key for `obj`'s structure and array types, and its arrays, for trees of dicts
// (str keys), lists, tuples, None and concrete Arrays; false for anything else.
bool flatten_arrays(nb::handle obj, std::string& key, nb::list& leaves, int depth) {
  if (depth > 64) return false;
  PyObject* o = obj.ptr();
  if (is_device_array(obj)) {
    append_device_key(nb::cast<const DeviceArray&>(obj), key);
    leaves.append(obj);
    return true;
  }
  if (nb::isinstance<Array>(obj)) {
    const Array& a = nb::cast<const Array&>(obj);
    if (a.is_tracer()) return false;
    key += 'A';
    key += dtype_short_name(a.dtype());
    for (auto d : a.shape()) {
      key += ',';
      key += std::to_string(d);
    }
    key += a.type.weak ? "~;" : ";";
    leaves.append(obj);
    return true;
  }
  if (o == Py_None) {
    key += 'N';
    return true;
  }
  if (PyDict_CheckExact(o)) {
    nb::list keys = nb::steal<nb::list>(PyDict_Keys(o));
    for (nb::handle k : keys)
      if (!PyUnicode_CheckExact(k.ptr())) return false;
    if (PyList_Sort(keys.ptr()) != 0) {
      PyErr_Clear();
      return false;
    }
    key += '{';
    for (nb::handle k : keys) {
      const std::string name = nb::cast<std::string>(k);
      key += std::to_string(name.size());
      key += ':';
      key += name;
      if (!flatten_arrays(nb::handle(PyDict_GetItem(o, k.ptr())), key, leaves, depth + 1)) return false;
    }
    key += '}';
    return true;
  }
  const bool list = PyList_CheckExact(o), tuple = PyTuple_CheckExact(o);
  if (list || tuple) {
    key += list ? '[' : '(';
    const Py_ssize_t n = list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i);
      if (!flatten_arrays(nb::handle(item), key, leaves, depth + 1)) return false;
    }
    key += list ? ']' : ')';
    return true;
  }
  return false;
}

}  // namespace

void bind_flatten(nb::module_& m) {
  // jit's fast path: (key, leaves) for pytrees of plain containers and concrete arrays, in
  // qb.tree.flatten's leaf order (dict keys sorted), or None when the tree holds anything
  // else (the Python path handles it).
  m.def("flatten_arrays", [](nb::handle obj) -> nb::object {
    std::string key;
    nb::list leaves;
    if (!flatten_arrays(obj, key, leaves, 0)) return nb::none();
    return nb::make_tuple(nb::str(key.c_str(), key.size()), leaves);
  });
}

}  // namespace qb::py
