#include "storage/codec.hpp"

#include <catch2/catch.hpp>

using namespace tenure;
using namespace tenure::storage;

TEST_CASE("a key's state survives encode and decode", "[codec]") {
  KeyState s;
  s.last_token = 42;
  s.lock_until = 1234;
  s.last_owner = "prev";
  s.last_end = EndReason::revoked;
  Lease l;
  l.owner = "me";
  l.token = 42;
  l.acquired_at = 100;
  l.expires_at = 200;
  l.ttl_ms = 100;
  l.principal = 1000;
  l.release_on_disconnect = true;
  l.lock_delay_ms = 5;
  s.lease = l;
  auto back = decode_state(encode_state(s));
  REQUIRE(back);
  CHECK(back->last_token == 42);
  CHECK(back->lock_until == 1234);
  CHECK(back->last_owner == "prev");
  CHECK(back->last_end == EndReason::revoked);
  REQUIRE(back->lease);
  CHECK(back->lease->owner == "me");
  CHECK(*back->lease->expires_at == 200);
  CHECK(back->lease->release_on_disconnect);
  CHECK(back->lease->lock_delay_ms == 5);
}

TEST_CASE("truncated or garbled rows do not decode", "[codec]") {
  KeyState s;
  s.last_token = 3;
  Lease l;
  l.owner = "me";
  l.token = 3;
  s.lease = l;
  std::string bytes = encode_state(s);
  for (std::size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(decode_state(bytes.substr(0, n)));
  CHECK_FALSE(decode_state(bytes + "x"));
  CHECK_FALSE(decode_state("\x09garbage"));
  s.lease->token = 4;  // a lease token above last_token is impossible
  CHECK_FALSE(decode_state(encode_state(s)));
}

TEST_CASE("events and tenures round-trip, big-endian keys sort numerically", "[codec]") {
  Event e{EventType::expired, "k", "o", 9, 77, std::optional<Millis>(88), 0, {}};
  auto back = decode_event(encode_event(e), 5);
  REQUIRE(back);
  CHECK(back->type == EventType::expired);
  CHECK(back->revision == 5);
  CHECK(*back->expires_at == 88);
  TenureRecord t{9, "o", 1, 2, EndReason::released, {}};
  auto tb = decode_tenure(encode_tenure(t), 9);
  REQUIRE(tb);
  CHECK(*tb->end == EndReason::released);
  CHECK(big_endian(255) < big_endian(256));
  CHECK(from_big_endian(big_endian(0x0102030405060708ull)) == 0x0102030405060708ull);
  CHECK(tenure_row_key("a", 1) < tenure_row_key("a", 2));
  CHECK(tenure_row_key("a", ~0ull) < tenure_row_key("a/b", 1));
}

TEST_CASE("revoked tenures and events keep who revoked and why; older rows still decode",
          "[codec]") {
  Revocation revocation{"uid:1000", "stuck deploy"};
  TenureRecord t{4, "o", 10, 20, EndReason::revoked, revocation};
  auto tb = decode_tenure(encode_tenure(t), 4);
  REQUIRE(tb);
  CHECK(tb->revocation.by == "uid:1000");
  CHECK(tb->revocation.reason == "stuck deploy");
  Event e{EventType::revoked, "k", "o", 4, 20, std::optional<Millis>(30), 0, revocation};
  auto eb = decode_event(encode_event(e), 7);
  REQUIRE(eb);
  CHECK(eb->revocation.by == "uid:1000");
  CHECK(eb->revocation.reason == "stuck deploy");
  std::string bytes = encode_event(e);
  for (std::size_t n = 0; n < bytes.size(); ++n) CHECK_FALSE(decode_event(bytes.substr(0, n), 7));

  // Rows written before revocations were recorded: format 1, nothing after the end reason.
  const std::string old_tenure("\x01\x01o\x14\x01\x28\x03", 7);
  auto old = decode_tenure(old_tenure, 4);
  REQUIRE(old);
  CHECK(old->owner == "o");
  CHECK(*old->end == EndReason::revoked);
  CHECK(old->revocation.empty());
  const std::string old_event("\x01\x04\x01k\x01o\x04\x28\x00", 9);
  auto old_e = decode_event(old_event, 7);
  REQUIRE(old_e);
  CHECK(old_e->type == EventType::revoked);
  CHECK(old_e->revocation.empty());
  // A row with nothing to add is still written in the old format.
  CHECK(encode_tenure(TenureRecord{4, "o", 10, 20, EndReason::revoked, {}}) == old_tenure);
}

TEST_CASE("an event row carries its op's journal; rows without one still decode", "[codec]") {
  Event e{EventType::released, "k", "o", 3, 50, std::nullopt, 0, {}};
  TenureRecords tenures;
  tenures.push_back(TenureRecord{2, "live", 40, std::nullopt, std::nullopt, {}});  // not ended
  tenures.push_back(TenureRecord{3, "o", 10, 50, EndReason::released, {}});
  std::string bytes = encode_event(e);
  const std::string plain = bytes;
  append_journal(std::optional<std::string>("row bytes"), tenures, bytes);
  Journal journal;
  auto back = decode_event(bytes, 9, &journal);
  REQUIRE(back);
  CHECK(back->key == "k");
  CHECK(journal.present);
  CHECK(journal.row == "row bytes");
  REQUIRE(journal.tenures.size() == 1);
  CHECK(journal.tenures[0].token == 3);
  CHECK(journal.tenures[0].end == EndReason::released);
  CHECK(decode_event(bytes, 9));  // readers of events skip the journal
  for (std::size_t n = plain.size(); n < bytes.size(); ++n) {
    CHECK_FALSE(decode_event(bytes.substr(0, n), 9));
  }
  REQUIRE(decode_event(plain, 9, &journal));
  CHECK_FALSE(journal.present);
  CHECK_FALSE(journal.row);
}
