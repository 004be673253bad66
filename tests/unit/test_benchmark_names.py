"""No benchmark named outside its record: the report and the analysis code read each
benchmark's facts (its report layouts, published tables, measure profile) from the
records they are handed (lm_eval_tasks/benchmarks/*/record.py), never by comparing with
or building a name such as ``"domainsum"`` or ``"adapteval_table3"``.

The scan is syntactic (``ast``): every string constant, f-string parts included, of the
modules under :data:`SCANNED`; docstrings (and other bare string statements) are prose
and not scanned. Widen :data:`SCANNED` as more modules read their benchmark from a record.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lm_eval_tasks.benchmarks.layout import piece_name
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS, RECORDS

ROOT = Path(__file__).resolve().parents[2]
#: the folders and modules (relative to the repository root) that may name no benchmark
SCANNED = ("lm_eval_tasks/report", "lm_eval_tasks/analysis/domain_stats.py", "lm_eval_tasks/commands/domain_stats.py")
#: the suite's benchmark names (the user's record, ``own``, is an ordinary word)
NAMES = tuple(RECORDS)


def _prose(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings or other bare string statements."""
    return {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def named(source: str, names: tuple[str, ...] = NAMES) -> list[tuple[int, str]]:
    """(line, text) of every string constant of ``source`` that is a benchmark name or starts
    with ``<benchmark>_``, docstrings left out."""
    tree = ast.parse(source)
    prose = _prose(tree)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
            and any(node.value == n or node.value.startswith(f"{n}_") for n in names))


def _modules() -> list[Path]:
    out = []
    for entry in SCANNED:
        path = ROOT / entry
        assert path.exists(), f"{entry}: listed in SCANNED but not in the repository"
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def test_the_scan_finds_a_name_built_or_compared_and_skips_prose():
    first, second = NAMES[:2]
    source = (f'"""Module docstring naming {first}."""\n'
              f'def f(b, i):\n'
              f'    """{first} in a docstring is prose."""\n'
              f'    x = b == "{first}"\n'
              f'    y = f"{second}_figure4{{i}}"\n'
              f'    z = "{first.upper()} and {first}-like words"\n'
              f'    return x, y, z, "{second}table"\n')
    assert named(source) == [(4, first), (5, f"{second}_figure4")]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_benchmark_name_outside_the_records(path):
    found = named(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.relative_to(ROOT)} names a benchmark ({found}): read it from the record "
                       "(lm_eval_tasks/benchmarks/<paper>/record.py) the code is handed")


def test_each_layout_is_its_records_and_named_after_its_table():
    """A layout's benchmark and table name are its record's (the report keys runs and
    published rows by them)."""
    layouts = [(r, lay) for r in ALL_RECORDS.values() for lay in r.report.layouts]
    assert {r.name for r, _ in layouts} >= {"adapteval", "ccsbench"}
    for record, layout in layouts:
        assert layout.benchmark == record.name, (record.name, layout.table)
        assert layout.name == piece_name(record.name, layout.table), (record.name, layout.name)
    assert piece_name("bench", "Table 12") == "bench_table12" and piece_name("b", "Figure 4") == "b_figure4"


@pytest.mark.parametrize("piece", ["measure_profile", "statistics_table", "correlation_table",
                                   "amplitude_figure"])
def test_a_piece_read_from_one_record_is_declared_by_one(piece):
    """The report and ``domsum domain-stats``/``correlate`` take these pieces from the one
    record declaring them: a second declaration would be ignored, so it must fail here."""
    declaring = [r.name for r in ALL_RECORDS.values() if getattr(r.report, piece)]
    assert len(declaring) == 1, (piece, declaring)
