#include "core/base64.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace tenure;

TEST_CASE("base64 follows RFC 4648 both ways", "[core]") {
  // RFC 4648 §10.
  const char* vectors[][2] = {{"", ""},
                              {"f", "Zg=="},
                              {"fo", "Zm8="},
                              {"foo", "Zm9v"},
                              {"foob", "Zm9vYg=="},
                              {"fooba", "Zm9vYmE="},
                              {"foobar", "Zm9vYmFy"}};
  for (auto& [plain, coded] : vectors) {
    CHECK(base64(plain) == coded);
    CHECK(base64_decode(coded) == std::string(plain));
  }
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  CHECK(base64_decode(base64(bytes)) == bytes);
}

TEST_CASE("base64_decode refuses what is not base64", "[core]") {
  CHECK_FALSE(base64_decode("Zg="));
  CHECK_FALSE(base64_decode("Z==="));
  CHECK_FALSE(base64_decode("Zg==Zg=="));
  CHECK_FALSE(base64_decode("Zm9*"));
  CHECK_FALSE(base64_decode("Z=9v"));
}
