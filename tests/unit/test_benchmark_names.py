"""No module outside ``lm_eval_tasks/benchmarks/`` holds a suite benchmark's, task's or group's
name as a string constant (docstrings, the generated task folders and the sample data aside).

Why: a name written in a command's default, a loader's registry, a preset table or a report
layout is a second place a benchmark's fact lives; renaming or adding a benchmark then misses
it. A consumer holds the record (``spec.record``, ``suite.DOMAIN_STUDY``, the records the
report is handed) and says ``.name``.

The scan is syntactic (``ast``): every string constant, f-string parts included, that is a
benchmark name or starts with ``<benchmark>_`` (every task and group name does);
docstrings (and other bare string statements) are prose and not scanned. The modules that
still hold one are :data:`NAMES_LEFT`, each with its reason; the test fails both ways.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lm_eval_tasks.benchmarks.layout import piece_name
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS, RECORDS

ROOT = Path(__file__).resolve().parents[2]
#: the packages scanned, with the folders of lm_eval_tasks left out: the benchmarks' own
#: packages, the sample data and the generated task folders (``lm_eval_tasks/<benchmark>/``)
SCANNED = ("lm_eval_tasks", "finetune", "custom_metrics")
SKIPPED = ("lm_eval_tasks/benchmarks", "lm_eval_tasks/sample_data", *(f"lm_eval_tasks/{n}" for n in RECORDS))
#: the modules that still hold a name, and why. The metric library names the benchmark whose
#: release a function or a profile follows in its public names (``medqsum_battery``,
#: ``domainsum_fragments``, ``adapteval_judge``, the measure profile ``"domainsum"``): the
#: library imports no suite code, so it cannot hold a record
NAMES_LEFT = {
    "custom_metrics/__init__.py": "the public names medqsum_battery, domainsum_fragments, adapteval_judge",
    "custom_metrics/analysis/measures.py": "the measure profile 'domainsum' (the DomainSum release's statistics)",
    "custom_metrics/analysis/fragments.py": "the public name domainsum_fragments",
    "custom_metrics/analysis/domains.py": "the measure profile 'domainsum' as a default",
    "custom_metrics/battery.py": "the public name medqsum_battery in its messages",
    "custom_metrics/judge/prompts.py": "the public name adapteval_judge in its message",
}
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
        out += [p for p in sorted((ROOT / entry).rglob("*.py"))
                if not p.relative_to(ROOT).as_posix().startswith(tuple(f"{s}/" for s in SKIPPED))]
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


def test_no_benchmark_name_outside_the_records():
    held = {p.relative_to(ROOT).as_posix(): found for p in _modules() if (found := named(p.read_text(encoding="utf-8")))}
    new = {m: found for m, found in held.items() if m not in NAMES_LEFT}
    assert not new, (f"{new} name a benchmark: read it from the record "
                     "(lm_eval_tasks/benchmarks/<paper>/record.py) the code is handed")
    assert sorted(set(NAMES_LEFT) - set(held)) == []  # a module that lost its names leaves the list


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
