"""Import boundaries between the repository's top-level trees, read from their sources with ``ast`` (nothing runs):

- ``benchmarks/`` imports nothing from ``tests``: a benchmark uses stridegen and the ``reference`` oracles only;
- ``reference/`` (the oracles shared by tests and benchmarks) imports neither ``tests`` nor ``benchmarks``;
- ``stridegen/`` imports none of ``tests``, ``reference``, ``benchmarks``: the wheel ships stridegen alone.

Imports inside functions count too, and so do ``importlib.import_module("...")`` / ``__import__("...")`` calls with
a literal name; relative imports (``from . import x``) stay inside their own package and are not checked.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# (tree, glob of its modules, the top-level packages it must not import)
BOUNDARIES = [
    ("benchmarks", "*.py", {"tests"}),
    ("reference", "*.py", {"tests", "benchmarks"}),
    ("stridegen", "**/*.py", {"tests", "reference", "benchmarks"}),
]
DYNAMIC_IMPORTS = {"import_module", "__import__"}  # importlib.import_module(name), __import__(name)


def imported_roots(source: str) -> set[str]:
    """The top-level package of every absolute import in ``source``, wherever it stands in the module."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in DYNAMIC_IMPORTS and isinstance(node.args[0].value, str):
                roots.add(node.args[0].value.split(".")[0])
    return roots


@pytest.mark.parametrize(("tree", "pattern", "forbidden"), BOUNDARIES, ids=[b[0] for b in BOUNDARIES])
def test_tree_imports_nothing_forbidden(tree: str, pattern: str, forbidden: set[str]) -> None:
    modules = sorted((REPO / tree).glob(pattern))
    assert modules, f"no modules under {tree}/ (the check would pass on nothing)"
    offenders = {}
    for path in modules:
        bad = imported_roots(path.read_text(encoding="utf-8")) & forbidden
        if bad:
            offenders[str(path.relative_to(REPO))] = sorted(bad)
    assert offenders == {}, f"{tree}/ must not import {sorted(forbidden)}"


def test_imported_roots_sees_every_form() -> None:
    """The check can fail: each way of importing ``tests`` is seen, relative imports and look-alikes are not."""
    seen = [
        "import tests",
        "import tests.shared_data as data",
        "from tests.reference.plain_tracker import PlainTracker",
        "from tests import shard_fixtures",
        "def f():\n    from tests.demo_contexts import demo_contexts",
        "import importlib\nimportlib.import_module('tests.shared_data')",
        "__import__('tests')",
    ]
    for source in seen:
        assert "tests" in imported_roots(source), source
    unseen = ["from . import tests", "from .tests import x", "import testsuite", "from reference import tests"]
    for source in unseen:
        assert "tests" not in imported_roots(source), source
