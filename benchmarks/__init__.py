"""fleet's benchmarks: not installed with the product, run from a checkout.

``python -m benchmarks NAME [OPTIONS] --json`` runs one benchmark and prints one JSON document of
the shape :func:`benchmarks.report.document` builds. Each benchmark is a module here exposing
``run(argv: list[str]) -> Measured``; ``make bench`` runs them all. Speed is measured here and never
asserted in the test suite, where a loaded machine would make a timing flaky.
"""
