// Operands whose shapes an operation cannot combine (matmul's inner axes, broadcasting,
// reshape sizes, concatenation): a ValueError, as NumPy raises, that Python also sees as
// the TypeError JAX raises for these (quabla.ShapeError has both bases), so code written
// against either catches it. Its own header, so the few files that throw it are all that
// depend on it.
#pragma once
#include "quabla/ir/errors.h"

namespace qb {

struct ShapeError : ValueError {
  using ValueError::ValueError;
};

}  // namespace qb
