// Module functions that run on the device of their arguments when given device arrays.
#pragma once
#include <utility>

#include "quabla/python/bindings.h"

namespace qb::py {

// Wraps a binding's function: converting an operand that is a device array throws
// DeviceOperand before anything is computed, and the wrapper hands the same arguments to
// quabla._device_eager, which compiles the function for that device (once per signature).
// Host calls pay nothing for it (a try block). `name` is the function's name in _core.
template <class F, class R, class... A>
auto device_aware(const char* name, F f, R (F::*)(A...) const) {
  return [name, f = std::move(f)](A... args) -> nb::object {
    try {
      return nb::cast(f(args...));
    } catch (const DeviceOperand&) {
      return run_on_device(name, nb::make_tuple(args...));
    }
  };
}
template <class F>
auto device_aware(const char* name, F f) {
  return device_aware(name, std::move(f), &F::operator());
}
template <class R, class... A>
auto device_aware(const char* name, R (*f)(A...)) {
  return device_aware(name, [f](A... args) { return f(args...); });
}

}  // namespace qb::py
