# h3doctor shell hook for fish. Load it with this line in ~/.config/fish/config.fish:
#   h3doctor init fish | source
# It defines `sglang`, `python…`, `env`, `nohup`, `setsid`, `uv` and `pipx` functions: `sglang
# serve|generate`, `python -m sglang…` and those behind a wrapper are checked by h3doctor (with the
# NAME=value words typed in front given to it as the launch's, never as its own environment) and
# start only when no finding reaches --fail-on; everything else passes straight through. `h3doctor init fish --wrap
# docker` adds a `docker` function: `docker run` lines whose command is sglang are checked too.
# H3DOCTOR_DISABLE=1 switches it off; H3DOCTOR_HOOK_ARGS adds h3doctor options, separated by
# spaces (e.g. "--profile 4xH200 --fail-on warning"). If h3doctor itself fails, sglang starts anyway;
# if it is stopped or interrupted (Ctrl-Z, Ctrl-C, Ctrl-\) during the check, nothing starts.

set -gx H3DOCTOR_HOOK fish
set -gx H3DOCTOR_HOOK_SHLVL "$SHLVL"

function __h3doctor_off
    contains -- (string lower -- "$H3DOCTOR_DISABLE") 1 true yes on
end

function __h3doctor_names_sglang --description 'some word starts sglang: sglang serve|generate, -m sglang…, a script'
    set -l __h3doctor_prev ""
    for __h3doctor_w in $argv
        switch $__h3doctor_w
            case serve generate
                if test "$__h3doctor_prev" = sglang; or string match -q -- '*/sglang' "$__h3doctor_prev"
                    return 0
                end
            case -msglang '-msglang.*' --entrypoint=sglang '--entrypoint=*/sglang' '*sglang serve*' '*sglang generate*'
                return 0
            case sglang 'sglang.*' '*/sglang'
                contains -- "$__h3doctor_prev" -m --entrypoint; and return 0
        end
        set __h3doctor_prev $__h3doctor_w
    end
    return 1
end

function __h3doctor_python_module --description 'ARGS of python…: [options] -m sglang… (not a script, not -c)'
    while set -q argv[1]
        switch $argv[1]
            case -m
                string match -q -r -- '^sglang(\.|$)' "$argv[2]"
                return
            case -msglang '-msglang.*'
                return 0
            case -X -W
                set -e argv[1]
            case '-c*' '-m*' - --
                return 1
            case '-*'
            case '*'
                return 1
        end
        set -e argv[1]
    end
    return 1
end

function __h3doctor_wants --description 'PROGRAM ARGS…: whether this is a launch to check (else it runs untouched)'
    set -l __h3doctor_prog $argv[1]
    set -e argv[1]
    if __h3doctor_off; or contains -- --help $argv; or contains -- -h $argv
        return 1
    end
    switch $__h3doctor_prog
        case sglang
            contains -- "$argv[1]" serve generate
            return
        case 'python*'
            __h3doctor_python_module $argv
            return
        case uv pipx
            test "$argv[1]" = run; or return 1
    end
    __h3doctor_names_sglang $argv
end

# `h3doctor check --hook` in the user's own environment: NAMES… -- ARGS… (after the options). The names typed in front of the program
# (`NAME=value sglang serve …`) are exported variables of a local scope; erased here (in this function's
# scope only), the user's own global value comes back (H3DOCTOR_HOOK_ARGS too)
function __h3doctor_run_own
    while set -q argv[1]; and test "$argv[1]" != --
        set -e $argv[1]
        set -e argv[1]
    end
    set -e argv[1]
    command h3doctor check --hook (string split -n -- ' ' "$H3DOCTOR_HOOK_ARGS") $argv
end

