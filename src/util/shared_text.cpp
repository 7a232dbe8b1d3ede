#include "firstfault/util/shared_text.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace firstfault {

SharedText::SharedText(std::string_view text) {
  if (text.empty()) return;
  // Lines are cut far below 4 GiB before they get here (kMaxLineBytes); the clamp keeps the
  // size field honest all the same.
  size_t n = std::min<size_t>(text.size(), std::numeric_limits<uint32_t>::max());
  void* raw = std::malloc(std::max(sizeof(Block), offsetof(Block, data) + n));  // the whole Block, even for 1 byte
  if (!raw) throw std::bad_alloc();
  block_ = new (raw) Block{{1}, static_cast<uint32_t>(n), false, {}};
  std::memcpy(block_->data, text.data(), n);
}

SharedText& SharedText::operator=(const SharedText& other) noexcept {
  if (block_ != other.block_) {
    release();
    block_ = other.block_;
    retain();
  }
  return *this;
}

SharedText& SharedText::operator=(SharedText&& other) noexcept {
  if (this != &other) {
    release();
    block_ = other.block_;
    other.block_ = nullptr;
  }
  return *this;
}

void SharedText::release() noexcept {
  if (block_ && block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    block_->~Block();
    std::free(block_);
  }
  block_ = nullptr;
}

size_t SharedText::charge_once() {
  if (!block_ || block_->charged) return 0;
  block_->charged = true;
  return offsetof(Block, data) + block_->size + kMallocBlockOverhead;
}

}  // namespace firstfault
