#pragma once
// The operations log (--audit-log): one JSON line per mutation a client asked for (acquire,
// renew, release, keepalive, revoke, backup) with who asked and what came of it. Off unless opened.
// Each line is written whole with one append, so lines never interleave; reopen() (on SIGHUP) lets
// log rotation move the file away.
#include <sys/types.h>

#include <concepts>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "actors/requests.hpp"
#include "protocol/ops.hpp"

namespace tenure {

// What an audited request was about, taken before the request goes to the engine.
struct AuditSubject {
  std::string_view op;
  std::string key;  // empty for keepalive
  std::string owner;
};

// Who asked: the principal as history names it, its uid, and its process (0: unknown, e.g. over
// WebSocket).
struct AuditCaller {
  std::string principal;
  Principal uid = 0;
  pid_t pid = 0;
};

// What came of an audited request: the reply's status (or error code), the tenure's token, and
// its owner where the request names none (a revoke's).
struct AuditOutcome {
  std::string_view outcome;
  std::optional<Token> token;
  std::string_view owner = {};
};

class AuditLog {
 public:
  // Appends to `path` (created 0600). False with `error` if it cannot be opened.
  bool open(const std::string& path, std::string& error);
  // Closes and opens the same path again, for log rotation.
  bool reopen(std::string& error);
  // `owner` and `key` are null where neither the subject nor the outcome names one.
  void record(Millis at, const AuditCaller& caller, const AuditSubject& subject,
              const AuditOutcome& outcome);
  ~AuditLog();

 private:
  std::mutex mutex_;
  std::string path_;
  int fd_ = -1;
};

// What a request is about: its op, and its key and owner where it names them. Fills `subject`
// in place, so that its strings keep their capacity from request to request.
template <typename Request>
void audit_subject(protocol::Op op, const Request& r, AuditSubject& subject) {
  subject.op = protocol::to_string(op);
  subject.key.clear();
  subject.owner.clear();
  if constexpr (requires { r.key; }) subject.key = r.key;
  if constexpr (requires { r.params.owner; }) {
    subject.owner = r.params.owner;
  } else if constexpr (requires { r.holder.owner; }) {
    subject.owner = r.holder.owner;
  } else if constexpr (requires {
                         { r.owner } -> std::same_as<const SharedString&>;
                       }) {
    subject.owner = r.owner;
  }
}

// The ops whose reply says only `ok` (a backup), or an error.
template <typename Result>
AuditOutcome audit_outcome(const Result& result, protocol::Op) {
  if (result.error) return {to_string(result.error->code), std::nullopt};
  return {"ok", std::nullopt};
}
AuditOutcome audit_outcome(const AcquireResult& result, protocol::Op op);
AuditOutcome audit_outcome(const HolderResult& result, protocol::Op op);
AuditOutcome audit_outcome(const KeepaliveResult& result, protocol::Op op);

}  // namespace tenure
