#include "tests/unit/engine_fixture.hpp"

#include <spdlog/spdlog.h>

#include <mutex>
#include <stdexcept>

namespace tenure::test {

std::vector<rocksdb::ColumnFamilyDescriptor> ledger_families() {
  return {{rocksdb::kDefaultColumnFamilyName, {}},
          {"leases", {}},
          {"tenures", {}},
          {"events", {}},
          {"meta", {}}};
}

void with_raw_ledger(const std::string& dir,
                     const std::function<rocksdb::Status(
                         rocksdb::DB&, const std::vector<rocksdb::ColumnFamilyHandle*>&)>& look) {
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(rocksdb::Options(), dir, ledger_families(), &handles, &raw);
  if (!s.ok()) throw std::runtime_error("cannot open the ledger: " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  s = look(*db, handles);
  for (auto* h : handles) {
    rocksdb::Status destroyed = db->DestroyColumnFamilyHandle(h);
    if (s.ok()) s = destroyed;
  }
  if (rocksdb::Status closed = db->Close(); s.ok()) s = closed;
  if (!s.ok()) throw std::runtime_error("cannot use the ledger: " + s.ToString());
}

void put_raw(const std::string& dir, std::size_t family, const std::string& key,
             const std::string& value) {
  with_raw_ledger(dir, [&](rocksdb::DB& db, const auto& handles) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    return db.Put(wo, handles.at(family), key, value);
  });
}

EngineFixture::EngineFixture(EngineConfig config, const Clock* clock, OpenLedger open_ledger)
    : clock_(clock ? clock : &mock_),
      config_(std::move(config)),
      open_ledger_(std::move(open_ledger)),
      work_(io_.get_executor()) {
  spdlog::set_level(spdlog::level::warn);
  config_.data_dir = dir_.str("ledger");
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  open();
}

EngineFixture::~EngineFixture() {
  close();
  work_.reset();
  io_.stop();
  for (auto& t : threads_) t.join();
}

void EngineFixture::open() {
  std::string error;
  engine_ = open_ledger_ ? Engine::open(io_, *clock_, config_, open_ledger_(config_))
                         : Engine::open(io_, *clock_, config_, error);
  if (!engine_) throw std::runtime_error("open failed: " + error);
  if (!engine_->start(error)) throw std::runtime_error("start failed: " + error);
}

void EngineFixture::close() {
  if (!engine_) return;
  engine_->stop();
  engine_.reset();
}

void EngineFixture::reopen() {
  close();
  open();
}

Caller EngineFixture::caller(Principal principal) const {
  return Caller{principal, principal == 0, 0, clock_->now()};
}

AcquireResult EngineFixture::acquire(const std::string& key, const std::string& owner,
                                     std::optional<Millis> ttl, Millis wait_ms,
                                     Millis lock_delay_ms, Principal principal) {
  AcquireRequest r;
  r.key = key;
  r.params.owner = owner;
  r.params.ttl_ms = ttl;
  r.params.lock_delay_ms = lock_delay_ms;
  r.wait_ms = wait_ms;
  r.caller = caller(principal);
  return call(*engine_, &Engine::acquire, std::move(r));
}

AcquireResult EngineFixture::acquire_on(const std::string& key, const std::string& owner,
                                        Millis ttl, ConnId conn) {
  AcquireRequest r;
  r.key = key;
  r.params.owner = owner;
  r.params.ttl_ms = ttl;
  r.caller = caller();
  r.caller.conn = conn;
  return call(*engine_, &Engine::acquire, std::move(r));
}

AcquireResult EngineFixture::acquire_open_ended(const std::string& key, const std::string& owner) {
  AcquireRequest r;
  r.key = key;
  r.params.owner = owner;
  r.params.open_ended = true;
  r.caller = caller();
  return call(*engine_, &Engine::acquire, std::move(r));
}

std::vector<AcquireResult> EngineFixture::acquire_burst(const std::string& prefix, int n,
                                                        Millis ttl) {
  std::mutex mutex;
  std::vector<AcquireResult> results;
  std::promise<void> all_in;
  for (int i = 0; i < n; ++i) {
    AcquireRequest r;
    r.key = prefix + std::to_string(i);
    r.params.owner = "o";
    r.params.ttl_ms = ttl;
    r.caller = caller();
    engine_->acquire(std::move(r), [&](AcquireResult result) {
      std::lock_guard lock(mutex);
      results.push_back(std::move(result));
      if (static_cast<int>(results.size()) == n) all_in.set_value();
    });
  }
  all_in.get_future().wait();
  std::lock_guard lock(mutex);
  return results;
}

HolderResult EngineFixture::renew(const std::string& key, const std::string& owner,
                                  std::optional<Millis> ttl, std::optional<Token> token,
                                  Principal principal) {
  return call(*engine_, &Engine::renew,
              RenewRequest{key, HolderParams{owner, token, 0, false}, ttl, caller(principal)});
}

HolderResult EngineFixture::release(const std::string& key, const std::string& owner,
                                    std::optional<Token> token, Principal principal) {
  return call(*engine_, &Engine::release,
              ReleaseRequest{key, HolderParams{owner, token, 0, false}, caller(principal)});
}

HolderResult EngineFixture::revoke(const std::string& key) {
  return call(*engine_, &Engine::revoke, RevokeRequest{key, "test", "uid:0", caller(0)});
}

HolderResult EngineFixture::check(const std::string& key, Token token,
                                  std::optional<std::string> owner) {
  return call(*engine_, &Engine::check, CheckRequest{key, token, std::move(owner), caller()});
}

GetResult EngineFixture::get(const std::string& key) {
  return call(*engine_, &Engine::get, GetRequest{key, caller()});
}

KeepaliveResult EngineFixture::keepalive(const std::string& owner, std::optional<Millis> ttl) {
  return call(*engine_, &Engine::keepalive, KeepaliveRequest{owner, ttl, caller()});
}

HistoryResult EngineFixture::history(const std::string& key, std::size_t limit, Token before) {
  return call(*engine_, &Engine::history, HistoryRequest{key, limit, before, caller()});
}

ListResult EngineFixture::list(const std::string& prefix, std::size_t limit,
                               const std::string& after) {
  return call(*engine_, &Engine::list, ListRequest{prefix, after, limit, caller()});
}

void EngineFixture::expire_due() { engine_->fire_due_timers(); }

}  // namespace tenure::test
