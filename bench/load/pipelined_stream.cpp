#include "bench/load/pipelined_stream.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstring>

namespace tenure::bench {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kReadChunk = 64 * 1024;

}  // namespace

asio::awaitable<void> PipelinedStream::open(const std::string& path) {
  co_await socket_.async_connect(asio::local::stream_protocol::endpoint(path), asio::use_awaitable);
  open_ = true;
  asio::co_spawn(socket_.get_executor(), read_loop(), asio::detached);
}

void PipelinedStream::send(std::string_view bytes) {
  pending_.append(bytes);
  if (writing_ || !open_) return;
  writing_ = true;
  asio::co_spawn(socket_.get_executor(), write_loop(), asio::detached);
}

asio::awaitable<void> PipelinedStream::write_loop() {
  while (open_ && !pending_.empty()) {
    std::swap(pending_, outgoing_);
    auto [error, n] = co_await asio::async_write(socket_, asio::buffer(outgoing_),
                                                 asio::as_tuple(asio::use_awaitable));
    outgoing_.clear();
    if (error) close();
  }
  writing_ = false;
}

asio::awaitable<void> PipelinedStream::read_loop() {
  std::size_t end = 0;
  while (open_) {
    if (input_.size() - end < kReadChunk / 2)
      input_.resize(std::max(input_.size() * 2, kReadChunk));
    auto [error, n] =
        co_await socket_.async_read_some(asio::buffer(input_.data() + end, input_.size() - end),
                                         asio::as_tuple(asio::use_awaitable));
    if (error) {
      peer_closed_ = open_;
      break;
    }
    end += n;
    std::size_t used = consume(std::string_view(input_.data(), end));
    // Only the unconsumed tail moves: input_'s size is its room, far more than the bytes held.
    std::memmove(input_.data(), input_.data() + used, end - used);
    end -= used;
  }
  close();
}

void PipelinedStream::close() {
  if (!open_) return;
  open_ = false;
  boost::system::error_code ignored;
  socket_.close(ignored);
  pending_.clear();
  fail_all();
}

}  // namespace tenure::bench
