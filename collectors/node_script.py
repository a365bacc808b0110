"""The Python that fleet sends to nodes (its agent, its probe runner), made ready to travel.

Each script is one file of this package with annotations and docstrings, as
the rest of the code; sent with ``python3 -u -c`` it is stripped of both, so
that a node's python3 >= 3.6 (RHEL 8's) runs it and the command line that
starts it is about half as long.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

NODE_MIN_PYTHON = (3, 6)
"""The oldest node python3 the stripped scripts run on (RHEL 8's)."""


class _Strip(ast.NodeTransformer):
    """Remove what Python 3.6 cannot run (postponed annotations) and what need not travel (docstrings)."""

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.ImportFrom | None:
        return None if node.module == "__future__" else node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.Assign | None:
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)

    def _body(self, node: ast.FunctionDef | ast.ClassDef | ast.Module) -> None:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        node.body = body or [ast.Pass()]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        node.returns = None
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                    node.args.vararg, node.args.kwarg):
            if arg is not None:
                arg.annotation = None
        self._body(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        self.generic_visit(node)
        self._body(node)
        return node

    def visit_Module(self, node: ast.Module) -> ast.Module:
        self.generic_visit(node)
        self._body(node)
        return node


@functools.cache
def node_script_source(name: str) -> str:
    """``collectors/NAME`` as sent with ``python3 -u -c``: without annotations and docstrings."""
    tree = ast.parse((Path(__file__).parent / name).read_text(encoding="utf-8"))
    return ast.unparse(ast.fix_missing_locations(_Strip().visit(tree))) + "\n"
