// A Graph compiled for a CUDA device: the lowered plan (lowering.h), its module loaded on
// the device, and the constants uploaded once. Running it uploads host arguments (or takes
// device buffers), launches the steps in order with buffers released at their last use,
// and returns device buffers (or copies results back to host buffers).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quabla/backends/cuda/device.h"
#include "quabla/backends/cuda/lowering.h"
#include "quabla/runtime/buffer.h"

namespace qb::cuda {

class Program {
 public:
  // Throws UnsupportedOperation for an op the backend cannot run (before anything runs).
  Program(std::shared_ptr<const Graph> graph, Device& device);

  std::vector<DeviceBufferPtr> run(std::vector<DeviceBufferPtr> args) const;
  // Host buffers in, host buffers out (one upload per argument, one download per result).
  std::vector<BufferPtr> run_host(std::span<const BufferPtr> args) const;

  const Plan& plan() const { return plan_; }
  Device& device() const { return *device_; }
  // The generated module as the GPU compiles it (the CUDA target's source).
  std::string cuda_source() const { return module_source(plan_.kernels, Target::Cuda); }
  // Kernel launches and GEMMs per run.
  int launches() const;

 private:
  void run_region(std::size_t step, std::vector<DeviceBufferPtr>& env) const;  // host-driven bodies
  void run_example_while(std::size_t step, std::vector<DeviceBufferPtr>& env) const;  // relaunched until done
  void check_arity(std::size_t n) const;  // TypeError unless n arguments were given

  Plan plan_;
  Device* device_;
  // Per step of kind Region: its bodies compiled for the same device (cond: false, true;
  // scan: body; while: cond, body; custom rules and checkpoints: the primal body), and for a
  // scan the step indices start + t as float64 values on the device (x slices of the body's
  // index parameter).
  std::vector<std::vector<std::shared_ptr<const Program>>> regions_;
  std::vector<DeviceBufferPtr> scan_index_;
  std::shared_ptr<const Module> module_;
  std::vector<DeviceBufferPtr> constants_;  // by value id (null for non-constants)
  std::vector<DeviceBufferPtr> blobs_;      // the plan's constant index arrays
};

}  // namespace qb::cuda
