// A CPU-plan rewrite: an svd whose result is read only through slices of its singular-value
// row (qb.linalg.svd(..., compute_uv=False), svdvals, norm(x, 2), cond, matrix_rank) gets
// attrs.mode bit kSvdValuesOnly, and its kernel asks LAPACK for the singular values alone
// (gesdd with jobz='N': about half the time of computing U and V too) and writes zeros in
// the rows nothing reads. Only the CPU executable's own graph is rewritten; transforms (the
// svd derivative needs U and V) and the other backends never see the bit.
#pragma once
#include <cstdint>
#include <memory>

#include "quabla/ir/graph.h"

namespace qb::cpu {

inline constexpr std::int64_t kSvdValuesOnly = 16;

// `g` itself when nothing matches.
std::shared_ptr<const Graph> fold_svd_values_only(std::shared_ptr<const Graph> g);

}  // namespace qb::cpu
