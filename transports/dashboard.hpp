#pragma once
// The dashboard page served at GET / (§7a): one self-contained HTML document.
#include <string_view>

namespace tenure {

std::string_view dashboard_html();

}  // namespace tenure
