#include "storage/errc.hpp"

#include <rocksdb/status.h>

namespace tenure::storage {
namespace {

class Category : public std::error_category {
 public:
  const char* name() const noexcept override { return "tenure.storage"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::io_error:
        return "I/O error";
      case errc::no_space:
        return "no space left on the ledger's disk";
      case errc::corruption:
        return "corrupted ledger data";
      case errc::missing_file:
        return "a ledger file is missing";
      case errc::damaged_ledger:
        return "the ledger cannot be recovered completely";
      case errc::in_use:
        return "the ledger is in use by another process";
      case errc::unsupported_schema:
        return "unsupported ledger schema";
      case errc::busy:
        return "the ledger is busy";
      case errc::unreachable:
        return "no etcd endpoint answered";
      case errc::uncertain:
        return "the outcome of an etcd write is unknown";
      case errc::rejected:
        return "etcd refused the request";
      case errc::other:
        break;
    }
    return "storage error";
  }
};

}  // namespace

const std::error_category& storage_category() {
  static const Category category;
  return category;
}

std::error_code make_error_code(errc code) { return {static_cast<int>(code), storage_category()}; }

Status Status::from(const rocksdb::Status& s) {
  if (s.ok()) return {};
  errc code = errc::other;
  if (s.IsNoSpace()) {
    code = errc::no_space;
  } else if (s.IsCorruption()) {
    code = errc::corruption;
  } else if (s.IsPathNotFound()) {
    code = errc::missing_file;
  } else if (s.IsIOError()) {
    code = errc::io_error;
  } else if (s.IsBusy() || s.IsTryAgain() || s.IsIncomplete()) {
    code = errc::busy;
  }
  return Status(code, s.ToString());
}

}  // namespace tenure::storage
