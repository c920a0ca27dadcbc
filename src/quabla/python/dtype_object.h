// The Python-visible dtype objects qb.float32, qb.float64, qb.bool_.
#pragma once
#include "quabla/ir/dtype.h"

namespace qb::py {

struct DTypeObject {
  DType dtype;
};

}  // namespace qb::py
