// Fuzzes the ledger row codec (§6): a damaged row decodes to nothing or to a value that encodes
// and decodes again to itself, and never crashes. The first byte picks the kind of row.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "storage/codec.hpp"

namespace {

// Decoding what an encoder wrote must give back what it was given.
template <typename Decode, typename Encode>
void round_trip(std::string_view row, Decode decode, Encode encode) {
  auto first = decode(row);
  if (!first) return;
  std::string encoded = encode(*first);
  auto second = decode(encoded);
  if (!second || encode(*second) != encoded) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tenure;
  if (size == 0) return 0;
  std::string_view row(reinterpret_cast<const char*>(data) + 1, size - 1);
  constexpr Token kToken = 7;
  constexpr Revision kRevision = 42;
  switch (data[0] % 4) {
    case 0:
      round_trip(row, storage::decode_state,
                 [](const KeyState& s) { return storage::encode_state(s); });
      break;
    case 1:
      round_trip(
          row, [](std::string_view b) { return storage::decode_tenure(b, kToken); },
          [](const TenureRecord& t) { return storage::encode_tenure(t); });
      break;
    case 2:
      round_trip(
          row, [](std::string_view b) { return storage::decode_event(b, kRevision); },
          [](const Event& e) { return storage::encode_event(e); });
      break;
    default:
      if (row.size() == 8 && storage::big_endian(storage::from_big_endian(row)) != row) {
        std::abort();
      }
      break;
  }
  return 0;
}
