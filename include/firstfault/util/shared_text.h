#pragma once
// An immutable piece of text that copies share: the events of one log line (a line that five
// patterns match is stored once, not five times) hold one block between them. One allocation,
// one pointer per holder (a std::string is four words and a block of its own).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace firstfault {

// What glibc's malloc keeps beside each block on 64-bit: a budget that counts heap bytes (the
// correlator's stored events, a shared text) adds it once per allocation.
inline constexpr size_t kMallocBlockOverhead = 16;

class SharedText {
 public:
  SharedText() = default;
  explicit SharedText(std::string_view text);
  SharedText(const SharedText& other) noexcept : block_(other.block_) { retain(); }
  SharedText(SharedText&& other) noexcept : block_(other.block_) { other.block_ = nullptr; }
  SharedText& operator=(const SharedText& other) noexcept;
  SharedText& operator=(SharedText&& other) noexcept;
  ~SharedText() { release(); }

  std::string_view view() const { return block_ ? std::string_view(block_->data, block_->size) : std::string_view(); }
  operator std::string_view() const { return view(); }  // NOLINT: reads as the text it holds
  std::string str() const { return std::string(view()); }
  size_t size() const { return block_ ? block_->size : 0; }
  bool empty() const { return size() == 0; }
  bool operator==(std::string_view other) const { return view() == other; }

  // What the block costs the heap (its bytes and malloc's overhead), or 0 when another holder
  // has been charged for it already: a budget counts a shared line once.
  size_t charge_once();

 private:
  struct Block {
    std::atomic<uint32_t> refs;
    uint32_t size;
    bool charged;
    char data[1];
  };
  void retain() noexcept {
    if (block_) block_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() noexcept;
  Block* block_ = nullptr;
};

}  // namespace firstfault
