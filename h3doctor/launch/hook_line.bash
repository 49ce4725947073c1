# The command-line hook of hook.bash (h3doctor init bash appends it; interactive shells only): a
# DEBUG trap, with `shopt -s extdebug` so that its non-zero return skips the command, sees each
# simple command before it runs (BASH_COMMAND, as typed) and hands one that mentions sglang to
# `h3doctor hook-line`, which checks the launches the functions above cannot see (`exec sglang …`,
# `command sglang …`, `.venv/bin/sglang …`). A DEBUG trap set before the hook loads keeps running
# first; its non-zero return still skips the command. `$?` and `$_` are the command's, not the trap's.
# A blocked launch abandons the rest of its line (`&& next` does not run), as zsh's and fish's do.
# A DEBUG trap set after the hook loads (another tool's hook: bash-preexec, a prompt framework)
# would replace this one: before each prompt the trap is armed again, with that trap kept as the
# user's (it runs first); a trap that runs this one itself (it chained it) does not check twice.
if [[ $- == *i* ]]; then
  __h3doctor_user_debug=""
  function __h3doctor_status { return "$1"; }
  # __h3doctor_debug STATUS LAST: the trap; STATUS is $? before it, LAST $_ (the trap's own last
  # word, so $_ is LAST again after it)
  function __h3doctor_debug {
    [[ -z "${__h3doctor_in_debug-}" ]] || return 0  # run again by a trap that chained this one: once is enough
    local __h3doctor_rc=0 __h3doctor_in_debug=1
    if [[ -n "$__h3doctor_user_debug" ]]; then
      __h3doctor_status "$1"
      eval "$__h3doctor_user_debug" || __h3doctor_rc=$?
      (( __h3doctor_rc == 0 )) || return "$__h3doctor_rc"
    fi
    case "${FUNCNAME[1]-}" in @OWN_FUNCTIONS@) return 0 ;; esac  # the hook's own commands
    case "$BASH_COMMAND" in *sglang*) ;; *) return 0 ;; esac  # plainly no launch: no h3doctor started
    __h3doctor_off && return 0
    command -v h3doctor >/dev/null 2>&1 || return 0
    command h3doctor hook-line -- "$BASH_COMMAND" || __h3doctor_rc=$?
    case "$__h3doctor_rc" in
      0) return 0 ;;
      # blocked: skipping the command alone would give it status 0 and run `&& next`; a SIGINT to
      # this interactive shell abandons the rest of the line, as Ctrl-C does ($? is 130)
      1) kill -INT "$$"; return 1 ;;
      @INTERRUPTED_CASE@) return "$__h3doctor_rc" ;;
    esac
    return 0
  }
  # __h3doctor_line_arm "$(trap -p DEBUG)": the trap in place, with extdebug; a DEBUG trap that is
  # not this one (set before the hook loaded, or since) becomes the user's, run first. Run at load
  # and before each prompt (PROMPT_COMMAND: +0.35 ms, benchmarks/hook_line.py). Its caller reads
  # the trap: in a function `trap -p DEBUG` shows none (functions do not inherit it).
  function __h3doctor_line_arm {
    local __h3doctor_trap="$1"
    if [[ "$__h3doctor_trap" != *__h3doctor_debug* ]]; then
      __h3doctor_user_debug=""
      if [[ -n "$__h3doctor_trap" ]]; then
        __h3doctor_trap="${__h3doctor_trap#trap -- }"
        eval "__h3doctor_user_debug=${__h3doctor_trap% DEBUG}"  # bash's own quoting of that trap
      fi
      if [[ -n "$__h3doctor_user_debug" ]]; then
        trap '__h3doctor_debug "$?" "$_"' DEBUG
      else  # the common case, tested in the trap itself: a function call per command costs ~4x as much
        trap '[[ "$BASH_COMMAND" != *sglang* ]] || __h3doctor_debug "$?" "$_"' DEBUG
      fi
    fi
    shopt -s extdebug
  }
  __h3doctor_line_arm "$(trap -p DEBUG)"
  case "${PROMPT_COMMAND-}" in
    *'__h3doctor_line_arm "$(trap -p DEBUG)"'*) ;;
    *) PROMPT_COMMAND='__h3doctor_line_arm "$(trap -p DEBUG)"'"${PROMPT_COMMAND:+;$PROMPT_COMMAND}" ;;
  esac
fi
