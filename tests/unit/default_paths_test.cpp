#include "core/default_paths.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace {

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~EnvVar() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void touch(const std::string& path) { std::ofstream(path).put('x'); }

}  // namespace

TEST_CASE("the socket is the flag, TENURE_SOCKET, the user's, the system's, else the user's",
          "[core]") {
  tenure::test::TempDir home;
  EnvVar h("HOME", home.path().c_str());
  EnvVar x("XDG_STATE_HOME", nullptr);
  EnvVar t("TENURE_SOCKET", nullptr);
  std::string user = home.str(".local/state/tenure/tenured.sock");
  std::string system = home.str("run/tenured.sock");

  // Neither exists: the user's, naming the system one for the error.
  auto c = tenure::choose_socket(std::nullopt, system);
  REQUIRE(c);
  CHECK(c->path == user);
  CHECK(c->also_looked_for == system);

  std::filesystem::create_directories(home.path() / "run");
  touch(system);
  c = tenure::choose_socket(std::nullopt, system);
  CHECK(c->path == system);
  CHECK_FALSE(c->also_looked_for);

  std::filesystem::create_directories(home.path() / ".local/state/tenure");
  touch(user);
  c = tenure::choose_socket(std::nullopt, system);
  CHECK(c->path == user);
  CHECK_FALSE(c->also_looked_for);

  {
    EnvVar e("TENURE_SOCKET", "/from/env.sock");
    CHECK(tenure::choose_socket(std::nullopt, system)->path == "/from/env.sock");
    CHECK(tenure::choose_socket("/given.sock", system)->path == "/given.sock");
  }

  // Without HOME only the system socket can be told.
  EnvVar no_home("HOME", nullptr);
  CHECK(tenure::choose_socket(std::nullopt, system)->path == system);
  CHECK_FALSE(tenure::choose_socket(std::nullopt, home.str("absent.sock")));
}
