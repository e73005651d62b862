#pragma once
// A real etcd cluster of N members on loopback for tests: reserved ports, a data dir per member in
// a temp dir, started with the limits cluster mode documents (--max-txn-ops 10000
// --max-request-bytes 8388608). The constructor returns once every member reports healthy; the
// destructor kills every member and removes everything. Members die with the test process.
// Not thread-safe: drive it from the test's thread.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/free_port.hpp"
#include "tests/support/temp_dir.hpp"

namespace tenure::test {

class EtcdCluster {
 public:
  // `extra_args` go after the defaults (a flag given twice: the last one counts).
  explicit EtcdCluster(int members = 3, std::vector<std::string> extra_args = {});
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  int size() const { return static_cast<int>(members_.size()); }
  // "http://127.0.0.1:P" of member i, and all of them comma-separated (--etcd-endpoints).
  std::string endpoint(int i) const;
  std::vector<std::string> endpoint_list() const;
  std::string endpoints() const;
  pid_t pid(int i) const { return members_.at(i).pid; }
  bool running(int i) const { return members_.at(i).pid > 0; }

  // kill -9 and reap; restart() brings it back on the same ports and data dir.
  void kill(int i);
  void stop(int i);  // SIGSTOP, and waits until every thread is stopped: alive, silent
  void cont(int i);  // SIGCONT
  void restart(int i);

  // Whether member i answers /health with "true" (it sees a leader) within `timeout`.
  bool healthy(int i, std::chrono::milliseconds timeout = std::chrono::milliseconds(500)) const;
  // Waits until every running member is healthy; throws after `timeout`.
  void wait_healthy(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // The member's log (stdout and stderr), for a failing test's message.
  std::string log(int i) const;

 private:
  struct Member {
    std::string name;
    unsigned short client_port = 0;
    unsigned short peer_port = 0;
    pid_t pid = -1;
  };
  void spawn(int i);

  TempDir dir_;
  // Held while the members live, so that no other socket takes a port across a restart.
  std::vector<ReservedPort> client_ports_;
  std::vector<ReservedPort> peer_ports_;
  std::vector<Member> members_;
  std::string initial_cluster_;
  std::vector<std::string> extra_args_;
};

}  // namespace tenure::test
