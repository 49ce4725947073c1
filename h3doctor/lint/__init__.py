"""`h3doctor lint`: every launch in every input file, on every target (app layer, beside request.py).

config.py (`.h3doctor.yaml` / `[tool.h3doctor]`), discover.py (paths, globs, `.gitignore`),
suppress.py (inline `# h3doctor: ignore[...]`), session.py (one lint run: rules, flag table,
profiles and checks reused; its findings are output/diagnostic.py's Diagnostics, located by
engine/locate.py), fix.py (`--fix`).
"""
