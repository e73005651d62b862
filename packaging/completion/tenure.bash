# bash completion for tenure(1): subcommands, their options, live keys from `tenure list`, and
# the command after `run ... --`.

_tenure_keys() {
  # Live keys only; quiet and quick when no daemon answers.
  tenure --timeout 1s list "$1" 2>/dev/null | awk 'NR > 1 { print $1 }'
}

_tenure() {
  local cur prev words cword
  if declare -F _init_completion >/dev/null; then
    _init_completion || return
  else
    cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
  fi

  local subcommands="acquire renew release keepalive check get list history revoke stats ping
    watch run hold admin"
  local globals="--socket --json --timeout --help --version"
  local sub="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      --socket | --timeout) ((i++)) ;;
      --) break ;;
      -*) ;;
      *) sub=${words[i]}; break ;;
    esac
  done

  # run KEY [options] -- CMD...: complete CMD as a command line of its own.
  if [[ $sub == run ]]; then
    for ((i = 2; i < cword; i++)); do
      if [[ ${words[i]} == -- ]]; then
        if declare -F _command_offset >/dev/null; then
          _command_offset $((i + 1))
        else
          COMPREPLY=($(compgen -c -- "$cur"))
        fi
        return
      fi
    done
  fi

  case $prev in
    --socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --ttl | --wait | --timeout | --lock-delay | --grace)
      COMPREPLY=($(compgen -W "250ms 10s 30s 1m 15m 1h 1h30m 24h" -- "$cur")); return ;;
    --owner | --token | --limit | --from | --reason | --after | --before) return ;;
    --key) COMPREPLY=($(compgen -W "$(_tenure_keys "$cur")" -- "$cur")); return ;;
  esac

  local options=""
  case $sub in
    "") COMPREPLY=($(compgen -W "$subcommands $globals" -- "$cur")); return ;;
    acquire) options="--owner --ttl --open-ended --wait --lock-delay --release-on-disconnect" ;;
    renew) options="--owner --ttl --token" ;;
    release) options="--owner --token" ;;
    keepalive) options="--owner --ttl" ;;
    check) options="--token --owner" ;;
    list) options="--limit --after" ;;
    history) options="--limit --before" ;;
    revoke) options="--reason" ;;
    watch) options="--key --from" ;;
    run) options="--owner --ttl --wait --no-wait --grace --" ;;
    hold) options="--owner --ttl --wait --no-wait" ;;
    admin)
      # admin backup DIR: the daemon's machine's directories.
      if [[ ${words[cword - 1]} == admin ]]; then
        COMPREPLY=($(compgen -W "backup" -- "$cur"))
      else
        COMPREPLY=($(compgen -d -- "$cur"))
      fi
      return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$options $globals" -- "$cur"))
  else
    case $sub in
      acquire | renew | release | check | get | history | revoke | run | hold | list | watch)
        COMPREPLY=($(compgen -W "$(_tenure_keys "$cur")" -- "$cur")) ;;
    esac
  fi
}

complete -F _tenure tenure
