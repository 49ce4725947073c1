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

function __h3doctor_python_module {  # ARGS of python…: `[options] -m sglang…` (not a script, not -c)
  [ -n "${ZSH_VERSION-}" ] && emulate -L zsh
  while [ "$#" -gt 0 ]; do
    case "$1" in
      -m) case "${2-}" in sglang|sglang.*) return 0 ;; esac; return 1 ;;
      -msglang|-msglang.*) return 0 ;;
      -[XW]) shift ;;
      -c*|-m*|-|--|[!-]*) return 1 ;;
    esac
    shift
  done
  return 1
}

function __h3doctor_wants {  # PROGRAM ARGS…: whether this is a launch to check (else it runs untouched)
  [ -n "${ZSH_VERSION-}" ] && emulate -L zsh
  local __h3doctor_prog="$1"
  shift
  if __h3doctor_off || __h3doctor_help "$@"; then return 1; fi
  case "$__h3doctor_prog" in
    sglang) case "${1-}" in serve|generate) return 0 ;; esac; return 1 ;;
    python|python[0-9]*) __h3doctor_python_module "$@"; return ;;
    uv|pipx) [ "${1-}" = run ] || return 1 ;;
  esac
  __h3doctor_names_sglang "$@"
}
# The functions for the programs themselves (sglang, python…, env, nohup, uv, …) follow, written by
# `h3doctor init` from the launch forms h3doctor reads (shellwords.WRAPPER_PROGRAMS): each checks what
# __h3doctor_wants says is a launch, with the words typed in front of it found first (__h3doctor_typed_here).
