#!/usr/bin/env bash
# zsh loads packaging/completion/_tenure both ways users get it: sourced, and found on $fpath by
# compinit (as from share/zsh/vendor-completions). Skipped without zsh, which is not a dependency.
# Usage: zsh_completion.sh SOURCE_DIR
set -euo pipefail
file=$1/packaging/completion/_tenure
if ! command -v zsh >/dev/null; then
  echo "zsh is not installed; skipped"
  exit 77
fi
zsh -n "$file"
zsh -fc "autoload -U compinit; compinit -u -D; source '$file'; [[ \$_comps[tenure] == _tenure ]]"
zsh -fc "fpath=('${file%/*}' \$fpath); autoload -U compinit; compinit -u -D
         [[ \$_comps[tenure] == _tenure ]] && autoload +X _tenure"
echo "zsh loads _tenure"