# __h3doctor_check PROGRAM ARGS…: check `PROGRAM ARGS…` and start what the answer says
function __h3doctor_check
    set -l __h3doctor_prog $argv[1]
    set -e argv[1]
    if not command -q h3doctor
        echo "h3doctor failed (not installed: no h3doctor on PATH); launching sglang anyway" >&2
        __h3doctor_launch "" $__h3doctor_prog $argv
        return $status
    end
    set -l __h3doctor_tmp /tmp
    set -q TMPDIR; and test -n "$TMPDIR"; and set __h3doctor_tmp $TMPDIR
    set -l __h3doctor_file (command mktemp "$__h3doctor_tmp/h3doctor.XXXXXX" 2>/dev/null)
    set -l __h3doctor_out
    test -n "$__h3doctor_file"; and set __h3doctor_out --argv-out $__h3doctor_file
    # the NAME=value words typed in front of the program: exported variables of a local scope (fish
    # exports a path variable's list joined by colons, any other's by spaces)
    set -l __h3doctor_names
    set -l __h3doctor_words
    for __h3doctor_n in (set --names --local --export)
        string match -q -- '__h3doctor_*' $__h3doctor_n; and continue
        set -a __h3doctor_names $__h3doctor_n
        set -l __h3doctor_sep ' '
        string match -q -- '*PATH' $__h3doctor_n; and set __h3doctor_sep :
        set -l __h3doctor_v (string join -- $__h3doctor_sep $$__h3doctor_n)
        set -a __h3doctor_words "$__h3doctor_n=$__h3doctor_v"
    end
    set -l __h3doctor_jobs (jobs -p 2>/dev/null)
    __h3doctor_run_own $__h3doctor_names -- $__h3doctor_out -- $__h3doctor_words $__h3doctor_prog $argv
    set -l __h3doctor_rc $status
    # fish goes on with the function when Ctrl-Z stops h3doctor, with $status 0 (3.6) or 128+SIGTSTP:
    # a job that was not there before the check is h3doctor, stopped; nothing may start then
    for __h3doctor_pid in (jobs -p 2>/dev/null)
        contains -- $__h3doctor_pid $__h3doctor_jobs; or set __h3doctor_rc @STOPPED@
    end
    switch $__h3doctor_rc
        case 0
        case 1
            test -n "$__h3doctor_file"; and command rm -f -- $__h3doctor_file
            return 1
        case @INTERRUPTED_FISH@
            test -n "$__h3doctor_file"; and command rm -f -- $__h3doctor_file
            echo "h3doctor did not finish (exit $__h3doctor_rc: stopped or interrupted); sglang was not started" >&2
            return $__h3doctor_rc
        case 4
            set -l __h3doctor_argv (string split0 < $__h3doctor_file)
            command rm -f -- $__h3doctor_file
            if test (count $__h3doctor_argv) -eq 0
                echo "h3doctor failed (no corrected command to run); launching sglang anyway" >&2
            else if test "$__h3doctor_argv[1]" = "$__h3doctor_prog"
                __h3doctor_remember $__h3doctor_argv
                set -e __h3doctor_argv[1]
                __h3doctor_launch "the corrected command passed" $__h3doctor_prog $__h3doctor_argv
                return $status
            else
                __h3doctor_remember $__h3doctor_argv
                command env -- $__h3doctor_argv
                return $status
            end
        case 2  # a usage or input error: nothing h3doctor could read of the launch fails (it blocks with 1 then)
            echo "h3doctor could not verify this launch (said above)" >&2
            echo "h3doctor failed (exit $__h3doctor_rc); launching sglang anyway" >&2
        case '*'
            echo "h3doctor failed (exit $__h3doctor_rc); launching sglang anyway" >&2
    end
    test -n "$__h3doctor_file"; and command rm -f -- $__h3doctor_file
    set -l __h3doctor_verdict ""
    test "$__h3doctor_rc" = 0; and set __h3doctor_verdict "the check let it start"
    __h3doctor_launch "$__h3doctor_verdict" $__h3doctor_prog $argv
end

# __h3doctor_launch VERDICT PROGRAM ARGS…: start PROGRAM, or say in one line that it is not installed
# (fish's own words would be a stack through this hook) with a shell's status, 127
function __h3doctor_launch
    set -l __h3doctor_verdict $argv[1]
    set -e argv[1]
    if not command -q -- $argv[1]
        set -q __h3doctor_verdict[1]; and test -n "$__h3doctor_verdict"; and set __h3doctor_verdict "$__h3doctor_verdict, but "
        echo "h3doctor: $__h3doctor_verdict$argv[1] is not installed here (no $argv[1] on PATH); nothing was started" >&2
        return 127
    end
    if test -n "$__h3doctor_verdict"; and test "$H3DOCTOR_HOOK_EXPLAIN" != 0; and command -q h3doctor
        # the NAME=value words typed in front: the relay runs without them, as `env -u` (an external
        # command: fish would run a function on the pipeline's right only once the server has ended)
        set -l __h3doctor_unset
        for __h3doctor_n in (set --names --local --export)
            string match -q -- '__h3doctor_*' $__h3doctor_n; or set -a __h3doctor_unset -u $__h3doctor_n
        end
        # as hook_decide.sh: the server's stderr through h3doctor's relay, which explains a non-zero exit
        begin
            begin
                command $argv 2>&1 1>&3 3>&-
                printf '\000h3doctor-exit %s\n' $status
            end | command env $__h3doctor_unset h3doctor hook-tail $argv[1]
        end 3>&1
        return $status
    end
    command $argv
end

# __h3doctor_remember WORDS…: the corrected command the user accepted, shown. fish 3.x has no
# `history append`, and writing fish's history file behind its back races fish's own saving of the
# typed line (the entry was lost now and then): fish's history keeps the line typed, not the fix
function __h3doctor_remember
    set -l __h3doctor_line (string join -- ' ' (string escape -- $argv))
    echo "h3doctor: running the corrected command: $__h3doctor_line" >&2
end
