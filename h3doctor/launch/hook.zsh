# h3doctor shell hook for zsh. Load it with this line in ~/.zshrc:
#   eval "$(h3doctor init zsh)"
# It defines a `sglang` function: `sglang serve` and `sglang generate` are checked by h3doctor and
# start only when no finding reaches --fail-on; everything else passes straight through.
# H3DOCTOR_DISABLE=1 switches it off; H3DOCTOR_HOOK_ARGS adds h3doctor options, separated by
# spaces (e.g. "--profile 4xH200 --fail-on warning"). If h3doctor itself fails, sglang starts anyway;
# if it is stopped or interrupted (Ctrl-Z, Ctrl-C, Ctrl-\) during the check, nothing starts.
# (The protocol of hook.bash, in zsh's own idiom: emulate -L zsh, 1-based arrays.)

export H3DOCTOR_HOOK=zsh
export H3DOCTOR_HOOK_SHLVL="${SHLVL:-}"

function sglang {
  emulate -L zsh
  case "${(L)H3DOCTOR_DISABLE:-}" in
    1|true|yes|on) command sglang "$@"; return ;;
  esac
  case "${1-}" in
    serve|generate) ;;
    *) command sglang "$@"; return ;;
  esac
  if (( ${@[(Ie)--help]} || ${@[(Ie)-h]} )); then
    command sglang "$@"; return
  fi
  if ! command -v h3doctor >/dev/null 2>&1; then
    print -ru2 -- "h3doctor failed (not installed: no h3doctor on PATH); launching sglang anyway"
    command sglang "$@"; return
  fi
  local __h3doctor_file="" __h3doctor_rc=0 __h3doctor_word
  local -a __h3doctor_opts __h3doctor_out __h3doctor_argv
  __h3doctor_file="$(command mktemp "${TMPDIR:-/tmp}/h3doctor.XXXXXX" 2>/dev/null)" || __h3doctor_file=""
  [[ -n "$__h3doctor_file" ]] && __h3doctor_out=(--argv-out "$__h3doctor_file")
  __h3doctor_opts=(${(s: :)H3DOCTOR_HOOK_ARGS})
  command h3doctor check --hook "${__h3doctor_out[@]}" "${__h3doctor_opts[@]}" -- sglang "$@" || __h3doctor_rc=$?
  # the rest of the function, what the exit status decides, is hook_decide.sh (shared with hook.bash)
