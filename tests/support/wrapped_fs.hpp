#pragma once
// The real file system with some of its writable files wrapped, so a test can hold, slow down or
// fail their writes and syncs.
#include <rocksdb/file_system.h>

#include <functional>
#include <memory>
#include <string>

namespace tenure::test {

class WrappedFileSystem : public rocksdb::FileSystemWrapper {
 public:
  // Takes each new writable file by name; returns it wrapped, or as it was.
  using Wrap = std::function<std::unique_ptr<rocksdb::FSWritableFile>(
      const std::string& name, std::unique_ptr<rocksdb::FSWritableFile> file)>;

  WrappedFileSystem(std::shared_ptr<rocksdb::FileSystem> base, Wrap wrap)
      : FileSystemWrapper(std::move(base)), wrap_(std::move(wrap)) {}
  const char* Name() const override { return "WrappedFileSystem"; }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    std::unique_ptr<rocksdb::FSWritableFile> file;
    auto s = FileSystemWrapper::NewWritableFile(name, options, &file, dbg);
    if (s.ok()) *result = wrap_(name, std::move(file));
    return s;
  }

 private:
  Wrap wrap_;
};

}  // namespace tenure::test
