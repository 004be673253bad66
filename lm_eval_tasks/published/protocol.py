"""Is a run's number comparable with the paper's beside it? A field-by-field check of what
the run did against the paper's protocol (``"protocols"`` in the paper's data file,
:mod:`lm_eval_tasks.published`).

Why: a number is only comparable with a published one when it was produced the same way.
A run scored with MiniLM (layer 6) on 24 documents printed above a paper's roberta-large
BERTScore on 500 documents looks like a reproduction and is not one; the page must say
so beside the number, in words, or say "same protocol".

Two halves, so any command that puts a published number beside a user's (the report's
paper layouts; domain statistics, cross-domain matrices, meta-evaluation and token shift
through :mod:`lm_eval_tasks.published.beside`) reuses one rule:

* :class:`RunFacts` — what one run did: its model, setting (shots or fine-tuned), subset,
  how many documents it scored, its metrics' recorded variants (ROUGE stemming, BERTScore
  encoder / layer / idf / baseline rescaling, DVO vocabulary size, judge model) and its
  generation (new-token budget, greedy or sampled). :func:`run_facts` reads them from a
  report :class:`~lm_eval_tasks.report.runs.Run` (its results file's task metadata and its
  samples); another command builds one from what it holds.
* :func:`check` — a :class:`Check` of one run against one protocol: every compared
  :class:`Field`, the ``differences`` (a field that differs, or that the run or the paper
  does not state), ``comparable`` (true only when there is none) and one sentence in words
  (``not comparable: BERTScore encoder all-MiniLM-L6-v2 layer 6 (paper: roberta-large
  layer 17); 24 of 500 test documents`` or ``same protocol``). :func:`check_table` picks the
  table's block for the run's setting first; :func:`combined` joins the checks of the runs
  one table row shows.

A field the paper does not state (``{"unknown": reason}``) is a difference: nobody can
claim the run followed it. A field the paper's protocol does not name is not compared.
Compared: the setting, the test documents (the run's count against the paper's size or
sample: the count, not the document ids), each shown metric's variant fields of its kind,
and the generation budget and decoding where the paper states them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval_tasks.published import Published, is_unknown, metric_kind
from lm_eval_tasks.published.judged import judged_of

#: the protocol fields compared per kind of metric (the others, e.g. a ROUGE ``variant``,
#: are fixed by the suite key a column reads and are shown, not compared)
COMPARED: dict[str, tuple[str, ...]] = {
    "rouge": ("stemming",), "bertscore": ("encoder", "layer", "idf", "rescale_with_baseline"),
    "dvo": ("size",), "judge": ("judge_model",)}
#: where a results file's task metadata records each compared field (written by the metric
#: families' records: custom_metrics/families/rouge.py, bertscore.py, dvo.py, judge_metrics.py)
RECORDED: dict[tuple[str, str], str] = {
    ("rouge", "stemming"): "rouge_stemming",
    ("bertscore", "encoder"): "bertscore_model_used",
    ("bertscore", "layer"): "bertscore_layers_used",
    ("bertscore", "idf"): "bertscore_idf",
    ("bertscore", "rescale_with_baseline"): "bertscore_rescale_with_baseline",
    ("dvo", "size"): "vocabulary_words",
    ("judge", "judge_model"): "judge_model_used",
}
#: how a field reads in a sentence
WORDS = {"stemming": "stemming", "encoder": "encoder", "layer": "layer", "idf": "idf",
         "rescale_with_baseline": "baseline rescaling", "size": "vocabulary size", "judge_model": "judge model"}
DOCUMENTS, JUDGED, SPLIT, SETTING = "test documents", "judged documents", "document split", "setting"
MAX_NEW_TOKENS, DECODING = "max new tokens", "decoding"
#: the page's marks beside a row
SAME, DIFFERENT = "✓", "✗"
NOT_RECORDED = {"unknown": "not recorded in the run's results file"}
#: how a row's setting names a task variant that changes the model's input (CCSBench's)
INPUTS = {"hard": "hard prompt", "fulltext": "full document"}


@dataclass(frozen=True)
class RunFacts:
    """What one run did, as far as a paper's protocol asks.

    ``scoring``: kind of metric (:data:`COMPARED`) -> field -> the value the run used;
    a field missing is one the run did not record. ``documents``: the documents it scored
    (None: not known, e.g. no samples file). ``where``: how a row naming several runs
    tells this one apart (``cnndm 2-shot``).
    """

    label: str
    setting: str
    model: str | None = None
    subset: str | None = None
    documents: int | None = None
    scoring: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    generation: Mapping[str, Any] = field(default_factory=dict)
    where: str = ""
    #: the split(s) the documents came from (compared with the paper's ``documents.split``
    #: where given; None: not compared, as a harness task's split is the benchmark's own)
    split: str | None = None
    #: free fields of a paper's metric protocol the run states for every metric it shows
    #: (``tokenizer``, ``unit``, ``tokens``): compared wherever the paper's metric names the field
    stated: Mapping[str, Any] = field(default_factory=dict)
    #: the documents its judged metrics scored (:func:`judged_of`): ``count``, ``random`` (a seeded
    #: random sample, or every document evaluated) and ``words``; empty: not known
    judged: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Field:
    """One compared field: the run's value, the paper's (either may be ``{"unknown":
    reason}``), whether they agree (None: one side does not state it) and, in a row of
    several runs, which runs it concerns (``where``)."""

    field: str
    run: Any
    paper: Any
    same: bool | None
    where: str = ""

    def record(self) -> dict[str, Any]:
        out = {"field": self.field, "run": _plain(self.run), "paper": _plain(self.paper)}
        return out | ({"where": self.where} if self.where else {})


@dataclass(frozen=True)
class Check:
    """A run (or a row of runs) against the paper's protocol of one table."""

    fields: tuple[Field, ...]
    #: why nothing could be compared (no protocol for the table), else ""
    missing: str = ""

    @property
    def differences(self) -> list[Field]:
        return [f for f in self.fields if f.same is not True]

    @property
    def comparable(self) -> bool:
        return not self.missing and not self.differences

    def sentence(self) -> str:
        """``same protocol``, or ``not comparable: `` and each difference in words."""
        if self.comparable:
            return "same protocol"
        if self.missing:
            return f"not comparable: {self.missing}"
        return "not comparable: " + "; ".join(_phrases(self.fields))

    def cell(self) -> str:
        """The page's cell beside the row: a mark and the sentence."""
        return f"{SAME if self.comparable else DIFFERENT} {self.sentence()}"

    def record(self) -> dict[str, Any]:
        """The check as ``paper_rows.json`` holds it."""
        return {"comparable": self.comparable, "differences": [f.record() for f in self.differences],
                "checked": list(dict.fromkeys(f.field for f in self.fields)), "sentence": self.sentence()}


