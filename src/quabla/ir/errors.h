// Typed errors of the core. The Python bindings translate each to the documented Python
// exception (ValueError, TypeError, IndexError, ...); no C++ exception reaches a user raw.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

namespace qb {

// Bad values of otherwise well-typed arguments: shape mismatch, dtype promotion refused,
// bad axis, zero extent. Python: ValueError.
struct ValueError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// An argument of the wrong kind: bool arithmetic, unsupported Python object. Python: TypeError.
struct TypeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Index out of range. Python: IndexError.
struct IndexError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A traced value used where a concrete one is needed. Python: quabla.TracerError
// (a QuablaError and a TypeError).
struct TracerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The user interrupted a long-running program (Ctrl-C). Python: KeyboardInterrupt.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};
// A backend cannot run an op of the program (raised when it compiles). Python:
// quabla.UnsupportedOperationError with .op and .device.
struct UnsupportedOperation : std::runtime_error {
  UnsupportedOperation(const std::string& message, std::string op_name, std::string device_name)
      : std::runtime_error(message), op(std::move(op_name)), device(std::move(device_name)) {}
  std::string op, device;
};
// A device allocation that does not fit (the message names the bytes requested and held).
// Python: MemoryError.
struct DeviceMemoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A device or driver call that failed (a lost device, a launch error). Python: RuntimeError.
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A broken internal invariant (a bug in Quabla, not in the user's program). Python: QuablaError.
struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

}  // namespace qb
