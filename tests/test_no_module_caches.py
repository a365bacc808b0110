"""No module-level mutable caches in ``collectors/``, ``fabric/`` or ``store/``: a cache belongs to the
object that owns its lifetime (a collector's ``SeriesLayouts``, a stream's tables), never to a module
every caller shares.

An AST check of every module there: a name bound at module level to a dict, list or set (a literal,
a comprehension or a constructor) that the module then changes (an item set or deleted, a changing
method called, an augmented assignment, through the name or a local alias of it), and a module-level
function under ``functools.lru_cache``/``functools.cache`` that takes anything but plain values (str,
int, float, bool, bytes, tuples and frozensets of them). Constants pass: tuples, frozensets,
``MappingProxyType`` tables, and dicts or lists no code changes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("collectors", "fabric", "store")
_CONTAINERS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
_CONSTRUCTORS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque", "bytearray"})
_CHANGING = frozenset({"append", "extend", "insert", "pop", "popitem", "clear", "update", "setdefault", "add",
                       "discard", "remove", "sort", "reverse", "appendleft", "extendleft", "popleft",
                       "__setitem__", "__delitem__", "difference_update", "intersection_update",
                       "symmetric_difference_update", "move_to_end"})
_CACHES = frozenset({"lru_cache", "cache"})
_VALUE_TYPES = frozenset({"str", "int", "float", "bool", "bytes", "tuple", "frozenset", "None"})


def _is_container(value: ast.expr | None) -> bool:
    if isinstance(value, _CONTAINERS):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in _CONSTRUCTORS
    return False


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign) and _is_container(node.value):
        return [target.id for target in node.targets if isinstance(target, ast.Name)]
    if isinstance(node, ast.AnnAssign) and _is_container(node.value) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _named(node: ast.expr, names: set[str]) -> str | None:
    return node.id if isinstance(node, ast.Name) and node.id in names else None


def _changed_names(tree: ast.Module, names: set[str]) -> set[str]:
    """Which of ``names`` some code of the module changes (directly, or through ``alias = NAME``)."""
    changed: set[str] = set()
    scopes: list[ast.AST] = [tree, *(node for node in ast.walk(tree)
                                     if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))]
    for scope in scopes:
        aliases = {name: name for name in names}
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                source = _named(node.value, set(aliases))
                if source is not None and scope is not tree:
                    aliases[node.targets[0].id] = aliases[source]
            if isinstance(node, ast.Global):
                changed.update(name for name in node.names if name in names)
        known = set(aliases)
        for node in ast.walk(scope):
            target: str | None = None
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del):
                target = _named(node.value, known)
            elif isinstance(node, ast.AugAssign):
                target = _named(node.target, known) or (
                    _named(node.target.value, known) if isinstance(node.target, ast.Subscript) else None)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CHANGING:
                target = _named(node.func.value, known)
            if target is not None:
                changed.add(aliases[target])
    return changed


def _cache_decorated(node: ast.stmt) -> bool:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    for decorator in node.decorator_list:
        func = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in _CACHES:
            return True
    return False


def _value_annotation(annotation: ast.expr | None) -> bool:
    """Whether an annotation names plain hashable values only (``str``, ``tuple[int, ...]``, ``str | None``)."""
    if annotation is None:
        return False
    names = {node.id for node in ast.walk(annotation) if isinstance(node, ast.Name)}
    names |= {str(node.value) for node in ast.walk(annotation) if isinstance(node, ast.Constant)}
    return bool(names) and names <= _VALUE_TYPES | {"Ellipsis"}


def module_caches(source: str) -> list[str]:
    """What of ``source`` (a module) is a module-level mutable cache, one line each."""
    tree = ast.parse(source)
    bound: dict[str, int] = {}
    found: list[str] = []
    for node in tree.body:
        for name in _bound_names(node):
            bound[name] = node.lineno
        if _cache_decorated(node):
            args = node.args  # type: ignore[attr-defined]
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            if not all(param is None or _value_annotation(param.annotation) for param in params):
                found.append(f"line {node.lineno}: {node.name} is cached at module level "  # type: ignore[attr-defined]
                             "by arguments that are not plain values")
    for name in sorted(_changed_names(tree, set(bound)), key=bound.__getitem__):
        found.append(f"line {bound[name]}: {name} is a module-level container that code changes")
    return found


def _modules() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_level_mutable_cache(path: Path) -> None:
    assert module_caches(path.read_text(encoding="utf-8")) == []


PLANTED = [
    ("_SEEN: dict[str, int] = {}\ndef f(k: str) -> int:\n    _SEEN[k] = 1\n    return 1\n", "_SEEN"),
    ("_SEEN = dict()\ndef f(k):\n    return _SEEN.setdefault(k, len(k))\n", "_SEEN"),
    ("_ALL = []\ndef f(k):\n    _ALL.append(k)\n", "_ALL"),
    ("_ONE = set()\ndef f(k):\n    seen = _ONE\n    seen.add(k)\n", "_ONE"),
    ("_N = {'a': 0}\ndef f():\n    _N['a'] += 1\n", "_N"),
    ("_T = {}\ndef f():\n    del _T['x']\n", "_T"),
    ("_L = []\ndef f():\n    global _L\n    _L = [1]\n", "_L"),
    ("import functools\n@functools.lru_cache(maxsize=8)\ndef f(layout: Layout) -> int:\n    return 1\n", "f is cached"),
    ("from functools import cache\n@cache\ndef f(x):\n    return x\n", "f is cached"),
]


@pytest.mark.parametrize(("source", "name"), PLANTED)
def test_a_planted_cache_is_found(source: str, name: str) -> None:
    found = module_caches(source)
    assert len(found) == 1 and name in found[0], found


CONSTANTS = [
    "TABLE: dict[str, int] = {'a': 1}\ndef f(k: str) -> int:\n    return TABLE.get(k, 0)\n",
    "from types import MappingProxyType\nTABLE = MappingProxyType({'a': 1})\n",
    "NAMES = ('a', 'b')\nKINDS = frozenset({'x'})\n",
    "ORDER = ['a', 'b']\ndef f() -> list[str]:\n    return sorted(ORDER)\n",
    "def f() -> dict[str, int]:\n    local = {}\n    local['a'] = 1\n    return local\n",
    "import functools\n@functools.cache\ndef source() -> str:\n    return 'x'\n",
    "import functools\n@functools.cache\ndef source(name: str, bits: tuple[int, ...] | None = None) -> str:\n    return name\n",
    "class Book:\n    def __init__(self) -> None:\n        self.seen: dict[str, int] = {}\n"
    "    def add(self, k: str) -> None:\n        self.seen[k] = 1\n",
]


@pytest.mark.parametrize("source", CONSTANTS)
def test_constants_and_owned_caches_pass(source: str) -> None:
    assert module_caches(source) == []
