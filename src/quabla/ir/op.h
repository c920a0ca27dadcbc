// The op enumeration generated from ops.def, and per-op facts shared by every layer.
#pragma once
#include <cstdint>
#include <string_view>

namespace qb {

enum class Op : std::uint8_t {
#define QB_OP(name, text, arity, attrs) name,
#include "quabla/ir/ops.def"
#undef QB_OP
};

enum class AttrKind : std::uint8_t { None, ParamIndex, Literal, DType, Shape, Broadcast, Perm, Axes, Slice, Axis, Cumsum, Gather, Take, Scatter, Sort, Pad, Cond, Scan, While, Custom, TriSolve, Mode, HostCall, NamedAxis };

// named_axis's collectives (attrs.mode); see ops.def.
enum NamedAxisKind : std::int64_t {
  kAxisSum = 0, kAxisMax = 1, kAxisMin = 2, kAxisGather = 3, kAxisIndex = 4, kAxisPermute = 5
};

// The mode bit of a linear algebra factorization's lowered complex form (ops.def).
inline constexpr std::int64_t kLinalgPlanar = 8;

// scatter's combining modes (attrs.mode); see ops.def.
enum ScatterMode : std::int64_t { kScatterAdd = 0, kScatterSet = 1, kScatterMul = 2, kScatterMin = 3, kScatterMax = 4 };

std::string_view op_name(Op op);
// Number of operands; -1 for variadic ops.
int op_arity(Op op);
AttrKind op_attr_kind(Op op);

// Families used by passes that treat many ops alike (kernels fuse them, printers format them).
bool is_elementwise(Op op);
// Ops that own region graphs (cond, scan, while).
bool has_regions(Op op);

constexpr int kNumOps = 0
#define QB_OP(name, text, arity, attrs) +1
#include "quabla/ir/ops.def"
#undef QB_OP
    ;

}  // namespace qb
