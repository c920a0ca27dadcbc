// Narrow-integer lowering: rewrites a program so that it computes in no narrow integer
// dtype (int8, int16, uint8, uint16, uint32), before a backend plans it. Every narrow
// value becomes a value of its wide dtype (int32; int64 for uint32, whose values int32
// cannot hold) holding the same number, and every operation that can leave the narrow
// range (add, mul, neg, shifts, sums, ...) is followed by a wrap, a conversion to the narrow
// dtype and back, which reduces it modulo 2^bits as the narrow arithmetic would. Comparisons,
// division, shifts right and order are then exact in the wide dtype, because its values are
// the narrow ones zero- or sign-extended. So no kernel, fusion rule or device generator
// computes in a narrow dtype: the narrow dtypes remain only in conversions, at the program's
// own parameters and results, and at host calls.
#pragma once
#include <memory>

#include "quabla/ir/graph.h"

namespace qb {

// Whether g (or one of its regions, at any depth) holds a narrow integer value.
bool has_narrow_int(const Graph& g);

// g itself when it holds no narrow integer; otherwise the lowered program. The program's
// parameters and results keep their narrow dtypes (callers pass and receive narrow buffers
// unchanged); a region's body (`boundary_narrow` false) takes and returns wide values.
std::shared_ptr<const Graph> lower_narrow(std::shared_ptr<const Graph> g, bool boundary_narrow = true);

}  // namespace qb
