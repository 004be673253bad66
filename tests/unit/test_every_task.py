"""Contracts every catalogue task keeps, checked task by task (no counts).

Why generic: a new domain or benchmark is one more row of the catalogue, and these tests
cover it without an edit (the shape of lm-eval's ``tests/extra/test_new_tasks.py``).
Each task: its committed YAML is the catalogue's output; its test split loads from the
fixture mirror with a prompt and a reference summary per record; its document is cut to
the declared word budget inside the prompt; its few-shot prompt holds its demonstrations;
its metric families and stop sequences are usable; it has a zero-shot twin.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURE_DATA
from custom_metrics import registry
from lm_eval_tasks import catalog
from lm_eval_tasks.benchmarks import stop_sequences
from lm_eval_tasks.catalog import load_task
from lm_eval_tasks.data.loader import load_split

TASKS = list(catalog.all_tasks())
META = {"data_dir": str(FIXTURE_DATA)}
#: a word budget below every mirror document's length, so the cut shows in every prompt
TIGHT = 5


def _prefix(text: str, words: int) -> re.Pattern[str]:
    """The first ``words`` whitespace words of ``text``, any whitespace between them."""
    return re.compile(r"\s+".join(re.escape(w) for w in text.split()[:words]))


def _demo_ids(doc: dict) -> list[str]:
    ids = doc.get("demo_ids") or []
    return json.loads(ids) if isinstance(ids, str) else list(ids)


def _mirror_records(benchmark: str, subset: str) -> dict[str, dict]:
    """Every record of every split file the mirror holds for ``benchmark/subset``, by id."""
    out: dict[str, dict] = {}
    for path in sorted((FIXTURE_DATA / benchmark / subset).glob("*.jsonl")):
        out.update({r["id"]: r for r in load_split(benchmark, subset, path.stem, FIXTURE_DATA)})
    return out


@pytest.mark.parametrize("task", TASKS)
def test_committed_yaml_is_the_catalogues_output(task):
    spec = catalog.lookup(task)
    path = catalog.TASKS_DIR / spec.benchmark / f"{task}.yaml"
    assert path.is_file(), f"{path} missing: run `python -m lm_eval_tasks.catalog`"
    assert path.read_text() == catalog.rendered_yamls()[path], f"{path} is stale: run `python -m lm_eval_tasks.catalog`"


def test_templates_and_groups_are_the_catalogues_output_and_nothing_else_is_generated():
    rendered = catalog.rendered_yamls()
    for path, text in rendered.items():
        assert path.is_file() and path.read_text() == text, f"{path}: run `python -m lm_eval_tasks.catalog`"
    on_disk = {p for b in catalog.BENCHMARKS for p in (catalog.TASKS_DIR / b).glob("*.yaml")}
    assert on_disk == {p for p in rendered if p.suffix == ".yaml"}


@pytest.mark.parametrize("task", TASKS)
def test_test_split_loads_with_prompt_summary_and_demonstrations(task):
    spec = catalog.lookup(task)
    docs = load_task(task, "test", META).docs
    assert docs, f"{task}: no test record in the fixture mirror"
    ids = [d["id"] for d in docs]
    assert len(set(ids)) == len(ids), f"{task}: duplicate record ids"
    pool = _mirror_records(spec.benchmark, spec.subset) if spec.shots else {}
    for d in docs:
        assert isinstance(d["prompt"], str) and d["prompt"].strip(), d["id"]
        assert isinstance(d["summary"], str) and d["summary"].strip(), d["id"]
        demos = _demo_ids(d)
        assert len(demos) == spec.shots, f"{d['id']}: {len(demos)} demonstrations for a {spec.shots}-shot task"
        assert d["id"] not in demos, f"{d['id']} is its own demonstration"
        for demo in demos:
            assert _prefix(pool[demo]["document"], TIGHT).search(d["prompt"]), f"{d['id']}: demo {demo} not in prompt"


@pytest.mark.parametrize("task", TASKS)
def test_prompt_holds_the_document_cut_to_the_word_budget(task):
    tight = load_task(task, "test", {**META, "max_doc_words": TIGHT, "max_demo_words": TIGHT}).docs
    for d in tight:
        words = d["document"].split()
        assert _prefix(d["document"], TIGHT).search(d["prompt"]), f"{d['id']}: document start not in prompt"
        if len(words) > TIGHT:
            assert not _prefix(d["document"], TIGHT + 1).search(d["prompt"]), (
                f"{d['id']}: more than max_doc_words={TIGHT} words of the document in the prompt")


@pytest.mark.parametrize("task", TASKS)
def test_families_stops_and_zero_shot_twin(task):
    spec = catalog.lookup(task)
    assert spec.families, task
    for name in spec.families:
        assert registry.get(name).keys, name  # UnknownFamily for a name the registry lacks
    assert catalog.metric_keys(spec)
    for stops in (spec.until, stop_sequences(spec, META) or spec.until):
        assert stops and all(isinstance(s, str) and s for s in stops), f"{task}: stop sequences {stops!r}"
    assert spec.max_gen_toks > 0
    twin = catalog.zero_shot(spec)
    assert catalog.all_tasks()[twin.name] is twin
    assert (twin.benchmark, twin.subset, twin.shots, twin.variant) == (spec.benchmark, spec.subset, 0, "")
