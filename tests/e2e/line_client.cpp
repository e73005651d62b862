#include "tests/e2e/line_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace e2e {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

std::string shorten(std::string_view s, std::size_t max = 600) {
  if (s.size() <= max) return std::string(s);
  return std::string(s.substr(0, max)) + "...(" + std::to_string(s.size()) + " bytes)";
}

}  // namespace

std::optional<LineClient> LineClient::try_connect(const std::string& socket_path,
                                                  std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    if (error) *error = "socket path too long: " + socket_path;
    return std::nullopt;
  }
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (error) *error = "socket(): " + errno_text(errno);
    return std::nullopt;
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    ::close(fd);
    if (error) *error = "connect(" + socket_path + "): " + errno_text(err);
    return std::nullopt;
  }
  int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  LineClient c;
  c.fd_ = fd;
  c.socket_path_ = socket_path;
  return c;
}

LineClient::LineClient(const std::string& socket_path) {
  std::string error;
  auto c = try_connect(socket_path, &error);
  if (!c) throw std::runtime_error("cannot connect to tenured: " + error);
  *this = std::move(*c);
}

LineClient::LineClient(LineClient&& other) noexcept { *this = std::move(other); }

LineClient& LineClient::operator=(LineClient&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    next_id_ = other.next_id_;
    in_ = std::move(other.in_);
    eof_ = other.eof_;
    eof_reason_ = std::move(other.eof_reason_);
    replies_ = std::move(other.replies_);
    sent_ = std::move(other.sent_);
    anonymous_ = std::move(other.anonymous_);
    events_ = std::move(other.events_);
    arrival_ = std::move(other.arrival_);
    lines_ = std::move(other.lines_);
    socket_path_ = std::move(other.socket_path_);
  }
  return *this;
}

LineClient::~LineClient() { close(); }

void LineClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string LineClient::describe() const {
  std::string d = "connection to " + socket_path_;
  if (eof_) d += " (closed by server: " + eof_reason_ + ")";
  return d;
}

std::int64_t LineClient::send(std::string_view body) {
  std::int64_t id = next_id_++;
  std::string line = "{\"id\":" + std::to_string(id);
  if (!body.empty()) {
    line += ",";
    line += body;
  }
  line += "}";
  sent_[std::to_string(id)] = line;
  send_line(line);
  return id;
}

void LineClient::send_line(std::string_view line) {
  std::string bytes(line);
  bytes += '\n';
  if (!send_bytes(bytes)) {
    throw std::runtime_error("could not send " + shorten(line) + ": " + describe());
  }
}

bool LineClient::send_bytes(std::string_view bytes, Millis timeout) {
  if (fd_ < 0) return false;
  auto deadline = Clock::now() + timeout;
  std::size_t done = 0;
  while (done < bytes.size()) {
    if (eof_) return false;
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
    if (left <= 0) {
      throw std::runtime_error("timed out writing to tenured (" + std::to_string(done) + " of " +
                               std::to_string(bytes.size()) + " bytes written)");
    }
    pollfd p{fd_, POLLOUT | POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("poll: " + errno_text(errno));
    }
    if (n == 0) continue;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) read_available();
    if (p.revents & POLLOUT) {
      ssize_t w = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        if (errno == EPIPE || errno == ECONNRESET) {
          read_available();
          if (!eof_) {
            eof_ = true;
            eof_reason_ = "write failed: " + errno_text(errno);
          }
          return false;
        }
        throw std::runtime_error("send: " + errno_text(errno));
      }
      done += static_cast<std::size_t>(w);
    }
  }
  return true;
}

void LineClient::read_available() {
  char buf[65536];
  while (fd_ >= 0 && !eof_) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      in_.append(buf, static_cast<std::size_t>(n));
      std::size_t start = 0;
      for (;;) {
        auto nl = in_.find('\n', start);
        if (nl == std::string::npos) break;
        dispatch(in_.substr(start, nl - start));
        start = nl + 1;
      }
      in_.erase(0, start);
      continue;
    }
    if (n == 0) {
      eof_ = true;
      eof_reason_ = "EOF";
      if (!in_.empty()) {
        eof_reason_ += ", after an unterminated line: " + shorten(in_);
      }
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    eof_ = true;
    eof_reason_ = errno_text(errno);
    return;
  }
}

