#pragma once
// The lines of a peer link's byte stream: bytes are read into space(), and filled() cuts out
// each complete line, holding back a partial one up to a bound.
#include <boost/asio/buffer.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace tenure {

class LineBuffer {
 public:
  explicit LineBuffer(std::size_t max_line) : max_line_(max_line), chunk_(kChunk) {}

  boost::asio::mutable_buffer space() { return boost::asio::buffer(chunk_); }
  // After `n` bytes were read into space(): calls `on_line(line)` for each complete line, in
  // order, until it returns false. False when what is left of a line is longer than the bound.
  template <typename OnLine>
  bool filled(std::size_t n, OnLine&& on_line) {
    input_.append(chunk_.data(), n);
    std::size_t begin = 0;
    for (std::size_t end; (end = input_.find('\n', begin)) != std::string::npos;) {
      bool more = on_line(std::string_view(input_).substr(begin, end - begin));
      begin = end + 1;
      if (!more) break;
    }
    input_.erase(0, begin);
    return input_.size() <= max_line_;
  }

 private:
  static constexpr std::size_t kChunk = 64 * 1024;

  const std::size_t max_line_;
  std::vector<char> chunk_;
  std::string input_;
};

}  // namespace tenure
