#pragma once
// What `tenure --version` and `tenured --version` print.

namespace tenure {

// The project's version, and the git commit it was configured from when built in a checkout:
// "0.1.0 (git 9cbc6f7a1b2c)".
const char* build_version();

}  // namespace tenure
