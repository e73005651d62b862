#include "storage/ledger_fs.hpp"

#include <rocksdb/file_system.h>

namespace tenure::storage {
namespace {

rocksdb::IOStatus plain(rocksdb::IOStatus s) {
  if (!s.IsNoSpace()) return s;
  rocksdb::IOStatus retryable = rocksdb::IOStatus::IOError(s.ToString());
  retryable.SetRetryable(true);
  return retryable;
}

class File : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using FSWritableFileOwnerWrapper::FSWritableFileOwnerWrapper;
  using IOStatus = rocksdb::IOStatus;
  using Opts = rocksdb::IOOptions;
  using Dbg = rocksdb::IODebugContext;

  IOStatus Append(const rocksdb::Slice& data, const Opts& o, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::Append(data, o, d));
  }
  IOStatus Append(const rocksdb::Slice& data, const Opts& o,
                  const rocksdb::DataVerificationInfo& info, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::Append(data, o, info, d));
  }
  IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset, const Opts& o,
                            Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::PositionedAppend(data, offset, o, d));
  }
  IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset, const Opts& o,
                            const rocksdb::DataVerificationInfo& info, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::PositionedAppend(data, offset, o, info, d));
  }
  IOStatus Truncate(uint64_t size, const Opts& o, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::Truncate(size, o, d));
  }
  IOStatus Close(const Opts& o, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::Close(o, d));
  }
  IOStatus Flush(const Opts& o, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::Flush(o, d));
  }
  IOStatus Sync(const Opts& o, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::Sync(o, d));
  }
  IOStatus Fsync(const Opts& o, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::Fsync(o, d));
  }
  IOStatus RangeSync(uint64_t offset, uint64_t n, const Opts& o, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::RangeSync(offset, n, o, d));
  }
  IOStatus Allocate(uint64_t offset, uint64_t len, const Opts& o, Dbg* d) override {
    return plain(FSWritableFileOwnerWrapper::Allocate(offset, len, o, d));
  }
};

class FileSystem : public rocksdb::FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  using IOStatus = rocksdb::IOStatus;
  const char* Name() const override { return "TenureLedgerFileSystem"; }

  IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& o,
                           std::unique_ptr<rocksdb::FSWritableFile>* result,
                           rocksdb::IODebugContext* d) override {
    // A WAL's preallocated space counts in its size, so that a sync of a write inside it need
    // not commit a new size (see wal_tail.hpp).
    rocksdb::FileOptions file_options = o;
    if (name.ends_with(".log")) file_options.fallocate_with_keep_size = false;
    return wrap(FileSystemWrapper::NewWritableFile(name, file_options, result, d), result);
  }
  IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& o,
                              std::unique_ptr<rocksdb::FSWritableFile>* result,
                              rocksdb::IODebugContext* d) override {
    return wrap(FileSystemWrapper::ReopenWritableFile(name, o, result, d), result);
  }
  IOStatus ReuseWritableFile(const std::string& name, const std::string& old,
                             const rocksdb::FileOptions& o,
                             std::unique_ptr<rocksdb::FSWritableFile>* result,
                             rocksdb::IODebugContext* d) override {
    return wrap(FileSystemWrapper::ReuseWritableFile(name, old, o, result, d), result);
  }
  IOStatus RenameFile(const std::string& from, const std::string& to, const rocksdb::IOOptions& o,
                      rocksdb::IODebugContext* d) override {
    return plain(FileSystemWrapper::RenameFile(from, to, o, d));
  }

 private:
  static IOStatus wrap(IOStatus s, std::unique_ptr<rocksdb::FSWritableFile>* result) {
    if (s.ok()) *result = std::make_unique<File>(std::move(*result));
    return plain(s);
  }
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> ledger_file_system(std::shared_ptr<rocksdb::FileSystem> base) {
  return std::make_shared<FileSystem>(std::move(base));
}

}  // namespace tenure::storage
