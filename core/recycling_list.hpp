#pragma once
// A FIFO list whose removed nodes are kept and reused by later insertions, so that a queue that
// fills and drains over and over (a contended key's waiters) allocates only while it grows
// past its largest size so far. A removed element is reset to T{} at once: nothing it owned
// (a callback, a shared name) outlives its removal.
#include <cstddef>
#include <iterator>
#include <list>
#include <utility>

namespace tenure {

template <typename T>
class RecyclingList {
 public:
  using iterator = typename std::list<T>::iterator;
  using const_iterator = typename std::list<T>::const_iterator;

  iterator begin() { return live_.begin(); }
  iterator end() { return live_.end(); }
  const_iterator begin() const { return live_.begin(); }
  const_iterator end() const { return live_.end(); }
  T& front() { return live_.front(); }
  bool empty() const { return live_.empty(); }
  std::size_t size() const { return live_.size(); }
  std::size_t spare() const { return spare_.size(); }

  void push_back(T&& value) {
    if (spare_.empty()) {
      live_.push_back(std::move(value));
      return;
    }
    live_.splice(live_.end(), spare_, spare_.begin());
    live_.back() = std::move(value);
  }

  // Returns the element after the one removed.
  iterator erase(iterator it) {
    iterator next = std::next(it);
    *it = T{};
    spare_.splice(spare_.end(), live_, it);
    return next;
  }

  void pop_front() { erase(live_.begin()); }

  template <typename Predicate>
  void erase_if(Predicate remove) {
    for (auto it = live_.begin(); it != live_.end();) it = remove(*it) ? erase(it) : std::next(it);
  }

  void clear() {
    for (T& value : live_) value = T{};
    spare_.splice(spare_.end(), live_);
  }

  // Frees the spare nodes beyond `keep`.
  void trim(std::size_t keep) {
    while (spare_.size() > keep) spare_.pop_back();
  }

 private:
  std::list<T> live_;
  std::list<T> spare_;
};

}  // namespace tenure
