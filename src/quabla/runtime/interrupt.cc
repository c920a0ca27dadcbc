#include "quabla/runtime/interrupt.h"

#include <atomic>

#include "quabla/ir/errors.h"

namespace qb {

namespace {
std::atomic<InterruptCheck> g_check{nullptr};
}  // namespace

void set_interrupt_check(InterruptCheck check) { g_check.store(check); }

void InterruptPoller::check() {
  if (InterruptCheck c = g_check.load(std::memory_order_relaxed); c && c()) throw Interrupted();
}

}  // namespace qb
