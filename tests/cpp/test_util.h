// Helpers shared by the C++ tests: typed buffers in and out, and running a built graph.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "quabla/backends/cpu/executable.h"
#include "quabla/ir/builder.h"
#include "quabla/ir/graph.h"
#include "quabla/runtime/buffer.h"

namespace qb::test {

// A graph as a node's region (regions are shared, immutable graphs).
inline std::shared_ptr<const Graph> shared(Graph g) { return std::make_shared<const Graph>(std::move(g)); }

inline ValueType vt(DType d, Shape s, bool weak = false) { return ValueType{d, std::move(s), weak}; }

// A vector's elements as the byte pointers the CPU kernels take.
template <class T>
const std::byte* bytes(const std::vector<T>& v) {
  return reinterpret_cast<const std::byte*>(v.data());
}
template <class T>
std::byte* bytes(std::vector<T>& v) {
  return reinterpret_cast<std::byte*>(v.data());
}

template <class T>
BufferPtr make_buffer(const std::vector<T>& xs) {
  auto buf = Buffer::allocate(xs.size() * sizeof(T));
  if (!xs.empty()) std::memcpy(buf->data(), xs.data(), xs.size() * sizeof(T));
  return buf;
}

inline BufferPtr make_bool_buffer(const std::vector<bool>& xs) {
  auto buf = Buffer::allocate(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) buf->as<std::uint8_t>()[i] = xs[i] ? 1 : 0;
  return buf;
}

template <class T>
std::vector<T> read_buffer(const BufferPtr& buf, std::int64_t n) {
  std::vector<T> out(static_cast<std::size_t>(n));
  std::memcpy(out.data(), buf->data(), out.size() * sizeof(T));
  return out;
}

// A graph under construction plus its builder; run() verifies, compiles and executes it.
struct Program {
  std::shared_ptr<Graph> graph = std::make_shared<Graph>();
  Builder b{*graph};

  std::vector<BufferPtr> run(std::vector<ValueId> results, const std::vector<BufferPtr>& args) {
    b.set_results(std::move(results));
    verify(*graph);
    cpu::Executable exe(graph);
    return exe.run(args);
  }

  std::int64_t size_of(ValueId v) const { return num_elements(graph->type(v).shape); }
};

}  // namespace qb::test
