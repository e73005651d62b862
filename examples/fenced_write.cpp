// Guards a file write with a fencing token. The file keeps the highest token it accepted and
// refuses a lower one, so a holder that lost its lease (paused, partitioned) and writes late
// cannot clobber the work of the next holder (contract §8).
#include <cstdio>
#include <fstream>
#include <string>

#include "client/tenure_client.hpp"

using namespace std::chrono_literals;

// The guarded resource.
class FencedFile {
 public:
  explicit FencedFile(std::string path) : path_(std::move(path)) {}
  bool write(std::uint64_t token, const std::string& text) {
    std::uint64_t highest = 0;
    std::ifstream(path_ + ".token") >> highest;
    if (token < highest) return false;  // a stale holder
    std::ofstream(path_) << text;
    std::ofstream(path_ + ".token") << token;
    return true;
  }

 private:
  std::string path_;
};

int main(int argc, char** argv) {
  FencedFile file(argc > 1 ? argv[1] : "report.txt");
  auto client = tenure::Client::connect();  // $TENURE_SOCKET, else the user's or system's
  if (!client) return std::fprintf(stderr, "%s\n", client.error().message.c_str()), 1;
  auto watch = client->watch({.prefix = "example/"});
  if (!watch) return std::fprintf(stderr, "%s\n", watch.error().message.c_str()), 1;

  std::uint64_t first = 0;
  for (const char* text : {"first draft", "final"}) {
    auto lease = client->acquire_lease("example/report", {.ttl = 15s, .wait = 5s});
    if (!lease) return std::fprintf(stderr, "%s\n", lease.error().message.c_str()), 1;
    if (!first) first = lease->token();
    bool live = bool(lease->check());  // the server's fencing check, right before acting
    bool written = live && file.write(lease->token(), text);
    std::printf("token %llu writes \"%s\": %s\n", (unsigned long long)lease->token(), text,
                written ? "accepted" : "rejected");
  }  // each lease is released here, with its token
  bool stale = file.write(first, "late write");
  std::printf("token %llu writes late: %s\n", (unsigned long long)first,
              stale ? "accepted" : "rejected");

  for (int i = 0; i < 4; ++i) {
    auto event = watch->next(5s);
    if (!event) return std::fprintf(stderr, "%s\n", event.error().message.c_str()), 1;
    std::printf("event %s %s token %llu\n", event->type.c_str(), event->key.c_str(),
                (unsigned long long)event->token);
  }
  return stale ? 1 : 0;
}
