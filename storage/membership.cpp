#include "storage/membership.hpp"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <thread>

#include "core/json_writer.hpp"
#include "core/parse_number.hpp"
#include "core/thread_name.hpp"

namespace tenure::storage {
namespace {

using Clock = std::chrono::steady_clock;

std::string cluster_config() {
  std::string out;
  JsonWriter(out).begin_object().field("slots", static_cast<std::uint64_t>(kSlots)).end_object();
  return out;
}

// The slot count a P/config value names, 0 if it names none.
std::uint64_t config_slots(const std::string& value) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(value);
  std::uint64_t slots = 0;
  auto doc = parser.iterate(json);
  if (doc.error() || doc["slots"].get_uint64().get(slots)) return 0;
  return slots;
}

// The peer address in a P/nodes/ID value, empty if it has none.
std::string node_peer(const std::string& value) {
  simdjson::ondemand::parser parser;
  simdjson::padded_string json(value);
  std::string_view peer;
  auto doc = parser.iterate(json);
  if (doc.error() || doc["peer"].get_string().get(peer)) return {};
  return std::string(peer);
}

std::string random_secret() {
  std::random_device random;  // the kernel's generator
  std::string hex;
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) {
    auto byte = static_cast<unsigned>(random() & 0xff);
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 0xf];
  }
  return hex;
}

// Creates `key` with `value` unless it exists; `kv` is what it holds then.
Status create_once(EtcdClient& etcd, const std::string& key, const std::string& value,
                   KeyValue& kv) {
  EtcdTxn txn;
  txn.compare_create_revision(key, 0);
  txn.put(key, value);
  EtcdTxnResult result;
  if (Status status = etcd.txn(txn, result); !status.ok()) return status;
  return etcd.get(key, kv);
}

}  // namespace

bool valid_node_id(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

Membership::Membership(EtcdClient& etcd, SlotClaims& claims, MembershipOptions options,
                       Handlers handlers)
    : etcd_(etcd), claims_(claims), options_(std::move(options)), handlers_(std::move(handlers)) {
  claims_.set_lost_handler([this](std::uint32_t slot, std::int64_t create_revision) {
    std::lock_guard lock(mutex_);
    reported_lost_.emplace_back(slot, create_revision);
    wake_.notify_all();
  });
}

Membership::~Membership() { stop(); }

std::string Membership::slot_key(std::uint32_t slot) const {
  char digits[8];
  std::snprintf(digits, sizeof digits, "%03u", slot);
  return options_.prefix + "/slots/" + digits;
}

Status Membership::ensure_cluster_keys() {
  KeyValue kv;
  if (Status status = create_once(etcd_, options_.prefix + "/config", cluster_config(), kv);
      !status.ok()) {
    return status;
  }
  if (std::uint64_t slots = config_slots(kv.value); slots != kSlots) {
    return Status(errc::rejected, "the cluster at " + options_.prefix + " has " +
                                      std::to_string(slots) + " slots (" + kv.value +
                                      "), this tenured " + std::to_string(kSlots));
  }
  if (Status status = create_once(etcd_, options_.prefix + "/secret", random_secret(), kv);
      !status.ok()) {
    return status;
  }
  secret_ = kv.value;
  return {};
}

void Membership::kept_alive(Clock::time_point sent) {
  last_keepalive_ = sent;
  next_keepalive_ = sent + options_.lease_ttl / 3;
  lease_sure_until_.store((sent + options_.lease_ttl).time_since_epoch().count());
}

Status Membership::register_node() {
  Clock::time_point sent = Clock::now();
  std::int64_t id = 0;
  auto ttl = std::chrono::duration_cast<std::chrono::seconds>(options_.lease_ttl).count();
  if (Status status = etcd_.lease_grant(std::max<std::int64_t>(ttl, 1), id); !status.ok()) {
    return status;
  }
  std::string value;
  JsonWriter(value).begin_object().field("peer", options_.peer).end_object();
  // Created, never overwritten: the entry of a running node of the same id is its, not ours (and
  // goes when its lease does, which our lease's end must not take along).
  std::string key = options_.prefix + "/nodes/" + options_.node_id;
  EtcdTxn txn;
  txn.compare_create_revision(key, 0);
  txn.put(key, value, id);
  txn.on_failure_range(key);
  EtcdTxnResult result;
  Status status = etcd_.txn(txn, result);
  if (status.ok() && !result.succeeded) {
    std::string peer;
    if (!result.ranges.empty() && !result.ranges[0].kvs.empty()) {
      peer = node_peer(result.ranges[0].kvs[0].value);
    }
    status = Status(errc::in_use, "the node id " + options_.node_id +
                                      " is taken: a running node (peer " + peer + ") has " + key);
  }
  if (!status.ok()) {
    (void)etcd_.lease_revoke(id);
    return status;
  }
  lease_ = id;
  kept_alive(sent);
  spdlog::info("cluster: node {} registered with etcd lease {:x}", options_.node_id, id);
  return {};
}

Status Membership::open() { return ensure_cluster_keys(); }

Status Membership::start() {
  // A node restarted after a crash finds its old entry until that lease runs out: it waits that
  // long. An entry still there after it is another running node's.
  auto give_up = Clock::now() + options_.lease_ttl + std::chrono::seconds(1);
  Status status = register_node();
  while (status.code() == errc::in_use && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    status = register_node();
  }
  if (!status.ok()) return status;
  thread_ = std::thread([this] {
    name_this_thread("membership");
    run();
  });
  return {};
}

void Membership::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  claims_.set_lost_handler({});
  lose_everything("the node is stopping");
  if (lease_ != 0) {
    // The claims and the node's entry go with the lease: others take the slots over now.
    if (Status status = etcd_.lease_revoke(lease_); !status.ok()) {
      spdlog::warn("cluster: cannot revoke the etcd lease ({}); it expires by itself",
                   status.message());
    }
    lease_ = 0;
  }
}

