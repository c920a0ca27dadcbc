// Complex lowering: rewrites a program so that it holds no complex value (c64, c128), before
// a backend plans it. Every complex value becomes its real and imaginary parts (values of
// the part dtype and the same shape), so elementwise complex arithmetic is elementwise real
// arithmetic that the backends already fuse, and no kernel, fusion rule or device code
// generator needs to know about complex numbers. Where a complex value crosses a boundary
// inside the program (a region's operands and results, fft's operand and result), it is in
// its planar form [2, ...] (real part, then imaginary part, each contiguous); the program's
// own parameters and results are interleaved [..., 2] (byte for byte the complex buffer,
// so callers pass complex buffers unchanged), or planar for a region's body.
#pragma once
#include <memory>

#include "quabla/ir/graph.h"

namespace qb {

// Whether g (or one of its regions, at any depth) holds a complex value.
bool has_complex(const Graph& g);

enum class ComplexInterface { interleaved, planar };

// g itself when it holds no complex value; otherwise the lowered program: parameters and
// results of a complex type become [..., 2] (interleaved) or [2, ...] (planar) of its part
// dtype; regions are lowered too (planar). Throws TypeError for what has no lowering yet (a
// host call on complex values).
std::shared_ptr<const Graph> lower_complex(std::shared_ptr<const Graph> g,
                                           ComplexInterface interface = ComplexInterface::interleaved);

}  // namespace qb
