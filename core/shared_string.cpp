#include "core/shared_string.hpp"

#include <cstring>
#include <new>

namespace tenure {

SharedString::SharedString(std::string_view text) {
  if (text.empty()) return;
  void* memory = ::operator new(sizeof(Block) + text.size());
  block_ = new (memory) Block{{1}, static_cast<std::uint32_t>(text.size())};
  std::memcpy(block_->text(), text.data(), text.size());
}

void SharedString::release() noexcept {
  // The last holder's release must see every earlier holder's reads done (acq_rel), as
  // std::shared_ptr's count does.
  if (block_ && block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    block_->~Block();
    ::operator delete(block_);
  }
}

}  // namespace tenure
