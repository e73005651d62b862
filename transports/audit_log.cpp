#include "transports/audit_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/json_writer.hpp"
#include "transports/lease_json.hpp"

namespace tenure {

AuditLog::~AuditLog() {
  if (fd_ >= 0) ::close(fd_);
}

bool AuditLog::open(const std::string& path, std::string& error) {
  std::lock_guard lock(mutex_);
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = "cannot open the audit log " + path + ": " + std::strerror(errno);
    return false;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  path_ = path;
  return true;
}

bool AuditLog::reopen(std::string& error) {
  std::string path;
  {
    std::lock_guard lock(mutex_);
    if (fd_ < 0) return true;
    path = path_;
  }
  return open(path, error);
}

void AuditLog::record(Millis at, const AuditCaller& caller, const AuditSubject& subject,
                      const AuditOutcome& outcome) {
  std::string line;
  JsonWriter w(line);
  w.begin_object();
  write_time(w, "time", at);
  w.field("principal", caller.principal).field("uid", std::uint64_t{caller.uid});
  if (caller.pid > 0) {
    w.field("pid", static_cast<std::int64_t>(caller.pid));
  } else {
    w.null_field("pid");
  }
  w.field("op", subject.op);
  if (subject.key.empty()) {
    w.null_field("key");
  } else {
    w.field("key", subject.key);
  }
  std::string_view owner = subject.owner.empty() ? outcome.owner : subject.owner;
  if (owner.empty()) {
    w.null_field("owner");
  } else {
    w.field("owner", owner);
  }
  w.field("token", outcome.token).field("outcome", outcome.outcome).end_object();
  line.push_back('\n');
  std::lock_guard lock(mutex_);
  if (fd_ < 0) return;
  // O_APPEND: one write is one line, whole. A failed write must not stop the service.
  (void)!::write(fd_, line.data(), line.size());
}

AuditOutcome audit_outcome(const AcquireResult& result, protocol::Op) {
  if (result.error) return {to_string(result.error->code), std::nullopt};
  switch (result.status) {
    case AcquireStatus::acquired:
      return {"acquired", result.lease ? std::optional<Token>(result.lease->token) : std::nullopt};
    case AcquireStatus::forbidden:
      return {"forbidden", std::nullopt};
    case AcquireStatus::held:
    case AcquireStatus::lock_delay:
      break;
  }
  return {"held", std::nullopt};
}

AuditOutcome audit_outcome(const HolderResult& result, protocol::Op op) {
  if (result.error) return {to_string(result.error->code), std::nullopt};
  switch (result.status) {
    case HolderStatus::ok:
    case HolderStatus::noop: {
      std::optional<Token> token = result.token;
      if (!token && result.lease) token = result.lease->token;
      std::string_view said = op == protocol::Op::renew    ? "renewed"
                              : op == protocol::Op::revoke ? "revoked"
                                                           : "released";
      std::string_view owner = result.lease ? std::string_view(result.lease->owner) : "";
      return {said, token, owner};
    }
    case HolderStatus::forbidden:
      return {"forbidden", std::nullopt};
    case HolderStatus::not_holder:
      break;
  }
  return {"not_holder", std::nullopt};
}

AuditOutcome audit_outcome(const KeepaliveResult& result, protocol::Op) {
  if (result.error) return {to_string(result.error->code), std::nullopt};
  return {"renewed", std::nullopt};
}

}  // namespace tenure
