// Long compiled loops poll for a user interrupt (Ctrl-C) between steps. The Python module
// installs the check (Python's signal check, under the GIL the running program holds); with
// none installed (the C++ tests) polling does nothing.
#pragma once
#include <cstdint>

namespace qb {

using InterruptCheck = bool (*)();  // true: the user asked to stop
void set_interrupt_check(InterruptCheck check);

// Calls the installed check every `period` polls and throws qb::Interrupted when it reports
// an interrupt. One per loop; a poll costs an increment and a compare.
class InterruptPoller {
 public:
  explicit InterruptPoller(std::uint32_t period) : period_(period) {}
  void poll() {
    if (++count_ >= period_) {
      count_ = 0;
      check();
    }
  }

 private:
  static void check();
  std::uint32_t period_, count_ = 0;
};

}  // namespace qb