void LineClient::dispatch(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  lines_.push_back(line);
  std::string error;
  auto j = Json::parse(line, &error);
  if (!j) {
    throw std::runtime_error("tenured sent a line that is not JSON (" + error +
                             "): " + shorten(line));
  }
  if (!j->is_object()) {
    throw std::runtime_error("tenured sent a line that is not a JSON object: " + shorten(line));
  }
  if (j->has("event")) {
    events_.push_back(std::move(*j));
    return;
  }
  if (j->has("id")) {
    std::string id = (*j)["id"].dump();
    arrival_.push_back(id);
    replies_[id].push_back(std::move(*j));
    return;
  }
  anonymous_.push_back(std::move(*j));
}

bool LineClient::pump(Clock::time_point deadline) {
  if (fd_ < 0 || eof_) return false;
  for (;;) {
    auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
    if (left < 0) left = 0;
    pollfd p{fd_, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("poll: " + errno_text(errno));
    }
    if (n == 0) return false;
    read_available();
    return true;
  }
}

Json LineClient::take_reply(const std::string& id_json, Millis timeout, std::string_view what) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    auto it = replies_.find(id_json);
    if (it != replies_.end() && !it->second.empty()) {
      Json j = std::move(it->second.front());
      it->second.pop_front();
      return j;
    }
    if (eof_ || fd_ < 0) {
      throw std::runtime_error("no reply to " + std::string(what) + ": " + describe());
    }
    if (Clock::now() >= deadline) {
      throw std::runtime_error("no reply within " + std::to_string(timeout.count()) + " ms to " +
                               std::string(what));
    }
    pump(deadline);
  }
}

Json LineClient::reply(std::int64_t id, Millis timeout) {
  std::string key = std::to_string(id);
  auto it = sent_.find(key);
  std::string what = it == sent_.end() ? "id " + key : shorten(it->second);
  Json j = take_reply(key, timeout, what);
  return j;
}

Json LineClient::reply_with_id(const std::string& id_json, Millis timeout) {
  return take_reply(id_json, timeout, "request with id " + id_json);
}

Json LineClient::call(std::string_view body, Millis timeout) { return reply(send(body), timeout); }

bool LineClient::has_reply(std::int64_t id) {
  if (fd_ >= 0 && !eof_) read_available();
  auto it = replies_.find(std::to_string(id));
  return it != replies_.end() && !it->second.empty();
}

Json LineClient::anonymous_reply(Millis timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (!anonymous_.empty()) {
      Json j = std::move(anonymous_.front());
      anonymous_.pop_front();
      return j;
    }
    if (eof_ || fd_ < 0) throw std::runtime_error("no reply without id: " + describe());
    if (Clock::now() >= deadline) {
      throw std::runtime_error("no reply without id within " + std::to_string(timeout.count()) +
                               " ms");
    }
    pump(deadline);
  }
}

std::optional<Json> LineClient::next_event(Millis timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (!events_.empty()) {
      Json j = std::move(events_.front());
      events_.pop_front();
      return j;
    }
    if (eof_ || fd_ < 0 || Clock::now() >= deadline) return std::nullopt;
    pump(deadline);
  }
}

Json LineClient::event(Millis timeout) {
  auto e = next_event(timeout);
  if (!e) {
    throw std::runtime_error("no event within " + std::to_string(timeout.count()) + " ms on " +
                             describe());
  }
  return *e;
}

std::size_t LineClient::queued_events() {
  if (fd_ >= 0 && !eof_) read_available();
  return events_.size();
}

std::vector<std::string> LineClient::unexpected_lines(Millis window) {
  std::size_t before = lines_.size();
  auto deadline = Clock::now() + window;
  while (Clock::now() < deadline && fd_ >= 0 && !eof_) pump(deadline);
  return {lines_.begin() + static_cast<std::ptrdiff_t>(before), lines_.end()};
}

bool LineClient::wait_lines(std::size_t n, Millis timeout) {
  auto deadline = Clock::now() + timeout;
  while (lines_.size() < n) {
    if (eof_ || fd_ < 0 || Clock::now() >= deadline) return false;
    pump(deadline);
  }
  return true;
}

Json LineClient::roundtrip(std::string_view line, Millis timeout) {
  std::size_t index = lines_.size();
  send_line(line);
  if (!wait_lines(index + 1, timeout)) {
    throw std::runtime_error("no reply within " + std::to_string(timeout.count()) + " ms to " +
                             shorten(line) + " on " + describe());
  }
  return *Json::parse(lines_[index]);
}

bool LineClient::wait_closed(Millis timeout) {
  auto deadline = Clock::now() + timeout;
  while (!eof_ && fd_ >= 0) {
    if (Clock::now() >= deadline) return false;
    pump(deadline);
  }
  return eof_;
}

}  // namespace e2e
