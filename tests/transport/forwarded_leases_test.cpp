// ForwardedLeases (cluster mode): a lease taken through another node is reported lost from this
// node's events only once that node can no longer report it itself, and only once.
#include "transports/forwarded_leases.hpp"

#include <catch2/catch.hpp>

using namespace tenure;

namespace {

struct Fixture {
  EventBus bus;
  std::vector<std::pair<ConnId, Event>> told;
  std::shared_ptr<ForwardedLeases> leases = std::make_shared<ForwardedLeases>(
      bus, [this](ConnId conn, Event event) { told.emplace_back(conn, std::move(event)); });
  Revision revision = 0;

  void publish(EventType type, const std::string& key, Token token) {
    Events events;
    Event event;
    event.type = type;
    event.key = key;
    event.token = token;
    event.revision = ++revision;
    events.push_back(std::move(event));
    bus.publish({&events});
  }
  ~Fixture() { leases->stop(); }
};

}  // namespace

TEST_CASE("a lease's end is told from the events only once its node cannot tell it",
          "[forwarded_leases]") {
  Fixture f;
  f.bus.published_through(0);
  f.leases->granted("k", 7, 1, "n1");
  f.leases->granted("other", 3, 2, "n2");
  // n1 is alive: it tells its own client.
  f.publish(EventType::expired, "k", 7);
  CHECK(f.told.empty());

  SECTION("its notice came: nothing more to tell") {
    f.leases->ended("k", 7);
    f.leases->orphan("n1");
    CHECK(f.told.empty());
  }
  SECTION("the link broke before its notice came: told then, once") {
    f.leases->orphan("n1");
    REQUIRE(f.told.size() == 1);
    CHECK(f.told[0].first == 1);
    CHECK(f.told[0].second.key == "k");
    f.publish(EventType::expired, "k", 7);
    f.leases->orphan("n1");
    CHECK(f.told.size() == 1);
  }
  SECTION("a lease of a lost node is told at its end, of its own token only") {
    f.leases->granted("k", 8, 1, "n1");
    f.leases->orphan("n1");
    f.told.clear();
    f.publish(EventType::released, "k", 8);
    f.publish(EventType::revoked, "k", 9);
    f.publish(EventType::revoked, "other", 3);  // n2 still tells its own
    CHECK(f.told.empty());
    f.publish(EventType::revoked, "k", 8);
    REQUIRE(f.told.size() == 1);
    CHECK(f.told[0].second.type == EventType::revoked);
    CHECK(f.told[0].second.token == 8);
  }
  SECTION("a re-acquire through a live node hands the telling back to it") {
    f.leases->granted("k", 8, 1, "n1");
    f.leases->orphan("n1");
    f.told.clear();
    f.leases->granted("k", 8, 1, "n2");
    f.publish(EventType::expired, "k", 8);
    CHECK(f.told.empty());
  }
  SECTION("a lease re-acquired on another node's connection is told there, not from here") {
    f.leases->moved("k", 7, 2);  // another connection's: this one is still the one told
    f.leases->orphan("n1");
    REQUIRE(f.told.size() == 1);
    f.told.clear();
    f.leases->granted("k", 8, 1, "n2");
    f.leases->granted("k", 8, 3, "n2");  // a second grant of the tenure here: it is told now
    f.leases->moved("k", 8, 1);          // late news of the first one's: not the second's
    f.leases->orphan("n2");
    f.publish(EventType::expired, "k", 8);
    REQUIRE(f.told.size() == 1);
    CHECK(f.told[0].first == 3);
    f.leases->granted("k", 9, 1, "n2");
    f.leases->moved("k", 9, 1);
    f.leases->orphan("n2");
    f.publish(EventType::expired, "k", 9);
    CHECK(f.told.size() == 1);
  }
  SECTION("a connection gone is told nothing") {
    f.leases->granted("k", 8, 1, "n1");
    f.leases->disconnected(1);
    f.told.clear();
    f.leases->orphan("n1");
    f.publish(EventType::expired, "k", 8);
    CHECK(f.told.empty());
  }
}

TEST_CASE("a lease whose slot its node let go is told from the events, also of an end before",
          "[forwarded_leases]") {
  Fixture f;
  f.bus.published_through(0);
  f.leases->follow();
  // Granted by this node's engine; ended by the slot's new owner while this node was paused,
  // before it found its slots gone.
  f.publish(EventType::expired, "gone", 4);
  f.leases->unowned("gone", 4, 1, true);
  REQUIRE(f.told.size() == 1);
  CHECK(f.told[0].first == 1);
  CHECK(f.told[0].second.token == 4);
  // Ending later: told then, once.
  f.leases->unowned("k", 7, 2, true);
  f.publish(EventType::expired, "k", 6);  // an earlier tenure's
  CHECK(f.told.size() == 1);
  f.publish(EventType::revoked, "k", 7);
  REQUIRE(f.told.size() == 2);
  CHECK(f.told[1].first == 2);
  f.publish(EventType::revoked, "k", 7);
  CHECK(f.told.size() == 2);
  // Taken through another node that let the slot go: told from here from now on; a lease it
  // told already, or that was never forwarded from here, is not followed again.
  f.leases->granted("f", 9, 3, "n2");
  f.publish(EventType::expired, "f", 9);
  f.leases->unowned("f", 9, 3, false);
  REQUIRE(f.told.size() == 3);
  CHECK(f.told[2].first == 3);
  f.leases->unowned("f", 9, 3, false);
  f.leases->unowned("other", 5, 3, false);
  f.publish(EventType::expired, "other", 5);
  CHECK(f.told.size() == 3);
}
