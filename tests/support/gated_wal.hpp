#pragma once
// WAL syncs that a test holds (to see what goes on while one waits), slows down or fails.
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tests/support/wrapped_fs.hpp"

namespace tenure::test {

struct SyncGate {
  std::mutex mutex;
  std::condition_variable changed;
  bool hold = false;
  bool fail = false;
  int waiting = 0;
  int passes = 0;               // with `fail`: syncs that succeed before the failing ones
  std::atomic<int> slow_ms{0};  // each sync takes this long, as on a disk

  rocksdb::IOStatus sync() {
    std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms.load()));
    std::unique_lock lock(mutex);
    ++waiting;
    changed.notify_all();
    changed.wait(lock, [&] { return !hold; });
    --waiting;
    if (fail && passes > 0) {
      --passes;
      return rocksdb::IOStatus::OK();
    }
    // As a full disk fails it (see ledger_fs.hpp): retryable.
    return fail ? rocksdb::IOStatus::NoSpace("test: fsync failed") : rocksdb::IOStatus::OK();
  }
  void set(bool h, bool f, int pass_first = 0) {
    std::lock_guard lock(mutex);
    hold = h;
    fail = f;
    passes = pass_first;
    changed.notify_all();
  }
  bool wait_for_sync() {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(10), [&] { return waiting > 0; });
  }
};

class GatedWal : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  GatedWal(std::unique_ptr<rocksdb::FSWritableFile> file, SyncGate& gate)
      : FSWritableFileOwnerWrapper(std::move(file)), gate_(gate) {}
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = gate_.sync(); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Sync(options, dbg);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = gate_.sync(); !s.ok()) return s;
    return FSWritableFileOwnerWrapper::Fsync(options, dbg);
  }

 private:
  SyncGate& gate_;
};

// The real file system, with the WAL files' syncs going through `gate`.
class GatedFileSystem : public WrappedFileSystem {
 public:
  GatedFileSystem(std::shared_ptr<rocksdb::FileSystem> base, SyncGate& gate)
      : WrappedFileSystem(
            std::move(base),
            [&gate](const std::string& name, std::unique_ptr<rocksdb::FSWritableFile> file)
                -> std::unique_ptr<rocksdb::FSWritableFile> {
              if (!name.ends_with(".log")) return file;
              return std::make_unique<GatedWal>(std::move(file), gate);
            }) {}
};

}  // namespace tenure::test
