"""Imports point down only: search <- games <- mbrl <- llm_bridge. A package never imports one
above it; only the command-line layer (``mbrl/cli``) sees every package, and packages register
their game kinds and algorithms with the core (`mbrl.registry`) instead of the core importing
them."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["search", "games", "mbrl", "llm_bridge"]  # each may import those before it
COMMAND_LINE = ROOT / "mbrl" / "cli"


def imported_packages(path: Path) -> set[str]:
    """The top-level packages a module imports (at any depth of the file)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", LAYERS)
def test_imports_point_down(package):
    above = set(LAYERS[LAYERS.index(package) + 1 :])
    wrong = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        if COMMAND_LINE in path.parents:
            continue
        upward = imported_packages(path) & above
        if upward:
            wrong[str(path.relative_to(ROOT))] = sorted(upward)
    assert not wrong, f"imports that point up: {wrong}"


def test_the_checker_sees_an_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from llm_bridge.train_text import train_text\n")
    assert "llm_bridge" in imported_packages(module)
