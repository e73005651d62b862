#include "tests/support/etcd_process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tests/support/free_port.hpp"

using namespace tenure;

TEST_CASE("the fixture runs a 3-member etcd that survives the loss of one", "[etcd_process]") {
  test::EtcdCluster etcd(3);
  REQUIRE(etcd.size() == 3);
  CHECK(etcd.endpoints() == etcd.endpoint(0) + "," + etcd.endpoint(1) + "," + etcd.endpoint(2));
  for (int i = 0; i < 3; ++i) CHECK(etcd.healthy(i));

  etcd.kill(0);
  CHECK_FALSE(etcd.running(0));
  CHECK_FALSE(etcd.healthy(0));
  etcd.wait_healthy();  // the others elect a leader if it was one
  CHECK(etcd.healthy(1));
  CHECK(etcd.healthy(2));

  etcd.stop(1);  // two of three gone: no quorum, no health
  CHECK_FALSE(etcd.healthy(2, std::chrono::seconds(2)));
  etcd.cont(1);
  etcd.restart(0);
  etcd.wait_healthy();
  for (int i = 0; i < 3; ++i) CHECK(etcd.healthy(i));
  CHECK(etcd.log(0).find("m1") != std::string::npos);
}

namespace {

// A fresh TCP socket on 127.0.0.1:port, with or without SO_REUSEADDR; -1 if bind fails.
int bound_socket(unsigned short port, bool reuse) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = reuse ? 1 : 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

TEST_CASE("a reserved port is taken by no other socket, but a server can listen on it, twice",
          "[etcd_process]") {
  test::ReservedPort reserved;
  unsigned short port = reserved.port();
  // What etcd's members and our peer listeners rely on: no one else binds the port meanwhile
  // (nor does the kernel lend it to an outgoing connection, which binds it the same way)...
  CHECK(bound_socket(port, false) == -1);
  // ...while a server that sets SO_REUSEADDR listens on it, and again after a restart.
  for (int start = 0; start < 2; ++start) {
    int server = bound_socket(port, true);
    REQUIRE(server >= 0);
    CHECK(::listen(server, 1) == 0);
    ::close(server);
  }
  CHECK(bound_socket(port, false) == -1);
}
