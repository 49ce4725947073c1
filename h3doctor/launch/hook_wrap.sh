
function @RUNTIME@ {  # opt-in (h3doctor init SHELL --wrap @RUNTIME@): `@RUNTIME@ run … IMAGE sglang …` is checked
  case "${1-} ${2-}" in
    "run "*|"container run") ;;
    *) command @RUNTIME@ "$@"; return ;;
  esac
  local __h3doctor_w
  for __h3doctor_w in "$@"; do
    case "$__h3doctor_w" in --help) command @RUNTIME@ "$@"; return ;; esac
  done
  if __h3doctor_off || ! __h3doctor_names_sglang "$@"; then command @RUNTIME@ "$@"; return; fi
  eval "$__h3doctor_typed_here"
  __h3doctor_check @RUNTIME@ "$@"
}
