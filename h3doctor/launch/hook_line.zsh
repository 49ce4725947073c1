# The command-line hook of hook.zsh (h3doctor init zsh appends it; interactive shells with zle
# only): accept-line, wrapped, hands a line that mentions sglang to `h3doctor hook-line` before it
# runs, which checks the launches the functions above cannot see (`exec sglang …`, `command sglang
# …`, `.venv/bin/sglang …`). A failing launch: the line is kept in the history, not run. An
# accept-line widget defined before the hook loads (zsh-autosuggestions, oh-my-zsh) still runs (on a failing line too, with the line emptied).
# One defined after it would replace this one: before a prompt (precmd), when this widget did not run
# for the line before, accept-line is wrapped again, the newer widget kept as the user's. A widget
# that calls this one itself (it wrapped it, as zsh-autosuggestions does) is left as it is, and this
# one, called back from it, ends the chain at zle's own accept-line without a second check.
if [[ -o interactive && -o zle ]]; then
  function __h3doctor_accept_line {
    emulate -L zsh
    if [[ -n "${__h3doctor_in_accept-}" ]]; then  # called back by a widget that wrapped this one
      zle .accept-line
      return
    fi
    local __h3doctor_rc=0 __h3doctor_in_accept=1
    __h3doctor_ran=1
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
  # __h3doctor_line_arm: accept-line is this hook's widget, the one there before it kept as the user's
  __h3doctor_ran=""
  function __h3doctor_line_arm {
    local __h3doctor_was_run="$__h3doctor_ran"
    __h3doctor_ran=""
    [[ "${widgets[accept-line]-}" == user:__h3doctor_accept_line || -n "$__h3doctor_was_run" ]] && return 0
    if [[ "${widgets[accept-line]-}" == user:* ]]; then
      zle -A accept-line __h3doctor_user_accept_line
    else
      zle -A .accept-line __h3doctor_user_accept_line
    fi
    zle -N accept-line __h3doctor_accept_line
  }
  __h3doctor_line_arm
  autoload -Uz add-zsh-hook && add-zsh-hook precmd __h3doctor_line_arm
fi
