"""Launching sglang after a check: replacing h3doctor with the real command (`check --exec`) and
the shell hook (`h3doctor init`). Knows nothing of rules or of sglang's parser: it is handed argv
words, an environment and the check's verdict."""
