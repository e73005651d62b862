#pragma once
// An immutable string shared by reference: an owner's name is stored once per tenure and its
// lease, events, tenure records and replies hold references, not copies. The count is atomic, so
// copies may live on any thread (a shard's lease, an io thread's reply, a watcher's event); the
// bytes never change after construction, so reads need no synchronization. Empty holds nothing.
#include <atomic>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace tenure {

class SharedString {
 public:
  SharedString() noexcept = default;
  // One allocation, unless `text` is empty. Implicit, as std::string's: it is a string value.
  SharedString(std::string_view text);  // NOLINT(google-explicit-constructor)
  SharedString(const char* text) : SharedString(std::string_view(text)) {}         // NOLINT
  SharedString(const std::string& text) : SharedString(std::string_view(text)) {}  // NOLINT

  SharedString(const SharedString& other) noexcept : block_(other.block_) { retain(); }
  SharedString(SharedString&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  SharedString& operator=(const SharedString& other) noexcept {
    SharedString(other).swap(*this);
    return *this;
  }
  SharedString& operator=(SharedString&& other) noexcept {
    SharedString(std::move(other)).swap(*this);
    return *this;
  }
  ~SharedString() { release(); }

  void swap(SharedString& other) noexcept { std::swap(block_, other.block_); }

  std::string_view view() const noexcept {
    return block_ ? std::string_view(block_->text(), block_->size) : std::string_view();
  }
  operator std::string_view() const noexcept { return view(); }  // NOLINT
  const char* data() const noexcept { return view().data(); }
  std::size_t size() const noexcept { return block_ ? block_->size : 0; }
  bool empty() const noexcept { return block_ == nullptr; }
  friend bool operator==(const SharedString& a, std::string_view b) noexcept {
    return a.view() == b;
  }
  // Exact (a template converts nothing), so that clang does not find `a != b` ambiguous with the
  // reversed view comparison, nor `a == "text"` with this one.
  template <std::same_as<SharedString> Other>
  friend bool operator==(const SharedString& a, const Other& b) noexcept {
    return a.block_ == b.block_ || a.view() == b.view();
  }

 private:
  struct Block {
    std::atomic<std::uint32_t> refs;
    std::uint32_t size;
    char* text() noexcept { return reinterpret_cast<char*>(this + 1); }
  };

  void retain() const noexcept {
    if (block_) block_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  void release() noexcept;

  Block* block_ = nullptr;
};

}  // namespace tenure
