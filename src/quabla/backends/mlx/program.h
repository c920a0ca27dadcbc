// The MLX backend: a compiled Quabla program (after our transforms and simplification)
// lowered to an MLX graph through MLX's C++ API (mlx::core) and run by MLX: on Apple
// silicon on its GPU, on Linux on MLX's CPU build (pip install mlx[cpu]). Built when the mlx
// package is found at build time; otherwise available() is false and compile() raises.
// This header stays free of MLX's headers.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "quabla/ir/graph.h"
#include "quabla/runtime/buffer.h"

namespace qb::mlxb {

bool available();
// One sentence saying why not (empty when available).
std::string unavailable_reason();
// MLX's version ("0.32.4"), or empty.
std::string version();

// An array held by MLX (an evaluated mlx::core::array), opaque here.
class Resident {
 public:
  virtual ~Resident() = default;
};
using ResidentPtr = std::shared_ptr<const Resident>;

// Host data into MLX (a copy MLX owns) and back.
ResidentPtr upload(const BufferPtr& data, const ValueType& type);
BufferPtr download(const Resident& r, const ValueType& type);

class Program {
 public:
  virtual ~Program() = default;
  // Host buffers in (one per parameter), host buffers out (one per result).
  virtual std::vector<BufferPtr> run_host(std::span<const BufferPtr> args) const = 0;
  // MLX arrays in and out: nothing is copied between steps of a training loop.
  virtual std::vector<ResidentPtr> run_resident(std::span<const ResidentPtr> args) const = 0;
  // True when the whole program runs as one mlx::core::compile'd function (no regions).
  virtual bool compiled() const = 0;
};

// Throws UnsupportedOperation (device "mlx") for an op MLX cannot run, when called.
std::shared_ptr<const Program> compile(std::shared_ptr<const Graph> graph);

}  // namespace qb::mlxb