# ---------------------------------------------------------------- the run's side


def encoder_name(model: Any) -> str:
    """A readable name of a BERTScore encoder: a hub id as given; a local folder by the
    hub id it was saved from where its files say so (a hub cache's ``models--org--name``,
    its model card's title), else by its last path component that is not a generic one
    (``model``, ``snapshots``, a commit hash)."""
    text = str(model).rstrip("/")
    path = Path(text).expanduser()
    if not (text.startswith(("/", ".", "~")) and path.exists()):
        return text
    for part in reversed(path.parts):
        if part.startswith("models--"):
            return part.removeprefix("models--").replace("--", "/")
    title = _card_title(path / "README.md")
    if title:
        return title
    generic = {"model", "models", "snapshots", "main", "checkpoint", "weights"}
    for part in reversed(path.parts):
        if part.lower() not in generic and not (len(part) == 40 and all(c in "0123456789abcdef" for c in part)):
            return part
    return text


def _card_title(card: Path) -> str | None:
    """The first ``# title`` of a model card, when it is one word (a model's name)."""
    try:
        lines = card.read_text(encoding="utf-8", errors="replace").splitlines()[:200]
    except OSError:
        return None
    for line in lines:
        if line.startswith("# "):
            title = line[2:].strip()
            return title if title and " " not in title else None
    return None


