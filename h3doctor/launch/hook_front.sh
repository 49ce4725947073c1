# The front functions of hook.bash and hook.zsh (h3doctor init appends them to either): which
# commands are sglang launches. Written in the words both shells read alike; everything that is
# not a launch runs at once, untouched, as `command PROGRAM ARGS…`.

function __h3doctor_help {  # -h/--help anywhere: sglang's help, nothing to check
  [ -n "${ZSH_VERSION-}" ] && emulate -L zsh
  local __h3doctor_w
  for __h3doctor_w in "$@"; do
    case "$__h3doctor_w" in -h|--help) return 0 ;; esac
  done
  return 1
}

function __h3doctor_names_sglang {  # some word starts sglang: `sglang serve|generate`, `-m sglang…`, a script's
  [ -n "${ZSH_VERSION-}" ] && emulate -L zsh
  local __h3doctor_w __h3doctor_prev=""
  for __h3doctor_w in "$@"; do
    case "$__h3doctor_w" in
      serve|generate) case "$__h3doctor_prev" in sglang|*/sglang) return 0 ;; esac ;;
      -msglang|-msglang.*|--entrypoint=sglang|--entrypoint=*/sglang|*"sglang serve"*|*"sglang generate"*) return 0 ;;
      sglang|sglang.*|*/sglang) case "$__h3doctor_prev" in -m|--entrypoint) return 0 ;; esac ;;
    esac
    __h3doctor_prev="$__h3doctor_w"
  done
  return 1
}

function sglang {
  case "${1-}" in
    serve|generate) ;;
    *) command sglang "$@"; return ;;
  esac
  if __h3doctor_off || __h3doctor_help "$@"; then command sglang "$@"; return; fi
  __h3doctor_check sglang "$@"
}

function __h3doctor_python {  # PROGRAM ARGS…: `python -m sglang…` is checked
  [ -n "${ZSH_VERSION-}" ] && emulate -L zsh
  local __h3doctor_prog="$1"
  shift
  case "${1-}|${2-}" in
    -m\|sglang|-m\|sglang.*|-msglang\|*|-msglang.*\|*) ;;
    *) command "$__h3doctor_prog" "$@"; return ;;
  esac
  if __h3doctor_off || __h3doctor_help "$@"; then command "$__h3doctor_prog" "$@"; return; fi
  __h3doctor_check "$__h3doctor_prog" "$@"
}

function python { __h3doctor_python python "$@"; }
function python3 { __h3doctor_python python3 "$@"; }

function uv {  # `uv run … sglang serve|generate …` (or `uv run python -m sglang…`) is checked
  if [ "${1-}" != run ] || __h3doctor_off || ! __h3doctor_names_sglang "$@" || __h3doctor_help "$@"; then
    command uv "$@"; return
  fi
  __h3doctor_check uv "$@"
}
