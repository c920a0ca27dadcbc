// Narrow-integer lowering: rewrites a program so that it computes in no narrow integer
// dtype (int8, int16, uint8, uint16, uint32), before a backend plans it. Every narrow
// value becomes a value of its wide dtype (int32; int64 for uint32, whose values int32
// cannot hold) holding the same number. Results of operations that can leave the narrow
// range (add, mul, neg, <<, sums, ...) are congruent to the narrow results modulo 2^bits,
// and stay so through further ring and bitwise operations and data movement; where a
// reader needs the value itself (a comparison, division, a right shift, a conversion, a
// loop's carry) it is wrapped first: converted to the narrow dtype and back, the reduction
// modulo 2^bits. Comparisons, division, shifts right and order are then exact in the wide
// dtype, because its values are the narrow ones zero- or sign-extended. The program's
// results are converted to their narrow dtypes, which wraps them too. So a chain such as
// (x * 3 + 7) ^ y computes in int32 with no wrap at all. No kernel, fusion rule or device generator
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