def sampled(settings: Mapping[str, str]) -> bool:
    """Whether a run's identity settings (:attr:`System.settings`) decode by sampling:
    ``do_sample`` set, or a temperature above 0 without ``do_sample=false``."""
    do_sample = str(settings.get("gen_kwargs.do_sample", "")).lower()
    if do_sample in ("true", "false"):
        return do_sample == "true"
    try:
        return float(settings.get("gen_kwargs.temperature", 0)) > 0
    except ValueError:
        return False


def setting_of(run: Any) -> str:
    """How a row names a run's setting: ``0-shot``, ``fine-tuned``, ``0-shot, hard prompt`` (:data:`INPUTS`)."""
    words = INPUTS.get(run.spec.variant, "") if run.spec else ""
    return ("fine-tuned" if run.system.fine_tuned else f"{run.shots}-shot") + (f", {words}" if words else "")


def run_facts(run: Any) -> RunFacts:
    """The :class:`RunFacts` of a report run: its results file's task metadata (what the
    scorers recorded they used, the generation budget), its identity settings (greedy or
    sampled) and its samples (the documents it scored)."""
    setting = setting_of(run)
    return RunFacts(label=run.system.label, setting=setting, model=run.system.started_from or run.system.base,
                    subset=run.subset, documents=len(run.samples) if run.samples else None,
                    scoring=scoring_of(run.record or {}),
                    generation=generation_of(run.record or {}, dict(run.system.settings)),
                    where=f"{run.subset} {setting}",
                    judged=judged_of(run.record or {}, len(run.samples) if run.samples else None))


