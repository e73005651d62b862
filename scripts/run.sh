#!/usr/bin/env bash
# Installs what is missing, builds, and starts tenured in the foreground on the default data dir
# ($XDG_STATE_HOME/tenure or ~/.local/state/tenure). Extra args go to tenured.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/apps/tenured/tenured "$@"
