"""Shared test helpers (importable as ``helpers``: tests/ is on sys.path through tests/conftest.py)."""
