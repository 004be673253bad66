"""Import rules of the packages: no circle, no private name across modules, metrics below
analysis, and every setting a metric family names exists.

Why: a circle (even through a function-level import) means two modules that cannot be
understood or moved apart; a private name imported elsewhere is an interface nobody
declared; statistics and meta-evaluation import the metrics, never the reverse, so a
metric module stays light. The graph counts every import, at any depth, and
``TYPE_CHECKING`` imports too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGES = ("custom_metrics", "lm_eval_tasks", "finetune")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _owner(name: str) -> str:
    """The module of ``name`` (a module, or a name inside one)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(module: str) -> list[tuple[str, str]]:
    """``(imported module, imported name or "")`` of every import statement in ``module``."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            out += [(base, a.name) for a in node.names]
    return [(m, n) for m, n in out if m.split(".")[0] in PACKAGES]


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for base, name in _imports(module):
            target = _owner(f"{base}.{name}" if name and f"{base}.{name}" in MODULES else base)
            # a module importing its own package's __init__ (or itself) is not an edge of a circle
            if target and target != module and not module.startswith(target + "."):
                graph[module].add(target)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_the_circle_finder_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    assert _circles(_graph()) == []


#: the pairs of lm_eval_tasks' top-level packages and modules that still import each other
#: none is left; a pair that appears fails here
TWO_WAY_LEFT: set[tuple[str, str]] = set()


def _top_level_pairs() -> set[tuple[str, str]]:
    """Pairs of ``lm_eval_tasks.<x>`` (a package or module directly under it) of which each
    imports the other, at any depth of either."""
    def top(module: str) -> str:
        parts = module.split(".")
        return parts[1] if parts[0] == "lm_eval_tasks" and len(parts) > 1 else ""

    edges = {(top(m), top(t)) for m, targets in _graph().items() for t in targets}
    return {tuple(sorted((a, b))) for a, b in edges if a and b and a != b and (b, a) in edges}


def test_no_two_packages_of_the_suite_import_each_other():
    """A two-way pair is one unit in disguise: neither can be read, tested or moved alone
    (lm_eval_tasks.published left report for this: the analysis commands and the report
    both place numbers beside the paper's, and the report lays out the analysis's studies)."""
    assert _top_level_pairs() == TWO_WAY_LEFT


def test_no_private_name_crosses_a_module():
    crossing = sorted(f"{m} imports {base}.{name}" for m in MODULES for base, name in _imports(m)
                      if name.startswith("_") and not name.startswith("__") and _owner(base) != m)
    assert crossing == []


def test_metric_modules_never_import_analysis():
    """custom_metrics/analysis (statistics, meta-evaluation, plots, domain measures, token
    shift) imports the metrics; no other module of the library (core, families, judge)
    imports it, so a scoring run loads none of it."""
    upward = sorted(f"{m} imports {base}" for m in MODULES if m.startswith("custom_metrics")
                    and not m.startswith("custom_metrics.analysis")
                    for base, _ in _imports(m) if base.startswith("custom_metrics.analysis"))
    assert upward == []


def test_every_setting_a_family_names_exists():
    from custom_metrics import registry
    from lm_eval_tasks.settings import SETTINGS

    unknown = sorted(f"{fam.name}: {key}" for fam in registry.all_families()
                     for key in (*fam.reads, *fam.recorded.values()) if key not in SETTINGS)
    assert unknown == []
    judged = [fam for fam in registry.all_families() if "judge" in fam.needs]
    assert judged and all({"judge_model", "judge_concurrency", "judge_timeout"} <= set(f.reads) for f in judged)


def test_each_judge_setting_has_one_name_the_config_field_without_judge_():
    """No renaming table: a JudgeConfig field a setting fills is named as its row without
    ``judge_`` (``progress``, the suite-wide switch, the one declared exception), and every
    judge row fills a field or is a judged family's own setting (its record declares it)."""
    import dataclasses

    from custom_metrics import registry
    from custom_metrics.judge import JudgeConfig
    from custom_metrics.judge import config as judge_config
    from lm_eval_tasks.settings import SETTINGS

    names = [f.name for f in dataclasses.fields(JudgeConfig)]
    filled = {name: judge_config.setting_of(name) for name in names if judge_config.setting_of(name)}
    assert {n: row for n, row in filled.items() if row != "judge_" + n} == {"progress": "progress"}
    assert sorted(row for row in filled.values() if row not in SETTINGS) == []
    assert judge_config.SETTINGS == tuple(filled.values()) and judge_config.FIELDS == tuple(filled)
    assert {"model", "concurrency", "cache", "timeout", "base_url", "api_key"} <= set(filled)
    assert set(names) - set(filled) == judge_config.NO_SETTING  # every unfilled field is declared so

    family_own = {key for fam in registry.all_families() if "judge" in fam.needs for key in fam.settings}
    judge_rows = {key for key, row in SETTINGS.items() if row.group == "judge" or key.startswith("judge_")}
    assert sorted(judge_rows - set(filled.values()) - family_own) == []
    assert sorted(judge_rows & set(filled.values()) & family_own) == []  # one owner per row
    assert sorted(judge_rows - set(filled.values())) == ["judge_prompt_variant"]


def test_every_setting_a_family_module_reads_is_declared_by_its_families():
    """``ctx.settings.get("x")`` in a family's module, with ``x`` in none of its records'
    settings, would read None whatever the user set (meteor's ``use_wordnet`` did)."""
    import importlib
    import re

    from custom_metrics import registry

    modules: dict[str, set[str]] = {}
    for fam in registry.all_families():
        modules.setdefault(fam.score.__module__, set()).update(fam.reads)
    read = re.compile(r"""ctx\.settings(?:\.get\(|\[)\s*["'](\w+)["']""")
    undeclared = sorted(f"{name}: {key}" for name, declared in modules.items()
                        for key in read.findall(Path(importlib.import_module(name).__file__).read_text())
                        if key not in declared)
    assert len(modules) > 10
    assert undeclared == []


def test_a_family_needing_an_unknown_capability_fails_when_declared():
    import pytest

    from custom_metrics.registry import NEEDS, Family

    with pytest.raises(ValueError, match="needs \\['judg'\\] not among"):
        Family(name="x", keys=(), score=lambda b, c: {}, description="", source="", needs=("judg",))
    assert {"judge", "vocabulary", "document", "domain"} <= set(NEEDS)


def test_a_family_reading_a_missing_setting_is_one_suite_error(monkeypatch):
    import pytest

    from custom_metrics import registry
    from custom_metrics.errors import SuiteError
    from lm_eval_tasks import scoring_context

    fake = registry.Family(name="fake", keys=(), score=lambda b, c: {}, description="", source="",
                           settings=("rouge_stemming", "no_such_setting"))
    monkeypatch.setattr(registry, "get", lambda name: fake)
    with pytest.raises(SuiteError, match="metric family fake reads no_such_setting, which"):
        scoring_context.family_context("fake")


def test_an_unknown_family_is_a_suite_error_naming_the_close_ones():
    import pytest

    from custom_metrics import registry
    from custom_metrics.errors import SuiteError

    with pytest.raises(SuiteError, match="unknown metric family 'rogue'; did you mean rouge"):
        registry.get("rogue")
