// Fuzzes the reading of a WAL's tail before the ledger opens (storage/wal_tail.hpp): whatever a
// damaged or crashed WAL holds, the scan never crashes, and a cut only ever removes a tail of
// zeros (and the record they cut short), never a byte of the records before it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "storage/wal_tail.hpp"
#include "tests/support/temp_dir.hpp"

namespace {

// Removed at exit (the end of a run or of a replay), so runs leave nothing in $TMPDIR.
const std::filesystem::path& scratch() {
  static const tenure::test::TempDir dir;
  return dir.path();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tenure::storage;
  std::string wal = (scratch() / "000001.log").string();
  {
    std::ofstream out(wal, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) std::abort();
  }
  WalTail tail;
  if (!scan_wal_tail(wal, tail).ok()) std::abort();
  if (tail.size != size || tail.records > size || tail.written > size) std::abort();
  if (tail.cut_at != size && tail.cut_at != tail.records) std::abort();
  std::uint64_t cut = 0;
  if (!cut_wal_tails(scratch().string(), cut).ok()) std::abort();
  if (std::filesystem::file_size(wal) != size - cut) std::abort();
  // What goes is the file's zeros after its records, and at most one record they cut short.
  if (cut > 0) {
    if (tail.size - cut != tail.records || data[size - 1] != 0) std::abort();
    if (tail.written > tail.records && tail.written - tail.records > 7 + 65535) std::abort();
  }
  return 0;
}
