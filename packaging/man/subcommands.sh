#!/bin/sh
# Writes a help2man include file with the --help of each of tenure's subcommands, so that
# tenure(1) documents them from the same source as the program itself.
# Usage: subcommands.sh TENURE_BINARY OUTPUT
set -eu
tenure=$1
out=$2
{
  echo "[SUBCOMMANDS]"
  for sub in acquire renew release keepalive check get list history revoke stats ping watch \
             run hold "admin backup"; do
    echo ".SS $sub"
    echo ".nf"
    # The exit codes are tenure's, in the main section, not repeated per subcommand. roff: a
    # leading dot or quote would be read as a request, a backslash as an escape.
    # shellcheck disable=SC2086 # "admin backup" is two words
    "$tenure" $sub --help | sed -e '/^Exit codes:/,$d' -e 's/\\/\\e/g' -e "s/^[.']/\\\\\\&&/"
    echo ".fi"
  done
  echo "[SEE ALSO]"
  echo ".BR tenured (8)"
} > "$out"