def scoring_of(record: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What a results file's task metadata (``record``) says its scorers used, by kind of
    metric (:data:`RECORDED`); a field not recorded is missing."""
    scoring: dict[str, dict[str, Any]] = {}
    for (kind, name), key in RECORDED.items():
        if record.get(key) is not None:
            scoring.setdefault(kind, {})[name] = record[key]
    return scoring


def generation_of(record: Mapping[str, Any], settings: Mapping[str, str]) -> dict[str, Any]:
    """A run's decoding (greedy or sampled, from its identity ``settings``) and the
    new-token budget its task metadata (``record``) recorded."""
    generation: dict[str, Any] = {"decoding": "sampled" if sampled(settings) else "greedy"}
    recorded = record.get("generation")
    budget = recorded.get("max_gen_toks") if isinstance(recorded, dict) else None
    if isinstance(budget, int):
        generation["max_new_tokens"] = budget
    return generation


# ---------------------------------------------------------------- the paper's side


def settings_match(run_setting: str, paper_setting: str) -> bool:
    """Whether a value printed in ``paper_setting`` is of a run in ``run_setting``: the same
    shots (DomainSum's ``2-shot minus 0-shot`` is a two-shot number), or fine-tuned with
    the same prompt kind (CCSBench's ``fully fine-tuned, hard prompt``), or the same input (I+C or full text)
    where the paper names the input alone (CCSBench Table 7's ``input full document``)."""
    if paper_setting.startswith("input "):
        return (run_setting.partition(", ")[2] or "introduction and conclusion") == paper_setting.removeprefix("input ")
    if run_setting == paper_setting or paper_setting.startswith(run_setting + " minus"):
        return True
    if run_setting.startswith("fine-tuned"):
        hard = "hard prompt" in run_setting
        return "fine-tuned" in paper_setting and ("hard prompt" in paper_setting) == hard
    return False


def block_for(paper: Published, table: str, facts: RunFacts) -> tuple[str | None, list[str]]:
    """(the table's block holding values of the run's setting — of its subset and model
    where the values name them —, the table's settings): no block when the table has
    none, or none of the run's setting."""
    values = paper.find(table=table)
    settings = list(dict.fromkeys(v["setting"] for v in values))
    hits = [v for v in values if settings_match(facts.setting, v["setting"])]
    if facts.subset is not None and any(v.get("subset") == facts.subset for v in hits):
        hits = [v for v in hits if v.get("subset") == facts.subset]
    row = paper.model_of(facts.model)
    if row is not None and any(v.get("model") == row for v in hits):
        hits = [v for v in hits if v.get("model") == row]
    return (hits[0].get("block") if hits else None), settings


def check_table(paper: Published, table: str, facts: RunFacts, metrics: Sequence[str]) -> Check:
    """``facts`` against ``paper``'s protocol of ``table`` (of the block of the run's setting),
    for the paper's ``metrics`` the row shows."""
    if paper.protocol(table) is None:
        return Check((), missing=f"{paper.paper} {table} has no protocol in its data file")
    block, settings = block_for(paper, table, facts)
    has_setting = any(settings_match(facts.setting, s) for s in settings)
    shown = dict.fromkeys(s.split(" minus ")[0] for s in settings)  # DomainSum's printed 2-shot differences
    setting = Field(SETTING, facts.setting, " or ".join(shown), has_setting)
    return check(facts, paper.protocol(table, block) or {}, metrics, paper, setting)


def check(facts: RunFacts, protocol: Mapping[str, Any], metrics: Sequence[str],
          paper: Published | None = None, setting: Field | None = None, extra: Sequence[Field] = ()) -> Check:
    """``facts`` against one ``protocol`` (a table's, with its block merged): the
    ``setting`` field where the caller compared it and the caller's ``extra`` fields (a
    command's own: the model of a paper's row, the measures' definitions), the test
    documents (and their split, where the run states one), every compared field of each of
    the paper's ``metrics`` (names in the paper's data file; ``paper`` gives their suite
    keys, hence their kind), the free fields of those metrics the run states
    (:attr:`RunFacts.stated`) and the generation fields the protocol states."""
    fields = ([setting] if setting is not None else []) + list(extra)
    docs = protocol.get("documents") or {}
    kinds = {metric_kind(paper.keys(m)) if paper is not None else None for m in metrics}
    judged = facts.judged if kinds == {"judge"} else {}  # a row of judged metrics only: their documents
    if "count" in docs:
        paper_count = _per_subset(docs["count"], facts.subset)
        run_count = judged.get("count", facts.documents if facts.documents is not None else NOT_RECORDED)
        fields.append(Field(DOCUMENTS, run_count, paper_count, _same(run_count, paper_count)))
    if kinds == {"judge"} and "selection" in docs:
        fields.append(_judged_field(judged, docs["selection"]))
    if facts.split is not None and "split" in docs:
        fields.append(Field(SPLIT, facts.split, docs["split"], _same(facts.split, docs["split"])))
    for metric in metrics:
        stated = (protocol.get("metrics") or {}).get(metric)
        if stated is None:
            continue
        keys = paper.keys(metric) if paper is not None else []
        kind = metric_kind(keys) if keys else None
        used = facts.scoring.get(kind, {}) if kind else {}
        for name in COMPARED[kind] if kind else ():
            if name not in stated:
                continue
            theirs, mine = stated[name], _shown(name, used.get(name, NOT_RECORDED))
            same = _same(mine, theirs, encoder=name == "encoder")
            fields.append(Field(f"{metric} {WORDS[name]}", mine, theirs, same))
        for name, mine in facts.stated.items():
            if name in stated and name not in (COMPARED[kind] if kind else ()):
                fields.append(Field(f"{metric} {WORDS.get(name, name)}", mine, stated[name], _same(mine, stated[name])))
    generation = protocol.get("generation") or {}
    for name, label in (("max_new_tokens", MAX_NEW_TOKENS), ("decoding", DECODING)):
        if name in generation:
            theirs = _per_subset(generation[name], facts.subset) if name == "max_new_tokens" else generation[name]
            mine = facts.generation.get(name, NOT_RECORDED)
            fields.append(Field(label, mine, theirs, _same(mine, theirs)))
    return Check(tuple(fields))


def _judged_field(judged: Mapping[str, Any], selection: Any) -> Field:
    """The judged documents' selection against the paper's: the same when both are random
    samples or both are not (the count is compared as the test documents); a seed the paper
    does not state is no difference, as no two random samples share documents anyway."""
    mine = judged.get("words", NOT_RECORDED)
    if is_unknown(selection) or not judged:
        return Field(JUDGED, mine, selection, None)
    paper_random = "random" in str(selection).casefold()
    return Field(JUDGED, mine, selection, judged["random"] == paper_random)


def combined(checks: Sequence[tuple[RunFacts, Check]]) -> Check:
    """One check for a row that shows several runs (a system's domains and shots): a field
    that is the same for every run once, else once per value with the runs it concerns."""
    if not checks:
        return Check((), missing="no run")
    missing = next((c.missing for _, c in checks if c.missing), "")
    groups: dict[tuple, list[str]] = {}
    first: dict[tuple, Field] = {}
    for facts, c in checks:
        for f in c.fields:
            key = (f.field, json.dumps(_plain(f.run), sort_keys=True), json.dumps(_plain(f.paper), sort_keys=True),
                   f.same)
            groups.setdefault(key, []).append(facts.where)
            first.setdefault(key, f)
    every = [facts.where for facts, _ in checks]
    out = []
    for key, wheres in groups.items():
        f = first[key]
        where = "" if sorted(wheres) == sorted(every) else ", ".join(dict.fromkeys(wheres))
        out.append(Field(f.field, f.run, f.paper, f.same, where))
    return Check(tuple(out), missing=missing)


def check_runs(paper: Published, table: str,
               shown: Sequence[tuple[Any, Sequence[str]]]) -> tuple[list[RunFacts], Check]:
    """(the facts of each run a row shows, the row's one check against ``table``'s protocol);
    ``shown``: each run with the paper's metrics of the cells it fills (a run is checked on
    those only: CCSBench Table 5's length run on length PCC and MAD, not on focus F1)."""
    facts = [(run_facts(r), metrics) for r, metrics in shown]
    return [f for f, _ in facts], combined([(f, check_table(paper, table, f, m)) for f, m in facts])


def row_record(table: str, paper: Published, paper_table: str, run: str, facts: Sequence[RunFacts],
               result: Check) -> dict[str, Any]:
    """One ``paper_rows.json`` object: the page's table and the row's label (``run``), the
    paper's table it is placed beside, the runs' settings, subsets and model (and the
    paper's row of that model, if any), and the check."""
    model = next((f.model for f in facts if f.model), None)
    return {"table": table, "benchmark": paper.benchmark, "paper": paper.paper, "paper_table": paper_table,
            "run": run, "settings": list(dict.fromkeys(f.setting for f in facts)),
            "subsets": list(dict.fromkeys(f.subset for f in facts if f.subset)), "model": model,
            "paper_row": paper.model_of(model), **result.record()}


def metrics_of(paper: Published, keys: Sequence[str], table: str | None = None) -> list[str]:
    """The paper's metric names that the suite ``keys`` compute (of ``table``'s values, when given)."""
    used = {v["metric"] for v in paper.find(table=table)} if table else set(paper.metrics)
    return [m for m, spec in paper.metrics.items() if m in used and set(spec.get("keys", [])) & set(keys)]


#: the column beside each of this run's rows in a paper's layout, and its cell in a published row
COLUMN, PUBLISHED_CELL = "Protocol vs the paper", "—"


# ---------------------------------------------------------------- helpers


def _per_subset(value: Any, subset: str | None) -> Any:
    """A count or budget of the run's subset (an int for every subset, or subset -> int)."""
    if isinstance(value, dict) and not is_unknown(value):
        if subset in value:
            return value[subset]
        return {"unknown": f"the paper states none for {subset or 'this subset'}"}
    return value


def _shown(name: str, value: Any) -> Any:
    return encoder_name(value) if name == "encoder" and not is_unknown(value) else value


def _same(mine: Any, theirs: Any, encoder: bool = False) -> bool | None:
    if is_unknown(mine) or is_unknown(theirs):
        return None
    if encoder:
        return _tail(mine) == _tail(theirs)
    if isinstance(mine, str) and isinstance(theirs, str):
        return mine.strip().casefold() == theirs.strip().casefold()
    if isinstance(mine, bool) or isinstance(theirs, bool):
        return mine is theirs
    if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)):
        return math.isclose(mine, theirs)
    return mine == theirs


def _tail(name: Any) -> str:
    return str(name).rstrip("/").rsplit("/", 1)[-1].casefold()


def _plain(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, dict, list)) or value is None else str(value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _said(value: Any, who: str) -> str:
    """A value in a sentence; an unknown one as "not stated" (the paper) or "not recorded"."""
    if is_unknown(value):
        if value == NOT_RECORDED:
            return "not recorded"
        return f"not stated: {value['unknown']}" if who == "paper" else f"not known: {value['unknown']}"
    return _text(value)


def _phrases(fields: Sequence[Field]) -> list[str]:
    """Each difference in words; a BERTScore encoder and its layer read together (a layer is
    one encoder's), once per metric and runs."""
    by_name = {(f.field, f.where): f for f in fields}
    said: set[tuple[str, str]] = set()
    out = []
    for f in fields:
        if f.same is True:
            continue
        where = f" [{f.where}]" if f.where else ""
        metric, _, last = f.field.rpartition(" ")
        if f.field == DOCUMENTS:
            out.append(_documents(f) + where)
        elif last in ("encoder", "layer") and metric and (metric + " encoder", f.where) in by_name:
            if (metric, f.where) in said:
                continue
            said.add((metric, f.where))
            enc, layer = by_name[(metric + " encoder", f.where)], by_name.get((metric + " layer", f.where))
            mine, theirs = _said(enc.run, "run"), _said(enc.paper, "paper")
            if layer is not None:  # a layer the paper does not state for the encoder's reason: said once
                mine += f" layer {_said(layer.run, 'run')}"
                theirs += ("" if is_unknown(enc.paper) and layer.paper == enc.paper
                           else f" layer {_said(layer.paper, 'paper')}")
            out.append(f"{metric} encoder {mine} (paper: {theirs})" + where)
        else:
            out.append(f"{f.field} {_said(f.run, 'run')} (paper: {_said(f.paper, 'paper')})" + where)
    return out


def _documents(f: Field) -> str:
    if is_unknown(f.run):
        return f"{DOCUMENTS} {_said(f.run, 'run')} (paper: {_said(f.paper, 'paper')})"
    if is_unknown(f.paper):
        return f"{_text(f.run)} {DOCUMENTS} (paper: {_said(f.paper, 'paper')})"
    if isinstance(f.run, int) and isinstance(f.paper, int) and f.run < f.paper:
        return f"{f.run:,} of {f.paper:,} {DOCUMENTS}"
    return f"{_text(f.run)} {DOCUMENTS} (paper: {_text(f.paper)})"


__all__ = ["COLUMN", "COMPARED", "Check", "DIFFERENT", "DOCUMENTS", "Field", "INPUTS", "JUDGED", "PUBLISHED_CELL",
           "RECORDED", "RunFacts", "SAME", "SPLIT", "block_for", "check", "check_runs", "check_table", "combined",
           "encoder_name", "generation_of", "judged_of", "metrics_of", "row_record", "run_facts", "sampled",
           "scoring_of", "setting_of", "settings_match"]
