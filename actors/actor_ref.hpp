#pragma once
// A counted reference to a key actor. Intrusive rather than shared_ptr: an actor per live lease
// would otherwise carry a control block and a weak self-pointer, and every holder (registry,
// timers, queued handlers) a pointer twice the size.
#include <boost/smart_ptr/intrusive_ptr.hpp>

namespace tenure {

class KeyActor;
void intrusive_ptr_add_ref(KeyActor* actor);
void intrusive_ptr_release(KeyActor* actor);
using ActorRef = boost::intrusive_ptr<KeyActor>;

}  // namespace tenure
