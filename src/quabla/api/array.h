// A host array: immutable typed storage plus its dtype and shape. Arrays that differ only in
// shape (reshape views) share one Buffer.
#pragma once
#include <memory>

#include "quabla/ir/graph.h"
#include "quabla/runtime/buffer.h"

namespace qb {

struct Trace;

// A host array, or a tracer: a symbolic value of an open Trace (storage is then null and
// `value` names the value in the trace's graph).
struct Array {
  BufferPtr storage;
  ValueType type;  // weak only for Python scalars converted for one call
  std::shared_ptr<Trace> trace;
  ValueId value = 0;

  bool is_tracer() const { return trace != nullptr; }
  // Throws TracerError naming `what` when this is a tracer (a concrete value is needed).
  void require_concrete(const char* what) const;

  DType dtype() const { return type.dtype; }
  const Shape& shape() const { return type.shape; }
  std::int64_t size() const { return num_elements(type.shape); }
  const std::byte* data() const { return storage->data(); }

  // A new array of uninitialised storage (the caller fills it before sharing it).
  static Array empty(DType dtype, Shape shape);
  static Array scalar(double value, DType dtype, bool weak = false);
};

}  // namespace qb
