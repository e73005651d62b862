#pragma once
// A borrowed reference to a callable that appends one JSON message to a buffer. Sessions take
// messages this way so that each framing decides where the bytes go (one shared buffer for the
// Unix socket, one frame each for WebSocket) without a copy or an allocation per message.
#include <string>
#include <type_traits>
#include <utility>

namespace tenure {

class MessageFormat {
 public:
  // The callable must outlive the MessageFormat: pass it straight into a call.
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, MessageFormat>)
      MessageFormat(F&& format)  // NOLINT(google-explicit-constructor): a parameter type
      : object_(const_cast<void*>(static_cast<const void*>(&format))),
        call_([](void* object, std::string& out) {
          (*static_cast<std::remove_reference_t<F>*>(object))(out);
        }) {}

  void operator()(std::string& out) const { call_(object_, out); }

 private:
  void* object_;
  void (*call_)(void*, std::string&);
};

}  // namespace tenure
