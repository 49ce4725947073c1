"""`h3doctor lint`: every launch in every input file, on every target (app layer, beside request.py).

config.py (`.h3doctor.yaml` / `[tool.h3doctor]`), discover.py (paths, globs, `.gitignore`),
suppress.py (inline `# h3doctor: ignore[...]`), locate.py (a finding's line and column),
session.py (one lint run: rules, flag table, profiles and checks reused), fix.py (`--fix`).
"""
