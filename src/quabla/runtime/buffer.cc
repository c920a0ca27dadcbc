#include "quabla/runtime/buffer.h"

#include <new>

namespace qb {

void Buffer::AlignedFree::operator()(std::byte* p) const {
  ::operator delete[](p, std::align_val_t{kAlignment});
}

std::shared_ptr<Buffer> Buffer::allocate(std::size_t nbytes) {
  const std::size_t n = nbytes == 0 ? 1 : nbytes;
  auto* p = static_cast<std::byte*>(::operator new[](n, std::align_val_t{kAlignment}));
  return std::shared_ptr<Buffer>(new Buffer(p, nbytes));
}

}  // namespace qb