void Membership::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    std::vector<std::pair<std::uint32_t, std::int64_t>> lost;
    lost.swap(reported_lost_);
    lock.unlock();
    for (auto [slot, revision] : lost) {
      // The ledger found the claim gone (SlotClaims forgot it already); a newer claim stays.
      if (!claims_.owns(slot)) lose(slot, "a write found its claim gone");
    }
    Clock::time_point now = Clock::now();
    if (lease_ == 0) {
      if (Status status = register_node(); !status.ok()) {
        spdlog::warn("cluster: cannot register with etcd: {}", status.message());
      }
    } else if (now >= next_keepalive_) {
      keep_alive(now);
    }
    std::map<std::string, std::string> nodes;
    std::vector<SlotView> slots;
    SlotView writer;
    if (lease_ != 0 && read_view(nodes, slots, writer).ok()) reconcile(nodes, slots, writer);
    lock.lock();
    wake_.wait_for(lock, options_.poll, [&] { return stopping_ || !reported_lost_.empty(); });
  }
}

void Membership::keep_alive(Clock::time_point now) {
  std::int64_t ttl = 0;
  Status status = etcd_.lease_keepalive(lease_, ttl);
  if (status.ok() && ttl > 0) {
    kept_alive(now);
    return;
  }
  if (status.ok()) {
    // Expired while this node was paused or cut off: its claims are gone with it.
    lose_everything("the etcd lease expired");
  } else if (now - last_keepalive_ >= options_.lease_ttl) {
    // etcd has not heard from this node for a whole TTL: it must assume the lease gone.
    lose_everything("etcd unreachable for longer than the lease TTL");
  } else {
    spdlog::warn("cluster: keepalive failed: {}", status.message());
    return;
  }
  lease_ = 0;
}

Status Membership::read_view(std::map<std::string, std::string>& nodes,
                             std::vector<SlotView>& slots, SlotView& writer) const {
  KeyValue kv;
  if (Status status = etcd_.get(writer_key(), kv); !status.ok()) return status;
  writer = kv.create_revision == 0 ? SlotView{}
                                   : SlotView{std::move(kv.value), kv.create_revision, kv.lease};
  std::string node_prefix = options_.prefix + "/nodes/";
  RangeResult range;
  if (Status status = etcd_.range({node_prefix, prefix_end(node_prefix), 0, false}, range);
      !status.ok()) {
    return status;
  }
  for (KeyValue& kv : range.kvs) nodes[kv.key.substr(node_prefix.size())] = node_peer(kv.value);
  std::string slot_prefix = options_.prefix + "/slots/";
  if (Status status = etcd_.range({slot_prefix, prefix_end(slot_prefix), 0, false}, range);
      !status.ok()) {
    return status;
  }
  slots.assign(kSlots, SlotView{});
  for (KeyValue& kv : range.kvs) {
    std::string_view digits = std::string_view(kv.key).substr(slot_prefix.size());
    auto slot = parse_number<std::uint32_t>(digits);
    if (!slot || *slot >= kSlots) continue;
    slots[*slot] = SlotView{std::move(kv.value), kv.create_revision, kv.lease};
  }
  return {};
}

