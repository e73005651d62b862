#pragma once
// The storage module's errors: one errc, usable as a std::error_code, and a Status that carries
// RocksDB's (or etcd's) words for the failure. Every call that touches RocksDB or etcd returns one.
#include <string>
#include <system_error>

namespace rocksdb {
class Status;
}  // namespace rocksdb

namespace tenure::storage {

enum class errc {
  io_error = 1,        // the file system refused (EIO, permissions, ...)
  no_space,            // the disk is full
  corruption,          // a checksum or a record does not match
  missing_file,        // a file the ledger lists is not there
  damaged_ledger,      // the ledger cannot be recovered completely (§6)
  in_use,              // another process holds the ledger's lock
  unsupported_schema,  // written by a newer tenured
  busy,                // try again (RocksDB's Busy/TryAgain)
  unreachable,         // no etcd endpoint answered in time
  uncertain,           // an etcd write was sent but its outcome is unknown (it may have committed)
  rejected,            // etcd answered the request with an error
  other,
};

const std::error_category& storage_category();
std::error_code make_error_code(errc code);

}  // namespace tenure::storage

template <>
struct std::is_error_code_enum<tenure::storage::errc> : std::true_type {};

namespace tenure::storage {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(errc code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status from(const rocksdb::Status& status);

  bool ok() const { return !code_; }
  std::error_code code() const { return code_; }
  // RocksDB's account of the failure; empty when ok.
  const std::string& message() const { return message_; }

 private:
  std::error_code code_;
  std::string message_;
};

}  // namespace tenure::storage
