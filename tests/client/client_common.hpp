#pragma once
// Shared by the client library's tests: a real tenured and a client connected to it.
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <thread>

#include "client/tenure_client.hpp"
#include "tests/e2e/daemon.hpp"

namespace client_test {

using namespace std::chrono_literals;

inline tenure::Client connect(const e2e::Daemon& d) {
  auto c = tenure::Client::connect({.socket = d.socket_path(), .timeout = 10s});
  INFO((c ? "" : c.error().message));
  REQUIRE(c);
  return std::move(c.value());
}

inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

}  // namespace client_test