void Membership::reconcile(const std::map<std::string, std::string>& nodes,
                           const std::vector<SlotView>& slots, const SlotView& writer) {
  {
    std::lock_guard lock(mutex_);
    nodes_ = nodes;
    slots_ = slots;
  }
  // Our entry gone: the lease likely went with it, ask etcd now.
  if (!nodes.contains(options_.node_id)) next_keepalive_ = Clock::now();
  // Claims of ours that are gone or were made again by someone: lost. Said once, as loudly as
  // lose_everything says it: after a pause this is often how a node first learns of it.
  std::size_t gone = 0;
  for (std::uint32_t slot : claims_.owned()) {
    if (slots[slot].create_revision != claims_.claim_revision(slot).value_or(0)) {
      lose(slot, "its claim is gone from etcd");
      ++gone;
    }
  }
  if (gone > 0) spdlog::warn("cluster: letting {} slots go: their claims are gone from etcd", gone);
  std::vector<std::uint32_t> free;
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
    const SlotView& view = slots[slot];
    if (view.node.empty()) {
      free.push_back(slot);
    } else if (view.node == options_.node_id && view.lease == lease_ && !claims_.owns(slot)) {
      // Claimed under our lease by a transaction whose answer was lost: ours all the same.
      adopt(slot, view.create_revision);
    }
  }
  // Ours under our lease (a claim whose answer was lost included), or free and claimed now.
  bool writer_here = writer.node.empty()
                         ? claim_writer()
                         : writer.node == options_.node_id && writer.lease == lease_;
  if (writer_here) {
    claim_all(free);
    return;
  }
  if (writer.node.empty() || claims_.owned().empty()) return;
  // Another node writes: it takes our slots over as soon as they are free.
  spdlog::info("cluster: handing {} slots to the writer, node {}", claims_.owned().size(),
               writer.node);
  for (std::uint32_t slot : claims_.owned()) give_back(slot);
}

bool Membership::claim_writer() {
  EtcdTxn txn;
  txn.compare_create_revision(writer_key(), 0);
  txn.put(writer_key(), options_.node_id, lease_);
  EtcdTxnResult result;
  if (Status status = etcd_.txn(txn, result); !status.ok()) {
    // An uncertain claim is found at the next read of P/writer, under our lease.
    spdlog::warn("cluster: claiming the writer failed: {}", status.message());
    next_keepalive_ = Clock::now();
    return false;
  }
  if (result.succeeded) spdlog::info("cluster: node {} is the writer", options_.node_id);
  return result.succeeded;
}

void Membership::claim_all(const std::vector<std::uint32_t>& free) {
  if (free.empty()) return;
  // One etcd round for every slot a failover frees, rather than one per slot.
  EtcdTxn txn;
  for (std::uint32_t slot : free) txn.compare_create_revision(slot_key(slot), 0);
  for (std::uint32_t slot : free) txn.put(slot_key(slot), options_.node_id, lease_);
  EtcdTxnResult result;
  if (Status status = etcd_.txn(txn, result); !status.ok()) {
    // Uncertain claims are found at the next read of P/slots/, under our lease.
    spdlog::warn("cluster: claiming {} slots failed: {}", free.size(), status.message());
    next_keepalive_ = Clock::now();
    return;
  }
  std::size_t claimed = 0;
  for (std::uint32_t slot : free) {
    // Taking many slots over takes a while: the lease must not lapse meanwhile.
    if (Clock::time_point now = Clock::now(); now >= next_keepalive_) keep_alive(now);
    if (lease_ == 0) return;
    if (result.succeeded) {
      adopt(slot, result.revision);  // every put made its key at the txn's revision
      ++claimed;
    } else if (claim(slot)) {
      ++claimed;  // a node that is not the writer (yet) holds some: the others one by one
    }
  }
  spdlog::info("cluster: took {} slots over, now {} of {}", claimed, claims_.owned().size(),
               kSlots);
}

