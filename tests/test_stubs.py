"""The type stubs of the native module declare exactly what the module exports."""

import ast
from pathlib import Path

import agui_fast
from agui_fast import _native

STUB = Path(agui_fast.__file__).with_name("_native.pyi")


def stub_names():
    tree = ast.parse(STUB.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_") or n == "__version__"}


def test_stubs_match_the_module():
    exported = {n for n in dir(_native) if not n.startswith("_") or n == "__version__"}
    assert stub_names() == exported
