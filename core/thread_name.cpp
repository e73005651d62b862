#include "core/thread_name.hpp"

#include <pthread.h>

#include <algorithm>
#include <array>

namespace tenure {

void name_this_thread(std::string_view name) {
  std::array<char, 16> text{};
  name.copy(text.data(), std::min(name.size(), text.size() - 1));
  // Best effort: a thread without its name works the same.
  (void)::pthread_setname_np(::pthread_self(), text.data());
}

}  // namespace tenure
