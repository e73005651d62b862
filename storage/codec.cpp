#include "storage/codec.hpp"

namespace tenure::storage {
namespace {

constexpr std::uint8_t kFormat = 1;
// Tenure and event rows of a revoke: format 1 followed by who revoked and why. Other rows keep
// format 1, so that they stay readable by servers that predate it.
constexpr std::uint8_t kFormatRevoked = 2;

// Appends to a caller's buffer, so that a buffer reused row after row allocates nothing.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  // Built on the stack and appended at once: a push_back per byte was most of a row's encoding
  // (a time takes six bytes).
  void varint(std::uint64_t v) {
    char buf[10];
    std::size_t n = 0;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>((v & 0x7F) | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    out_.append(buf, n);
  }
  void signed_varint(std::int64_t v) {
    varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  void str(std::string_view s) {
    varint(s.size());
    out_.append(s);
  }
  void optional_time(const std::optional<Millis>& t) {
    u8(t ? 1 : 0);
    if (t) signed_varint(*t);
  }

 private:
  std::string& out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u8(std::uint8_t& v) {
    if (pos_ >= in_.size()) return false;
    v = static_cast<std::uint8_t>(in_[pos_++]);
    return true;
  }
  bool varint(std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      std::uint8_t b;
      if (!u8(b)) return false;
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool signed_varint(std::int64_t& v) {
    std::uint64_t u;
    if (!varint(u)) return false;
    v = static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
    return true;
  }
  bool str(std::string_view& s) {
    std::uint64_t n;
    if (!varint(n) || n > in_.size() - pos_) return false;
    s = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool str(std::string& s) {
    std::string_view v;
    if (!str(v)) return false;
    s.assign(v);
    return true;
  }
  bool str(SharedString& s) {
    std::string_view v;
    if (!str(v)) return false;
    if (v != s) s = SharedString(v);
    return true;
  }
  bool optional_time(std::optional<Millis>& t) {
    std::uint8_t present;
    if (!u8(present) || present > 1) return false;
    t.reset();
    if (!present) return true;
    std::int64_t v;
    if (!signed_varint(v)) return false;
    t = v;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }
  // Who revoked and why, when the row's format carries them.
  bool revocation(std::uint8_t format, Revocation& out) {
    return format == kFormat || (str(out.by) && str(out.reason));
  }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

std::uint8_t format_of(const Revocation& revocation) {
  return revocation.empty() ? kFormat : kFormatRevoked;
}

void write_revocation(Writer& w, const Revocation& revocation) {
  if (revocation.empty()) return;
  w.str(revocation.by);
  w.str(revocation.reason);
}

bool known_format(std::uint8_t format) { return format == kFormat || format == kFormatRevoked; }

template <typename E>
bool read_enum(Reader& r, E& out, std::uint8_t max) {
  std::uint8_t v;
  if (!r.u8(v) || v > max) return false;
  out = static_cast<E>(v);
  return true;
}

}  // namespace

void encode_state(const KeyState& state, std::string& out) {
  out.clear();
  Writer w(out);
  w.u8(kFormat);
  w.varint(state.last_token);
  w.signed_varint(state.lock_until);
  w.str(state.last_owner);
  w.u8(static_cast<std::uint8_t>(state.last_end));
  w.u8(state.lease ? 1 : 0);
  if (state.lease) {
    const Lease& l = *state.lease;
    w.str(l.owner);
    w.varint(l.token);
    w.signed_varint(l.acquired_at);
    w.optional_time(l.expires_at);
    w.signed_varint(l.ttl_ms);
    w.varint(l.principal);
    w.u8(l.release_on_disconnect ? 1 : 0);
    w.signed_varint(l.lock_delay_ms);
  }
}

std::optional<KeyState> decode_state(std::string_view bytes) {
  Reader r(bytes);
  KeyState s;
  std::uint8_t format, has_lease;
  if (!r.u8(format) || format != kFormat) return std::nullopt;
  if (!r.varint(s.last_token) || !r.signed_varint(s.lock_until) || !r.str(s.last_owner) ||
      !read_enum(r, s.last_end, 2) || !r.u8(has_lease) || has_lease > 1) {
    return std::nullopt;
  }
  if (has_lease) {
    Lease l;
    std::uint64_t principal;
    std::uint8_t rod;
    // Most often the last owner holds the key again: one copy of the name for both.
    l.owner = s.last_owner;
    if (!r.str(l.owner) || !r.varint(l.token) || !r.signed_varint(l.acquired_at) ||
        !r.optional_time(l.expires_at) || !r.signed_varint(l.ttl_ms) || !r.varint(principal) ||
        !r.u8(rod) || rod > 1 || !r.signed_varint(l.lock_delay_ms)) {
      return std::nullopt;
    }
    if (l.token == 0 || l.token > s.last_token) return std::nullopt;
    l.principal = static_cast<Principal>(principal);
    l.release_on_disconnect = rod == 1;
    s.lease = std::move(l);
  }
  if (!r.done()) return std::nullopt;
  return s;
}

namespace {

void write_tenure(Writer& w, const TenureRecord& record) {
  w.u8(format_of(record.revocation));
  w.str(record.owner);
  w.signed_varint(record.acquired_at);
  w.optional_time(record.ended_at);
  w.u8(record.end ? static_cast<std::uint8_t>(*record.end) + 1 : 0);
  write_revocation(w, record.revocation);
}

bool read_tenure(Reader& r, TenureRecord& t) {
  std::uint8_t format, end;
  if (!r.u8(format) || !known_format(format) || !r.str(t.owner) ||
      !r.signed_varint(t.acquired_at) || !r.optional_time(t.ended_at) || !r.u8(end) || end > 3 ||
      !r.revocation(format, t.revocation)) {
    return false;
  }
  if (end) t.end = static_cast<EndReason>(end - 1);
  return true;
}

// Set on an event row's format byte when the op's journal follows the event.
constexpr std::uint8_t kJournalFlag = 0x80;

bool read_journal(Reader& r, Journal& journal) {
  std::uint8_t has_row;
  std::uint64_t n;
  if (!r.u8(has_row) || has_row > 1) return false;
  journal.row.reset();
  if (has_row && !r.str(journal.row.emplace())) return false;
  if (!r.varint(n)) return false;
  journal.tenures.clear();
  for (std::uint64_t i = 0; i < n; ++i) {
    TenureRecord& t = journal.tenures.emplace_back();
    if (!r.varint(t.token) || !read_tenure(r, t)) return false;
  }
  return true;
}

}  // namespace

void encode_tenure(const TenureRecord& record, std::string& out) {
  out.clear();
  Writer w(out);
  write_tenure(w, record);
}

std::optional<TenureRecord> decode_tenure(std::string_view bytes, Token token) {
  Reader r(bytes);
  TenureRecord t;
  t.token = token;
  if (!read_tenure(r, t) || !r.done()) return std::nullopt;
  return t;
}

void encode_event(const Event& event, std::string& out) {
  out.clear();
  Writer w(out);
  w.u8(format_of(event.revocation));
  w.u8(static_cast<std::uint8_t>(event.type));
  w.str(event.key);
  w.str(event.owner);
  w.varint(event.token);
  w.signed_varint(event.at);
  w.optional_time(event.expires_at);
  write_revocation(w, event.revocation);
}

void append_journal(const std::optional<std::string>& row, const TenureRecords& tenures,
                    std::string& out) {
  if (out.empty()) return;
  out[0] = static_cast<char>(static_cast<std::uint8_t>(out[0]) | kJournalFlag);
  Writer w(out);
  w.u8(row ? 1 : 0);
  if (row) w.str(*row);
  std::uint64_t ended = 0;
  for (const TenureRecord& t : tenures) ended += t.ended_at ? 1 : 0;
  w.varint(ended);
  for (const TenureRecord& t : tenures) {
    if (!t.ended_at) continue;
    w.varint(t.token);
    write_tenure(w, t);
  }
}

std::optional<Event> decode_event(std::string_view bytes, Revision revision, Journal* journal) {
  Reader r(bytes);
  Event e;
  e.revision = revision;
  std::uint8_t flagged;
  if (!r.u8(flagged)) return std::nullopt;
  std::uint8_t format = flagged & ~kJournalFlag;
  if (!known_format(format) || !read_enum(r, e.type, 5) || !r.str(e.key) || !r.str(e.owner) ||
      !r.varint(e.token) || !r.signed_varint(e.at) || !r.optional_time(e.expires_at) ||
      !r.revocation(format, e.revocation)) {
    return std::nullopt;
  }
  Journal ignored;
  Journal& j = journal ? *journal : ignored;
  j = Journal{};
  if ((flagged & kJournalFlag) && !read_journal(r, j)) return std::nullopt;
  if (!r.done()) return std::nullopt;
  if (journal) journal->present = (flagged & kJournalFlag) != 0;
  return e;
}

std::string big_endian(std::uint64_t value) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(value & 0xFF);
    value >>= 8;
  }
  return out;
}

std::uint64_t from_big_endian(std::string_view bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8 && i < bytes.size(); ++i) {
    v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  }
  return v;
}

std::string tenure_row_prefix(std::string_view key) {
  std::string out(key);
  out.push_back('\0');
  return out;
}

void tenure_row_key(std::string_view key, Token token, std::string& out) {
  out.assign(key);
  out.push_back('\0');
  out.append(big_endian(token));
}

std::string tenure_row_key(std::string_view key, Token token) {
  std::string out;
  tenure_row_key(key, token, out);
  return out;
}

std::string encode_state(const KeyState& state) {
  std::string out;
  encode_state(state, out);
  return out;
}

std::string encode_tenure(const TenureRecord& record) {
  std::string out;
  encode_tenure(record, out);
  return out;
}

std::string encode_event(const Event& event) {
  std::string out;
  encode_event(event, out);
  return out;
}

}  // namespace tenure::storage
