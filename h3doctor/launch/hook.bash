# h3doctor shell hook for bash. Load it with this line in ~/.bashrc:
#   eval "$(h3doctor init bash)"
# It defines `sglang`, `python…`, `env`, `nohup`, `setsid`, `uv` and `pipx` functions: `sglang
# serve|generate`, `python -m sglang…` and those behind a wrapper are checked by h3doctor (with the
# NAME=value words typed in front given to it as the launch's, never as its own environment) and
# start only when no finding reaches --fail-on; everything else passes straight through. `h3doctor init bash --wrap
# docker` adds a `docker` function: `docker run` lines whose command is sglang are checked too.
# H3DOCTOR_DISABLE=1 switches it off; H3DOCTOR_HOOK_ARGS adds h3doctor options, separated by
# spaces (e.g. "--profile 4xH200 --fail-on warning"). If h3doctor itself fails, sglang starts anyway;
# if it is stopped or interrupted (Ctrl-Z, Ctrl-C, Ctrl-\) during the check, nothing starts.

export H3DOCTOR_HOOK=bash
export H3DOCTOR_HOOK_SHLVL="${SHLVL:-}"

function __h3doctor_off {
  case "${H3DOCTOR_DISABLE:-}" in
    1|[Tt][Rr][Uu][Ee]|[Yy][Ee][Ss]|[Oo][Nn]) return 0 ;;
  esac
  return 1
}

# The exported names whose value the command line typed in front of the function that runs this
# (`NAME=value sglang serve …`): bash keeps those in that function's own scope, so `local NAME` there
# leaves them set while it hides every other variable. Run with eval in that function, in a subshell.
__h3doctor_typed_here='IFS=" " read -r -a __h3doctor_typed <<< "$(IFS=$'"'"' \t\n'"'"'; set +f
  shopt -u localvar_inherit 2>/dev/null
  for __h3doctor_n in $(compgen -e); do
    case "$__h3doctor_n" in __h3doctor_*) continue ;; esac
    local "$__h3doctor_n" 2>/dev/null && [[ -n "${!__h3doctor_n+x}" ]] && printf "%s " "$__h3doctor_n"
  done)"'
declare -ga __h3doctor_typed=()

# __h3doctor_check PROGRAM ARGS…: check `PROGRAM ARGS…` and start what the answer says
function __h3doctor_check {
  local __h3doctor_prog="$1" __h3doctor_word
  shift
  if ! command -v h3doctor >/dev/null 2>&1; then
    printf '%s\n' "h3doctor failed (not installed: no h3doctor on PATH); launching sglang anyway" >&2
    __h3doctor_launch "" "$__h3doctor_prog" "$@"; return
  fi
  local __h3doctor_file="" __h3doctor_rc=0 __h3doctor_n
  local -a __h3doctor_out=() __h3doctor_argv=() __h3doctor_words=()
  __h3doctor_file="$(command mktemp "${TMPDIR:-/tmp}/h3doctor.XXXXXX" 2>/dev/null)" || __h3doctor_file=""
  if [[ -n "$__h3doctor_file" ]]; then __h3doctor_out=(--argv-out "$__h3doctor_file"); fi
  local -a __h3doctor_names=(${__h3doctor_typed[@]+"${__h3doctor_typed[@]}"})
  __h3doctor_typed=()
  for __h3doctor_n in ${__h3doctor_names[@]+"${__h3doctor_names[@]}"}; do
    __h3doctor_words+=("$__h3doctor_n=${!__h3doctor_n}")
  done
  # h3doctor runs in the user's own environment: the NAME=value words typed in front of the program
  # are the launch's, given to h3doctor as launch words; in its subshell they are unset, which brings
  # back the user's own value of a name they shadow (H3DOCTOR_HOOK_ARGS too)
  (
    unset -v ${__h3doctor_names[@]+"${__h3doctor_names[@]}"}
    __h3doctor_opts=()
    if [[ -n "${H3DOCTOR_HOOK_ARGS:-}" ]]; then
      IFS=$' \t\n' read -r -a __h3doctor_opts <<< "$H3DOCTOR_HOOK_ARGS"
    fi
    exec h3doctor check --hook ${__h3doctor_out[@]+"${__h3doctor_out[@]}"} \
      ${__h3doctor_opts[@]+"${__h3doctor_opts[@]}"} -- ${__h3doctor_words[@]+"${__h3doctor_words[@]}"} "$__h3doctor_prog" "$@"
  ) || __h3doctor_rc=$?
  # the rest of the function, what the exit status decides, is hook_decide.sh (shared with hook.zsh)