bool Membership::claim(std::uint32_t slot) {
  EtcdTxn txn;
  std::string key = slot_key(slot);
  txn.compare_create_revision(key, 0);
  txn.put(key, options_.node_id, lease_);
  EtcdTxnResult result;
  if (Status status = etcd_.txn(txn, result); !status.ok()) {
    // An uncertain claim is found in the next read of P/slots/ under our lease (reconcile). A
    // refused one may mean the lease is gone: ask etcd now.
    spdlog::warn("cluster: claiming slot {} failed: {}", slot, status.message());
    next_keepalive_ = Clock::now();
    return false;
  }
  if (!result.succeeded) return false;  // someone was quicker
  adopt(slot, result.revision);         // the put made the key at the txn's revision
  return true;
}

void Membership::adopt(std::uint32_t slot, std::int64_t create_revision) {
  claims_.claim(slot, create_revision);  // before recovery: its writes compare the claim
  std::string error;
  if (!handlers_.adopt(slot, error)) {
    spdlog::warn("cluster: cannot take slot {} over ({}); giving its claim back", slot, error);
    give_back(slot);
    return;
  }
  if (claims_.claim_revision(slot) != create_revision) return;  // lost meanwhile
  std::lock_guard lock(mutex_);
  local_[slot] = true;
  slots_[slot] = SlotView{options_.node_id, create_revision, lease_};
  spdlog::debug("cluster: slot {} taken over", slot);
}

void Membership::give_back(std::uint32_t slot) {
  std::optional<std::int64_t> revision = claims_.claim_revision(slot);
  lose(slot, "handed to the writer");
  if (!revision) return;
  // Only our claim: if it is gone already, someone else's stays.
  EtcdTxn txn;
  std::string key = slot_key(slot);
  txn.compare_create_revision(key, *revision);
  txn.delete_key(key);
  EtcdTxnResult result;
  if (Status status = etcd_.txn(txn, result); !status.ok()) {
    spdlog::warn("cluster: cannot delete the claim of slot {}: {}", slot, status.message());
  }
}

void Membership::lose(std::uint32_t slot, const char* why) {
  bool was_local = false;
  {
    std::lock_guard lock(mutex_);
    was_local = local_[slot];
    local_[slot] = false;  // routing stops first
    slots_[slot] = SlotView{};
  }
  claims_.release(slot);
  handlers_.drop(slot);
  if (was_local) spdlog::debug("cluster: slot {} let go: {}", slot, why);
}

void Membership::lose_everything(const char* why) {
  if (std::size_t owned = slots_owned(); owned > 0) {
    spdlog::warn("cluster: letting all {} slots go: {}", owned, why);
  }
  for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
    bool local;
    {
      std::lock_guard lock(mutex_);
      local = local_[slot];
    }
    if (local || claims_.owns(slot)) lose(slot, why);
  }
}

std::string Membership::owner(std::uint32_t slot) const {
  if (slot >= kSlots) return {};
  std::lock_guard lock(mutex_);
  if (local_[slot]) {
    // Ours only while etcd surely still holds our lease; else nobody's until the thread knows.
    bool sure = Clock::now().time_since_epoch().count() < lease_sure_until_.load();
    return sure ? options_.node_id : std::string();
  }
  // Ours in etcd but not adopted yet, or not ours any more: nobody to route to for now.
  const std::string& node = slots_[slot].node;
  if (node == options_.node_id || !nodes_.contains(node)) return {};
  return node;
}

std::vector<ClusterView::Node> Membership::nodes() const {
  std::lock_guard lock(mutex_);
  std::vector<Node> out;
  for (const auto& [id, peer] : nodes_) out.push_back(Node{id, peer});
  return out;
}

std::size_t Membership::slots_owned() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count(local_.begin(), local_.end(), true));
}

}  // namespace tenure::storage
