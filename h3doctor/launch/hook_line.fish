# The command-line hook of hook.fish (h3doctor init fish appends it; interactive shells only):
# Enter, bound to __h3doctor_enter, hands a line that mentions sglang to `h3doctor hook-line`
# before it runs, which checks the launches the functions above cannot see (`exec sglang …`,
# `command sglang …`, `.venv/bin/sglang …`). A failing launch: the line is not run (fish 3.x cannot
# add it to its history). Enter's binding before the hook loads, in the default and the vi insert
# mode, still runs after the check (`execute` when there was none). A binding made after the hook
# loads would replace it: before a prompt, when this function did not run for the line before,
# Enter is bound again, the newer binding kept as the one to run after the check.
if status is-interactive
    set -g __h3doctor_ran ''
    function __h3doctor_enter --argument-names __h3doctor_then
        set -g __h3doctor_ran 1
        set -l __h3doctor_line (commandline)
        set -l __h3doctor_rc 0
        if string match -q -- '*sglang*' $__h3doctor_line; and not __h3doctor_off; and command -q h3doctor
            echo
            command h3doctor hook-line -- (string join \n -- $__h3doctor_line)
            set __h3doctor_rc $status
            # a failing launch: the line is not run (an empty one is, so Enter's binding still runs)
            contains -- $__h3doctor_rc 1 @INTERRUPTED_FISH@; and commandline -r ''
            commandline -f repaint
        end
        if contains -- $__h3doctor_then (bind --function-names)
            commandline -f $__h3doctor_then
        else
            eval $__h3doctor_then
        end
    end
    # __h3doctor_line_arm: Enter (default and vi insert mode) runs __h3doctor_enter, then what it ran before
    function __h3doctor_line_arm
        for __h3doctor_mode in default insert
            for __h3doctor_key in \r \n
                set -l __h3doctor_was (bind -M $__h3doctor_mode $__h3doctor_key 2>/dev/null | string replace -r '^bind(\s+--preset)?(\s+-M\s+\S+)?(\s+-m\s+\S+)?\s+\S+\s+' '')
                # the user's binding is listed after fish's preset one, and is the one that counts
                set -q __h3doctor_was[1]; and set __h3doctor_was $__h3doctor_was[-1]; or set __h3doctor_was execute
                string match -q -- '*__h3doctor_enter*' "$__h3doctor_was"; and continue
                bind -M $__h3doctor_mode $__h3doctor_key "__h3doctor_enter $(string escape -- "$__h3doctor_was")"
            end
        end
    end
    __h3doctor_line_arm
    function __h3doctor_line_rearm --on-event fish_prompt
        set -l __h3doctor_was_run $__h3doctor_ran
        set -g __h3doctor_ran ''
        test -n "$__h3doctor_was_run"; or __h3doctor_line_arm
    end
end
