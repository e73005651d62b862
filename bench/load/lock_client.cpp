#include "bench/load/lock_client.hpp"

#include "bench/load/etcd_client.hpp"
#include "bench/load/redis_client.hpp"
#include "bench/load/tenure_client.hpp"

namespace tenure::bench {

std::unique_ptr<LockClient> make_client(const Config& config, boost::asio::any_io_executor ex) {
  switch (config.target) {
    case Target::redis:
      return make_redis_client(config, std::move(ex));
    case Target::etcd:
      return make_etcd_client(config, std::move(ex));
    case Target::tenure:
      break;
  }
  return make_tenure_client(config, std::move(ex));
}

}  // namespace tenure::bench
