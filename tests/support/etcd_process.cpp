#include "tests/support/etcd_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace tenure::test {

namespace {

using Clock = std::chrono::steady_clock;

// GET http://127.0.0.1:port/path with one deadline over connect, send and receive.
std::string http_get(unsigned short port, const std::string& path, Clock::time_point deadline) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  std::string response;
  auto wait = [&](short events) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) == 1;
  };
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ||
            (errno == EINPROGRESS && wait(POLLOUT));
  int error = 0;
  socklen_t len = sizeof error;
  if (ok) ok = ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
  if (ok)
    ok = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(request.size());
  char buffer[4096];
  while (ok && wait(POLLIN)) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    response.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return response;
}

}  // namespace

EtcdCluster::EtcdCluster(int members, std::vector<std::string> extra_args)
    : extra_args_(std::move(extra_args)) {
  for (int i = 0; i < members; ++i) {
    Member m;
    m.name = "m" + std::to_string(i + 1);
    m.client_port = client_ports_.emplace_back().port();
    m.peer_port = peer_ports_.emplace_back().port();
    if (!initial_cluster_.empty()) initial_cluster_ += ",";
    initial_cluster_ += m.name + "=http://127.0.0.1:" + std::to_string(m.peer_port);
    members_.push_back(m);
  }
  for (int i = 0; i < members; ++i) spawn(i);
  wait_healthy();
}

EtcdCluster::~EtcdCluster() {
  for (auto& m : members_) {
    if (m.pid <= 0) continue;
    ::kill(m.pid, SIGKILL);
    ::waitpid(m.pid, nullptr, 0);
  }
}

std::string EtcdCluster::endpoint(int i) const {
  return "http://127.0.0.1:" + std::to_string(members_.at(i).client_port);
}

std::vector<std::string> EtcdCluster::endpoint_list() const {
  std::vector<std::string> list;
  for (int i = 0; i < size(); ++i) list.push_back(endpoint(i));
  return list;
}

std::string EtcdCluster::endpoints() const {
  std::string joined;
  for (int i = 0; i < size(); ++i) joined += (i ? "," : "") + endpoint(i);
  return joined;
}

void EtcdCluster::spawn(int i) {
  const Member& m = members_.at(i);
  std::string client = endpoint(i);
  std::string peer = "http://127.0.0.1:" + std::to_string(m.peer_port);
  std::string data = dir_.str(m.name);
  std::vector<std::string> argv = {"/usr/bin/etcd",
                                   "--name",
                                   m.name,
                                   "--data-dir",
                                   data,
                                   "--listen-client-urls",
                                   client,
                                   "--advertise-client-urls",
                                   client,
                                   "--listen-peer-urls",
                                   peer,
                                   "--initial-advertise-peer-urls",
                                   peer,
                                   "--initial-cluster",
                                   initial_cluster_,
                                   "--initial-cluster-state",
                                   "new",
                                   "--initial-cluster-token",
                                   dir_.path().filename().string(),
                                   "--max-txn-ops",
                                   "10000",
                                   "--max-request-bytes",
                                   "8388608"};
  argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
  std::string log_path = dir_.str(m.name + ".log");
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // no member outlives a crashed test
    if (::getppid() != parent) ::_exit(127);
    int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  members_.at(i).pid = pid;
}

void EtcdCluster::kill(int i) {
  Member& m = members_.at(i);
  if (m.pid <= 0) return;
  ::kill(m.pid, SIGKILL);
  ::waitpid(m.pid, nullptr, 0);
  m.pid = -1;
}

void EtcdCluster::stop(int i) {
  if (!running(i)) return;
  pid_t pid = members_.at(i).pid;
  ::kill(pid, SIGSTOP);
  // The signal stops each thread when it next runs: wait until all of them have, so that
  // nothing the test sends after this is served.
  auto deadline = Clock::now() + std::chrono::seconds(2);
  auto all_stopped = [&] {
    std::error_code ec;
    for (auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
      std::ifstream in(task.path() / "stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      auto paren = stat.rfind(')');
      if (paren == std::string::npos || paren + 2 >= stat.size()) continue;
      char state = stat[paren + 2];
      if (state != 'T' && state != 't') return false;
    }
    return !ec;
  };
  while (!all_stopped() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void EtcdCluster::cont(int i) {
  if (running(i)) ::kill(members_.at(i).pid, SIGCONT);
}

void EtcdCluster::restart(int i) {
  kill(i);
  spawn(i);  // the data dir exists: etcd rejoins with it and ignores the initial-cluster flags
}

bool EtcdCluster::healthy(int i, std::chrono::milliseconds timeout) const {
  if (!running(i)) return false;
  auto response = http_get(members_.at(i).client_port, "/health", Clock::now() + timeout);
  return response.find("\"health\":\"true\"") != std::string::npos;
}

void EtcdCluster::wait_healthy(std::chrono::milliseconds timeout) const {
  auto deadline = Clock::now() + timeout;
  for (int i = 0; i < size(); ++i) {
    while (running(i) && !healthy(i)) {
      int status = 0;
      if (::waitpid(members_[i].pid, &status, WNOHANG) == members_[i].pid)
        throw std::runtime_error("etcd " + members_[i].name + " exited:\n" + log(i));
      if (Clock::now() > deadline)
        throw std::runtime_error("etcd " + members_[i].name + " not healthy:\n" + log(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

std::string EtcdCluster::log(int i) const {
  std::ifstream in(dir_.str(members_.at(i).name + ".log"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tenure::test
