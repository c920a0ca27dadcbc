// The instructions of the scalar loop code (scalar_loop.h), shared by the interpreter
// (scalar_loop.cc) and the C emitter (native_loop.cc).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "quabla/backends/cpu/scalar_loop.h"

namespace qb::cpu {

// One instruction kind per (operation, dtype): one dispatch per instruction.
#define QB_FLOAT_KINDS(X, P) X(P##Add) X(P##Sub) X(P##Mul) X(P##Div) X(P##Neg) X(P##Abs) X(P##Sqrt) \
  X(P##Max) X(P##Min) X(P##Pow) X(P##Lt) X(P##Le) X(P##Gt) X(P##Ge) X(P##Eq) X(P##Ne) X(P##Vec) \
  X(P##IsNan) X(P##IsInf) X(P##IsFinite)
#define QB_INT_KINDS(X, P) X(P##Add) X(P##Sub) X(P##Mul) X(P##Max) X(P##Min) X(P##Lt) X(P##Le) X(P##Gt) \
  X(P##Ge) X(P##Eq) X(P##Ne)
// Exact conversions (static_cast, as the convert kernel): bool and integers to anything but
// float -> int (which saturates in the kernel: a kernel call), and anything to bool.
#define QB_CVT_KINDS(X) X(BoolToI32) X(BoolToI64) X(BoolToF32) X(BoolToF64) X(I32ToI64) X(I64ToI32) \
  X(I32ToF32) X(I32ToF64) X(I64ToF32) X(I64ToF64) X(I32ToBool) X(I64ToBool) X(F32ToBool) X(F64ToBool)
#define QB_KINDS(X) QB_FLOAT_KINDS(X, F64) QB_FLOAT_KINDS(X, F32) QB_INT_KINDS(X, I64) QB_INT_KINDS(X, I32) \
  X(BoolNot) X(BoolAnd) X(BoolOr) X(Select) X(F64ToF32) X(F32ToF64) QB_CVT_KINDS(X) X(Call) X(End)
#define QB_ENUM(k) k,
enum class ScalarBody::Kind : std::uint8_t { QB_KINDS(QB_ENUM) };
#undef QB_ENUM

struct ScalarBody::Instr {
  Kind kind;
  Op op;  // the transcendental function of F64Vec / F32Vec
  std::uint32_t d, a, b, c;  // destination and operand registers (Call: a is the call index)
};

// An op run by its kernel: operands gathered from registers into scratch, outputs scattered
// back.
// A large operand or output has no registers (empty in_regs / out_regs entry): its offset
// is its own buffer in scratch, read or written in place.
struct ScalarBody::KernelCall {
  const Node* node;
  std::vector<std::vector<std::uint32_t>> in_regs, out_regs;
  std::vector<std::size_t> in_item, out_item, in_offset, out_offset;
  std::shared_ptr<const Nested> nested;  // a region op: its regions' scalar forms, else null
};

struct ScalarBody::Nested {
  Op op;
  std::size_t num_consts = 0, num_carry = 0;  // While and Scan
  std::int64_t length = 0, start = 0;         // Scan
  bool reverse = false;                       // Scan
  // While: condition, body. Cond: the false and the true branch. Scan, custom rules,
  // checkpoint, linear_solve: the (primal) body.
  std::vector<std::shared_ptr<const ScalarBody>> bodies;
  ScalarBody::Moves moves;                    // While and Scan: the body's carries, results to parameters
  std::vector<std::size_t> x_bytes, y_bytes;  // Scan: bytes per step of each x and y
};

struct ScalarBody::NestedState {
  std::vector<State> states;  // one per body
};

}  // namespace qb::cpu
