# The end of the `__h3doctor_check` function of hook.bash and hook.zsh (h3doctor init appends it to either):
# what h3doctor's exit status decides. Written in the words both shells read alike (positional
# parameters, not arrays, index the corrected command: bash counts from 0, zsh from 1).
  case "$__h3doctor_rc" in
    0) ;;
    1)
      [[ -n "$__h3doctor_file" ]] && command rm -f -- "$__h3doctor_file"
      return 1 ;;
    @INTERRUPTED_CASE@)
      # stopped (Ctrl-Z) or interrupted (Ctrl-C, Ctrl-\) during the check: bash goes on with the
      # function while h3doctor sits stopped, so this status, not the check, must decide: nothing starts
      [[ -n "$__h3doctor_file" ]] && command rm -f -- "$__h3doctor_file"
      printf '%s\n' "h3doctor did not finish (exit $__h3doctor_rc: stopped or interrupted); sglang was not started" >&2
      return "$__h3doctor_rc" ;;
    4)
      while IFS= read -r -d '' __h3doctor_word; do __h3doctor_argv+=("$__h3doctor_word"); done < "$__h3doctor_file"
      command rm -f -- "$__h3doctor_file"
      if [[ ${#__h3doctor_argv[@]} -eq 0 ]]; then
        printf '%s\n' "h3doctor failed (no corrected command to run); launching sglang anyway" >&2
      else
        set -- "${__h3doctor_argv[@]}"
        __h3doctor_remember "$@"
        if [[ "$1" == "$__h3doctor_prog" ]]; then
          shift; __h3doctor_launch "the corrected command passed" "$__h3doctor_prog" "$@"; return
        fi
        command env -- "$@"; return
      fi ;;
    2) # a usage or input error: nothing h3doctor could read of the launch fails (it blocks with 1 then)
      printf '%s\n' "h3doctor could not verify this launch (said above)" \
        "h3doctor failed (exit $__h3doctor_rc); launching sglang anyway" >&2 ;;
    *) printf '%s\n' "h3doctor failed (exit $__h3doctor_rc); launching sglang anyway" >&2 ;;
  esac
  [[ -n "$__h3doctor_file" ]] && command rm -f -- "$__h3doctor_file"
  if [[ "$__h3doctor_rc" == 0 ]]; then __h3doctor_launch "the check let it start" "$__h3doctor_prog" "$@"; return; fi
  __h3doctor_launch "" "$__h3doctor_prog" "$@"
}

# __h3doctor_launch VERDICT PROGRAM ARGS…: start PROGRAM, or say in one line that it is not installed
# (the shell's own words would name this function, zsh's its line in it) with a shell's status, 127
function __h3doctor_launch {
  [ -n "${ZSH_VERSION-}" ] && emulate -L zsh
  local __h3doctor_verdict="$1" __h3doctor_found
  shift
  if [ -n "${ZSH_VERSION-}" ]; then __h3doctor_found="$(whence -p -- "$1")"; else __h3doctor_found="$(type -P -- "$1")"; fi
  if [ -z "$__h3doctor_found" ]; then
    printf '%s\n' "h3doctor: ${__h3doctor_verdict:+$__h3doctor_verdict, but }$1 is not installed here (no $1 on PATH); nothing was started" >&2
    return 127
  fi
  if [ -n "$__h3doctor_verdict" ] && [ "${H3DOCTOR_HOOK_EXPLAIN:-1}" != 0 ] && command -v h3doctor >/dev/null 2>&1; then
    # the server the check let start: its stderr through h3doctor's relay (cli_hook_tail.py), which
    # shows every byte as it comes and, on a non-zero exit, says in one line what explain makes of
    # its last 1 MiB; the relay's status is the server's. stdout and stdin stay the server's own.
    [ -n "${ZSH_VERSION-}" ] && setopt local_options no_multios  # one stdout each, never a tee of two
    # h3doctor without the NAME=value words typed in front (the check's names), as `env -u`: a function
    # on the pipeline's right would cost bash the terminal's handover to the job (Ctrl-C then missed sglang)
    local -a __h3doctor_unset=()
    local __h3doctor_n
    for __h3doctor_n in ${__h3doctor_names[@]+"${__h3doctor_names[@]}"}; do __h3doctor_unset+=(-u "$__h3doctor_n"); done
    { { command "$@" 2>&1 1>&3 3>&-; printf '\000h3doctor-exit %s\n' "$?"; } | command env ${__h3doctor_unset[@]+"${__h3doctor_unset[@]}"} h3doctor hook-tail "$1"; } 3>&1
    return
  fi
  command "$@"
}

# __h3doctor_remember WORDS…: the corrected command the user accepted, shown and put in the shell's
# history after the line they typed, so Up brings back the command that ran
function __h3doctor_remember {
  [ -n "${ZSH_VERSION-}" ] && emulate -L zsh
  local __h3doctor_line
  __h3doctor_line="$(printf '%q ' "$@")"
  __h3doctor_line="${__h3doctor_line% }"
  if [ -n "${ZSH_VERSION-}" ]; then print -rs -- "$__h3doctor_line"; else history -s -- "$__h3doctor_line"; fi
  printf '%s\n' "h3doctor: running the corrected command (Up recalls it): $__h3doctor_line" >&2
}
