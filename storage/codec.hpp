#pragma once
// Binary encoding of ledger rows. Every decoder is bounds-checked: a row that cannot be decoded
// yields nullopt, never a crash (§6).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/lease.hpp"

namespace tenure::storage {

// Each encoder writes into `out` (replacing what it held): a buffer reused for row after row
// allocates nothing. The forms that return a string are for tests and tools.
void encode_state(const KeyState& state, std::string& out);
std::string encode_state(const KeyState& state);
std::optional<KeyState> decode_state(std::string_view bytes);

void encode_tenure(const TenureRecord& record, std::string& out);
std::string encode_tenure(const TenureRecord& record);
std::optional<TenureRecord> decode_tenure(std::string_view bytes, Token token);

void encode_event(const Event& event, std::string& out);
std::string encode_event(const Event& event);

// What an op changed besides its events: its lease row and the tenures it ended. Between
// checkpoints the event log is the ledger's durable truth, so an op's last event row carries it
// (recovery rebuilds the rows from it; see GroupWriter).
struct Journal {
  bool present = false;
  std::optional<std::string> row;
  TenureRecords tenures;  // ended ones only
};
// Appends the journal of `row` and the ended ones of `tenures` to an event encoded in `out`.
void append_journal(const std::optional<std::string>& row, const TenureRecords& tenures,
                    std::string& out);
// Decodes an event row, with or without a journal (filled in when `journal` is given).
std::optional<Event> decode_event(std::string_view bytes, Revision revision,
                                  Journal* journal = nullptr);

// Big-endian so that RocksDB's bytewise order is numeric order.
std::string big_endian(std::uint64_t value);
std::uint64_t from_big_endian(std::string_view bytes);

// Tenure rows are keyed key + '\0' + token; keys never contain control characters (§1).
void tenure_row_key(std::string_view key, Token token, std::string& out);
std::string tenure_row_key(std::string_view key, Token token);
std::string tenure_row_prefix(std::string_view key);

}  // namespace tenure::storage
