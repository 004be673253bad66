"""Test-only helpers: the stub judge server, tiny masked LMs, synthetic corpora.

Why a package beside the tests: the benchmarks in ``scripts/`` use the same helpers,
and nothing installed may depend on them (the wheel ships no ``tests``). Tests and
benchmarks put ``tests/`` on ``sys.path`` and import ``helpers.<module>``.
"""
