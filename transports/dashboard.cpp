// The dashboard page served at GET / by tenured's HTTP listener. Its source of truth is
// transports/dashboard/index.html: the build turns it into dashboard_html.inc, a raw string
// literal (see transports/dashboard/embed.cmake), so changing the page needs only a rebuild.
#include "transports/dashboard.hpp"

namespace tenure {

namespace {

constexpr std::string_view kDashboardHtml =
#include "dashboard_html.inc"
    ;

}  // namespace

std::string_view dashboard_html() { return kDashboardHtml; }

}  // namespace tenure
