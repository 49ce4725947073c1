
function @RUNTIME@ --description '@RUNTIME@; `@RUNTIME@ run … IMAGE sglang …` is checked by h3doctor first (init --wrap @RUNTIME@)'
    set -l __h3doctor_run no
    if test "$argv[1]" = run; or begin; test "$argv[1]" = container; and test "$argv[2]" = run; end
        set __h3doctor_run yes
    end
    if test $__h3doctor_run = no; or __h3doctor_off; or contains -- --help $argv; or not __h3doctor_names_sglang $argv
        command @RUNTIME@ $argv
        return $status
    end
    __h3doctor_check @RUNTIME@ $argv
end
