#include "storage/ledger_store.hpp"

#include "storage/codec.hpp"

namespace tenure::storage {

LoadedState decode_or_quarantine(std::string_view bytes, Revision revision) {
  if (auto state = decode_state(bytes)) return LoadedState{std::move(*state), false};
  KeyState safe;
  safe.last_token = revision;
  return LoadedState{std::move(safe), true};
}

}  // namespace tenure::storage
