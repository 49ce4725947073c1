"""cli.py holds the Typer declarations and one call per command (issue 28 item 3): each command's
body lives in the cli room's module of what the command is for (cli_reference.py, cli_host.py,
cli_fleet.py, cli_advice.py), `check`'s own body excepted (options.py's table builds its
declaration). A command whose body grows back in cli.py fails here."""

from __future__ import annotations

import ast

from repo_paths import REPO

CLI = REPO / "h3doctor" / "cli.py"


def _commands(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The functions a `@app.command(...)` or `@export_app.command(...)` decorator registers."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute) and deco.func.attr == "command"):
                    out[node.name] = node
    return out


def test_every_declared_command_is_one_call():
    commands = _commands(ast.parse(CLI.read_text(encoding="utf-8")))
    assert {"rules_cmd", "rule_cmd", "coverage_cmd", "probe_cmd", "doctor_cmd", "profiles_cmd", "lint_cmd",
            "admission_cmd", "export_vap_cmd", "schema_cmd", "explain_cmd", "suggest_cmd", "init_cmd"} <= set(commands)
    thick = {name: len(fn.body) for name, fn in commands.items()
             if len([s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]) > 2}
    assert thick == {}


def test_cli_py_stays_thin():
    assert len(CLI.read_text(encoding="utf-8").splitlines()) < 480  # 724 before the bodies moved out
