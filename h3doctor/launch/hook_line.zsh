# The command-line hook of hook.zsh (h3doctor init zsh appends it; interactive shells with zle
# only): accept-line, wrapped, hands a line that mentions sglang to `h3doctor hook-line` before it
# runs, which checks the launches the functions above cannot see (`exec sglang …`, `command sglang
# …`, `.venv/bin/sglang …`). A failing launch: the line is kept in the history, not run. An
# accept-line widget defined before the hook loads (zsh-autosuggestions, oh-my-zsh) still runs (on a failing line too, with the line emptied).
if [[ -o interactive && -o zle ]]; then
  function __h3doctor_accept_line {
    emulate -L zsh
    local __h3doctor_rc=0
    if [[ "$BUFFER" == *sglang* ]] && ! __h3doctor_off && (( $+commands[h3doctor] )); then
      zle -I  # the check's output goes below the line, the prompt is drawn again after it
      command h3doctor hook-line -- "$BUFFER" </dev/tty || __h3doctor_rc=$?
      case "$__h3doctor_rc" in
        1|@INTERRUPTED_CASE@)  # a failing launch: the line goes to the history, not run (an empty one is)
          print -rs -- "$BUFFER"
          BUFFER="" ;;
      esac
    fi
    zle __h3doctor_user_accept_line
  }
  zmodload zsh/zleparameter 2>/dev/null  # $widgets: which accept-line is there now
  if [[ "${widgets[accept-line]-}" == user:* && "${widgets[accept-line]}" != user:__h3doctor_accept_line ]]; then
    zle -A accept-line __h3doctor_user_accept_line
  elif [[ "${widgets[accept-line]-}" != user:__h3doctor_accept_line ]]; then
    zle -A .accept-line __h3doctor_user_accept_line
  fi
  zle -N accept-line __h3doctor_accept_line
fi
