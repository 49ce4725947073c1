# h3doctor shell hook for zsh. Load it with this line in ~/.zshrc:
#   eval "$(h3doctor init zsh)"
# It defines `sglang`, `python…`, `env`, `nohup`, `setsid`, `uv` and `pipx` functions: `sglang
# serve|generate`, `python -m sglang…` and those behind a wrapper are checked by h3doctor (with the
# NAME=value words typed in front given to it as the launch's, never as its own environment) and
# start only when no finding reaches --fail-on; everything else passes straight through. `h3doctor init zsh --wrap
# docker` adds a `docker` function: `docker run` lines whose command is sglang are checked too.
# H3DOCTOR_DISABLE=1 switches it off; H3DOCTOR_HOOK_ARGS adds h3doctor options, separated by
# spaces (e.g. "--profile 4xH200 --fail-on warning"). If h3doctor itself fails, sglang starts anyway;
# if it is stopped or interrupted (Ctrl-Z, Ctrl-C, Ctrl-\) during the check, nothing starts.
# (The protocol of hook.bash, in zsh's own idiom: emulate -L zsh, 1-based arrays.)

export H3DOCTOR_HOOK=zsh
export H3DOCTOR_HOOK_SHLVL="${SHLVL:-}"

function __h3doctor_off {
  emulate -L zsh
  case "${(L)H3DOCTOR_DISABLE:-}" in
    1|true|yes|on) return 0 ;;
  esac
  return 1
}

# The user's own environment, taken when each command line starts (preexec) and when the hook is
# loaded: an exported name whose value differs from it inside a function was typed in front of that
# function (`NAME=value sglang serve …`; zsh gives such words no scope of their own to tell them by).
typeset -gA __h3doctor_own
typeset -ga __h3doctor_typed
function __h3doctor_snapshot {
  emulate -L zsh
  local __h3doctor_n
  __h3doctor_own=()
  for __h3doctor_n in ${(k)parameters[(R)*export*]}; do __h3doctor_own[$__h3doctor_n]="${(P)__h3doctor_n}"; done
}
function __h3doctor_typed_names {
  emulate -L zsh
  local __h3doctor_n
  __h3doctor_typed=()
  for __h3doctor_n in ${(k)parameters[(R)*export*]}; do
    [[ $__h3doctor_n == (_|__h3doctor_*) ]] && continue
    if (( ! ${+__h3doctor_own[$__h3doctor_n]} )) || [[ "${__h3doctor_own[$__h3doctor_n]}" != "${(P)__h3doctor_n}" ]]; then
      __h3doctor_typed+=("$__h3doctor_n")
    fi
  done
}
typeset -ga preexec_functions
(( ${preexec_functions[(Ie)__h3doctor_snapshot]} )) || preexec_functions+=(__h3doctor_snapshot)
__h3doctor_snapshot
__h3doctor_typed_here=__h3doctor_typed_names

# __h3doctor_in_own_env COMMAND…: COMMAND in the user's own environment, as the check runs: the
# NAME=value words typed in front of the program (__h3doctor_check's names) back to the user's own
# values, in a subshell
function __h3doctor_in_own_env {
  (
    local __h3doctor_n
    for __h3doctor_n in "${__h3doctor_names[@]}"; do
      if (( ${+__h3doctor_own[$__h3doctor_n]} )); then
        export "$__h3doctor_n=${__h3doctor_own[$__h3doctor_n]}"
      else
        unset "$__h3doctor_n"
      fi
    done
    "$@"
  )
}

# __h3doctor_run_check WORDS…: in __h3doctor_in_own_env, the check, with the user's own H3DOCTOR_HOOK_ARGS
function __h3doctor_run_check {
  exec h3doctor check --hook "${__h3doctor_out[@]}" ${(s: :)H3DOCTOR_HOOK_ARGS} -- "$@"
}

# __h3doctor_check PROGRAM ARGS…: check `PROGRAM ARGS…` and start what the answer says
function __h3doctor_check {
  emulate -L zsh
  local __h3doctor_prog="$1"
  shift
  if ! command -v h3doctor >/dev/null 2>&1; then
    print -ru2 -- "h3doctor failed (not installed: no h3doctor on PATH); launching sglang anyway"
    __h3doctor_launch "" "$__h3doctor_prog" "$@"; return
  fi
  local __h3doctor_file="" __h3doctor_rc=0 __h3doctor_word __h3doctor_n
  local -a __h3doctor_out __h3doctor_argv __h3doctor_words __h3doctor_names
  __h3doctor_file="$(command mktemp "${TMPDIR:-/tmp}/h3doctor.XXXXXX" 2>/dev/null)" || __h3doctor_file=""
  [[ -n "$__h3doctor_file" ]] && __h3doctor_out=(--argv-out "$__h3doctor_file")
  __h3doctor_names=("${__h3doctor_typed[@]}")
  __h3doctor_typed=()
  for __h3doctor_n in "${__h3doctor_names[@]}"; do __h3doctor_words+=("$__h3doctor_n=${(P)__h3doctor_n}"); done
  # h3doctor runs in the user's own environment (as it was when the command line started): the
  # NAME=value words typed in front of the program are the launch's, given to h3doctor as launch words
  __h3doctor_in_own_env __h3doctor_run_check "${__h3doctor_words[@]}" "$__h3doctor_prog" "$@" || __h3doctor_rc=$?
  # the rest of the function, what the exit status decides, is hook_decide.sh (shared with hook.bash)
