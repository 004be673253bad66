"""Golden input/output cases of every metric family, read from data files by one runner.

Why data files: a family's contract is "these texts give these numbers", and a case
that states its inputs, its expected values and where they come from (arithmetic shown
in ``why``, or the reference library and version in ``source``) can be read and checked
by someone who does not read the code. The expected values are never our own output:
they are hand-computed or come from the library the family follows (rouge-score,
sacrebleu, NLTK, pycocoevalcap, scipy), run once outside this project.

Each ``tests/fixtures/metric_cases/<family>.json`` holds ``{"family", "description",
"cases": [...]}``; a case has ``inputs`` (``predictions``, ``references``, optional
``documents`` and ``extras`` as :class:`custom_metrics.registry.Batch` reads them),
optional ``context`` (``benchmark``, ``subset``, ``settings`` given as task metadata and
resolved by the settings resolver), optional ``files`` (written under a temporary folder,
named in settings as ``{tmp}``), ``expected`` (``per_document``: one value per document
and key, null for NaN; ``corpus``: the key's aggregate), ``tolerance``, ``source``, ``why``.

Scoring goes through the public path: :func:`custom_metrics.registry.get`, the family's
``score`` over a ``Batch`` with a ``Context``, and :func:`custom_metrics.registry.aggregate`.
A registry family without a case file fails here, unless it needs a model or a judge
(:data:`NEEDS_MODEL`), which ``tests/unit`` never loads.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from custom_metrics import registry
from lm_eval_tasks import settings

CASES_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "metric_cases"

#: families scored by a model or an LLM judge: no case file in the unit tests, and why
NEEDS_MODEL: dict[str, str] = {
    "bertscore": "a sentence encoder (MiniLM or RoBERTa) scores it",
    "bertscore_sci": "a scientific BERT encoder scores it",
    "blanc_help": "a masked language model scores it",
    "blanc_tune": "a masked language model is fine-tuned per document",
    "mauve": "a causal language model featurizes the texts",
    "perplexity": "a causal language model scores it",
    "judge": "an LLM judge (HTTP endpoint) rates each summary",
    "fm": "an LLM judge extracts and checks facets",
    "ccs_focus": "an LLM judge labels each summary's focus",
}


def _case_files() -> list[Path]:
    return sorted(CASES_DIR.glob("*.json"))


def _cases() -> list[Any]:
    out = []
    for path in _case_files():
        data = json.loads(path.read_text(encoding="utf-8"))
        for i, case in enumerate(data["cases"]):
            out.append(pytest.param(data["family"], case, id=f"{path.stem}-{i}-{case['name']}"))
    return out


def _close(got: Any, want: float | None, tol: float) -> bool:
    """``want`` None means NaN; otherwise ``got`` within ``tol`` (absolute)."""
    got = float(got)
    if want is None:
        return math.isnan(got)
    return not math.isnan(got) and abs(got - want) <= tol


def _context(fam: registry.Family, case: dict, tmp: Path) -> registry.Context:
    ctx = case.get("context", {})
    given = {k: (v.replace("{tmp}", str(tmp)) if isinstance(v, str) else v)
             for k, v in ctx.get("settings", {}).items()}
    unread = sorted(set(given) - set(fam.settings))
    assert not unread, f"case sets {unread}, which family {fam.name} does not read ({fam.settings})"
    from lm_eval_tasks.scoring_context import family_context

    # the one scoring-context builder: a case naming a benchmark gets its record's conventions
    return family_context(fam.name, {**given, "progress": False}, benchmark=ctx.get("benchmark", ""),
                          subset=ctx.get("subset", ""))


@pytest.mark.parametrize("family, case", _cases())
def test_family_reproduces_its_golden_case(family, case, tmp_path, monkeypatch):
    fam = registry.get(family)
    for key in fam.settings:  # only the case's settings and the rows' defaults count
        if settings.SETTINGS[key].env:
            monkeypatch.delenv(settings.SETTINGS[key].env, raising=False)
    for rel, text in case.get("files", {}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    inputs = case["inputs"]
    n = len(inputs["predictions"])
    batch = registry.Batch(predictions=inputs["predictions"], references=inputs["references"],
                           documents=inputs.get("documents", [""] * n), extras=inputs.get("extras", [{}] * n))
    ctx = _context(fam, case, tmp_path)
    scored = fam.score(batch, ctx)

    assert set(scored) == set(fam.key_names), f"{family} returned {sorted(scored)}"
    assert all(len(v) == n for v in scored.values()), "one value (or item) per document"
    tol = case["tolerance"]
    expected = case["expected"]
    for key, values in expected.get("per_document", {}).items():
        assert fam.key(key).aggregation != "corpus", f"{key}: a corpus key's items are internal; give its corpus value"
        bad = [(i, g, w) for i, (g, w) in enumerate(zip(scored[key], values)) if not _close(g, w, tol)]
        assert len(values) == n and not bad, f"{key}: (document, got, expected) {bad}; {case['why']}"
    for key, value in expected.get("corpus", {}).items():
        got = registry.aggregate(fam, key, scored[key], ctx)
        assert _close(got, value, tol), f"{key}: corpus {got} != {value}; {case['why']}"


def test_every_family_has_cases_or_needs_a_model():
    """A new family brings its golden cases (or says why it cannot in unit tests)."""
    with_cases = {json.loads(p.read_text(encoding="utf-8"))["family"]: p for p in _case_files()}
    for name, path in with_cases.items():
        assert path.stem == name, f"{path.name} holds cases of {name}: name it {name}.json"
    families = set(registry.names())
    missing = sorted(families - set(with_cases) - set(NEEDS_MODEL))
    assert not missing, f"families without tests/fixtures/metric_cases/<family>.json: {missing}"
    stale = sorted((set(with_cases) | set(NEEDS_MODEL)) - families)
    assert not stale, f"case files or NEEDS_MODEL entries of no registry family: {stale}"
    both = sorted(set(with_cases) & set(NEEDS_MODEL))
    assert not both, f"{both}: listed as needing a model but has a unit case file"
    for name in NEEDS_MODEL:  # the exemption is for model and judge families only
        assert set(registry.get(name).needs) & {"model", "encoder", "judge"}, name


@pytest.mark.parametrize("path", _case_files(), ids=lambda p: p.stem)
def test_case_file_covers_every_key_and_says_where_values_come_from(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    fam = registry.get(data["family"])
    covered: set[str] = set()
    for case in data["cases"]:
        assert case["source"].strip() and case["why"].strip(), case["name"]
        assert isinstance(case["tolerance"], (int, float)) and case["tolerance"] >= 0, case["name"]
        for part in ("per_document", "corpus"):
            unknown = set(case["expected"].get(part, {})) - set(fam.key_names)
            assert not unknown, f"{case['name']}: {fam.name} has no key {sorted(unknown)}"
            covered |= set(case["expected"].get(part, {}))
    assert covered == set(fam.key_names), f"keys of {fam.name} without a case: {sorted(set(fam.key_names) - covered)}"
