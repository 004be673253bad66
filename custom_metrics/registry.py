"""THE metric table: the record types of a metric family, the scoring context, and lookup.

Why records (the shape of lighteval's ``metrics.py`` and HELM's ``MetricMetadata``): the
harness tasks, re-scoring, the report and the analysis commands all read a family's keys,
direction, display name, scale and aggregation from its :class:`Family` record through
:func:`get` / :func:`family_of` / :func:`key`, instead of each keeping an ``if family ==``
chain, a higher-is-better table and a key list of its own. Every output key belongs to
exactly one family (checked when the table is built).

Where records live and how they are found: a family's record is declared in the module
that holds its formula (``custom_metrics/families/rouge.py`` declares ``ROUGE``), listed in
its ``METRIC_FAMILIES`` tuple; the registry imports every module of
:mod:`custom_metrics.families` once, on first lookup, and collects those tuples (nothing
else is registered, no other package scanned). So a new family is one module there
(formula, per-document function, record; heavy machinery such as the judge client, FM,
scorer models or torch imported inside the functions that use it, so that building the
table stays cheap), its name in the family lists of the benchmark records whose tasks
report it (``lm_eval_tasks/benchmarks/``), and tests.

How a family is scored: :attr:`Family.score` takes a whole :class:`Batch` (every
document of a task shard) and returns, per key, one value per document. For a key
aggregated by ``mean`` / ``nanmean`` / ``sum`` the value is a float (NaN where the
metric does not apply to that document); for a ``corpus`` key it is a small JSON item
that :attr:`Key.corpus` folds into the corpus number (corpus BLEU, MAUVE, Pearson r,
F1, the geometric mean of ROUGE means). The harness turns ``mean``/``nanmean`` keys
into per-document scores with real standard errors. Imports nothing from the tasks:
settings arrive as plain values in :class:`Context`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from custom_metrics.errors import SuiteError

NAN = float("nan")
log = logging.getLogger(__name__)

#: aggregations a key may declare
AGGREGATIONS = ("mean", "nanmean", "sum", "corpus")
#: :attr:`Key.higher_is_better` -> the word that says which side is better
DIRECTIONS = {True: "higher", False: "lower", None: "neither"}


class ScorerUnavailable(SuiteError, RuntimeError):
    """A family's scorer (encoder, vocabulary, judge endpoint) cannot be had.

    The message names the family and the setting (metadata key / environment
    variable) to change; raised before generation by :attr:`Family.check`.
    """


@dataclass(frozen=True)
class Key:
    """One reported number."""

    name: str
    #: which way is better: True higher, False lower, None neither (HELM's optional
    #: ``lower_is_better``; e.g. the reading grade of a summary no readability was asked of):
    #: the report then names the higher side, never the better; lm-eval gets None (no arrow)
    higher_is_better: bool | None = True
    aggregation: str = "mean"
    #: corpus keys: (per-document items, context) -> the corpus value
    corpus: Callable[[Sequence[Any], "Context"], float] | None = None
    description: str = ""
    #: the name tables and plots show (the key itself when empty)
    display: str = ""
    #: what one value is: "fraction" (0-1), "percent", "score" (a metric's own range),
    #: "rating" (a judge's scale), "count"
    unit: str = "fraction"
    #: factor that puts a value on the papers' display scale (fractions of ROUGE and
    #: BERTScore are shown x100)
    scale: float = 1.0
    #: corpus keys: why a resampled interval (``domsum rescore --bootstrap``) is not computed,
    #: when each resample would recompute the corpus function at a cost no default run pays;
    #: empty: it is computed
    no_interval: str = ""

    @property
    def label(self) -> str:
        """The display name (the key when none is declared)."""
        return self.display or self.name

    @property
    def better(self) -> str:
        """The direction in one word, as the docs and READMEs print it: higher, lower or neither."""
        return DIRECTIONS[self.higher_is_better]

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"key {self.name}: aggregation must be one of {AGGREGATIONS}")
        if self.higher_is_better not in DIRECTIONS:
            raise ValueError(f"key {self.name}: higher_is_better must be True, False or None (neither)")
        if (self.aggregation == "corpus") != (self.corpus is not None):
            raise ValueError(f"key {self.name}: a corpus function goes with aggregation 'corpus' only")


@dataclass
class Batch:
    """Everything a family may read about the documents it scores (same length lists)."""

    predictions: list[str]
    references: list[str]
    documents: list[str]
    #: per-document record fields beyond the three texts (CCSBench controls, ids)
    extras: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.predictions)


def extra_fields() -> tuple[str, ...]:
    """The record fields families read beyond the three texts: each family's :attr:`Family.fields`."""
    return tuple(dict.fromkeys(name for fam in all_families() for name in fam.fields))


def extras_of(doc: Mapping[str, Any], task: str | None) -> dict[str, Any]:
    """A record's ``id``, its task and the :func:`extra_fields` it has, as families read them:
    ``keywords`` stored as JSON text (datasets keep list columns of mixed records so) as the list."""
    import json

    out: dict[str, Any] = {"id": str(doc.get("id", "")), "task": task}
    for name in extra_fields():
        if name in doc:
            value = doc[name]
            if name == "keywords" and isinstance(value, str):
                value = json.loads(value or "[]")
            out[name] = value
    return out


def one_process(part: Any) -> list:
    """:attr:`Context.gather` of a single process: its own part is the whole corpus."""
    return [part]


@dataclass
class Context:
    """What a family needs besides the texts: the task's subset, resolved settings,
    the judge, task-provided objects, and a ``record`` it fills for the results.

    ``progress``: draw the families' bars on stderr (None: ``$DOMSUM_PROGRESS``, default
    on; see :mod:`custom_metrics.progress`). Not a setting of any one family, since every
    long family draws one.
    """

    benchmark: str = ""
    subset: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: the benchmark's scoring conventions, ``setting -> (value, where it comes from)``: what
    #: an unset setting means for these texts (ROUGE stemming as the paper's release
    #: scores). Filled by the task side from the benchmark's record; this library names
    #: no benchmark.
    conventions: Mapping[str, tuple[Any, str]] = field(default_factory=dict)
    judge: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    progress: bool | None = None
    #: the family is one of a battery's (its benchmark's optional families, or a direct battery
    #: call): a missing model skips it, NaN and counted, instead of failing the run
    battery: bool = False
    #: facts about how the family scored (signatures, matching mode) that a battery run
    #: records under ``<benchmark>_details``
    details: dict[str, Any] = field(default_factory=dict)
    #: ``[part]`` of every process scoring a part of the same corpus, in process order; a
    #: family whose numbers depend on the whole corpus (CIDEr-D's idf) sums its statistic
    #: over them. One process (the default) is ``[part]``; a data-parallel harness run,
    #: where each rank scores its own shard, passes its collective (every process must
    #: call it, once per scoring of its shard). A plain callable, so that this library
    #: knows no process group.
    gather: Callable[[Any], list] = field(default=one_process, repr=False)

    def bar_label(self, family: str) -> str:
        """``family`` with the subset it scores, the label of the family's bar."""
        return f"{family} {self.subset}".strip()


#: what a family may need, the capability flags its consumers read instead of its name:
#: the harness saves generations before judging and leaves judge families out without a
#: judge; ``domsum rescore`` asks for a vocabulary, a domain or a document column; the
#: preflight checks the scorer; ``meta-eval`` configures the judge
NEEDS = {
    "encoder": "a sentence encoder (BERTScore)",
    "model": "a scorer model loaded from the hub or a local copy",
    "vocabulary": "a domain vocabulary (built per benchmark and subset, or a file given)",
    "judge": "an LLM judge endpoint (the judge settings; paid calls, so generations are saved first)",
    "domain": "the domain of the documents: its prompts are per domain",
    "document": "the source document of every summary, not only prediction and reference",
}


@dataclass(frozen=True)
class Family:
    """A metric family: scored together because its keys share one pass (one encoder
    pass, one judge batch).

    Besides its formula, the record declares everything its consumers ask about it, so
    none of them branches on its name: what it needs (:data:`NEEDS`), the settings it
    reads (:attr:`reads`), the options a caller may hand it (:attr:`options`), the
    options that restrict it to chosen keys (:attr:`select`), the per-document lists it
    returns beside its keys (:attr:`detail_lists`) and what a re-scoring summary says
    about how it scored (:attr:`summary`).
    """

    name: str
    keys: tuple[Key, ...]
    score: Callable[[Batch, Context], dict[str, list]]
    description: str
    source: str
    #: capability flags, each a word of :data:`NEEDS`
    needs: tuple[str, ...] = ()
    #: setting keys (rows its module or another owner declares) the family reads from ``Context.settings``
    settings: tuple[str, ...] = ()
    #: option names (``Context.options``) a caller may hand the family from its own flags
    #: (``domsum rescore --vocabulary`` gives ``vocabulary_file``); others are not handed
    options: tuple[str, ...] = ()
    #: chosen keys -> the options that compute only those (each judge rating is a paid call)
    select: Callable[[Sequence[str]], dict[str, Any]] | None = None
    #: per-document lists the family returns beside its keys -> the key they explain
    #: (shown with that key only)
    detail_lists: Mapping[str, str] = field(default_factory=dict)
    #: (context after scoring, per-document values) -> sections of a re-scoring summary
    #: about how the family scored; a record entry a section restates is not repeated
    summary: Callable[[Context, Mapping[str, list]], dict[str, Any]] | None = None
    #: preflight: raise ScorerUnavailable when the scorer cannot be had
    check: Callable[[Context], None] | None = None
    #: what to record in the results before scoring (the values actually used)
    describe: Callable[[Context], dict[str, Any]] | None = None
    #: what ``describe`` records the scorer used -> the setting that chooses it: re-scoring a
    #: run's samples takes the run's value (``bertscore_model_used`` -> ``bertscore_model``)
    recorded: Mapping[str, str] = field(default_factory=dict)
    #: the setting that names the family's model and its default (model-based families)
    model_setting: str = ""
    default_model: Callable[[], str] | None = None
    #: a model missing at scoring time skips the family (NaN with a notice) instead of failing it
    optional: bool = False
    #: the fields of a document's record the family reads beyond the three texts (CCSBench's
    #: controls), handed over in :attr:`Batch.extras` (:func:`extra_fields` collects them)
    fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"family {self.name}: needs {unknown} not among {tuple(NEEDS)}")

    @property
    def reads(self) -> tuple[str, ...]:
        """Every setting the family's scoring reads: its own, its model's, and the judge's
        (the rows its fields are named after, :data:`custom_metrics.judge.config.SETTINGS`)."""
        judge: tuple[str, ...] = ()
        if "judge" in self.needs:  # imported only then: a family without a judge loads none
            from custom_metrics.judge.config import SETTINGS as JUDGE_SETTINGS

            judge = JUDGE_SETTINGS
        own = (*self.settings, *((self.model_setting,) if self.model_setting else ()), *judge)
        return tuple(dict.fromkeys(own))

    def model(self, ctx: "Context") -> str:
        """The model this family scores with under ``ctx`` (its setting, else its default)."""
        given = ctx.settings.get(self.model_setting) if self.model_setting else None
        if given not in (None, ""):
            return str(given)
        return self.default_model() if self.default_model is not None else ""

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    def key(self, name: str) -> Key:
        for k in self.keys:
            if k.name == name:
                return k
        raise KeyError(f"family {self.name} has no key {name!r}")


# =========================================================================== helpers


def nan_if_none(values: Sequence[Any]) -> list[float]:
    return [NAN if v is None else float(v) for v in values]


def column_means(items: Sequence[Sequence[float]]) -> list[float]:
    rows = [r for r in items if r is not None]
    if not rows:
        return []
    return [math.fsum(r[i] for r in rows) / len(rows) for i in range(len(rows[0]))]


def stripped(texts: Sequence[Any]) -> list[str]:
    """Texts as the battery metrics read them: None as '', surrounding whitespace removed."""
    return ["" if t is None else str(t).strip() for t in texts]


def text_pairs(batch: Batch) -> list[list[str]]:
    """The ``[prediction, reference]`` item of every document, for corpus keys that need
    the texts themselves (corpus BLEU and chrF, MAUVE)."""
    return [[p, r] for p, r in zip(stripped(batch.predictions), stripped(batch.references))]


def paired_texts(items: Sequence[Any]) -> tuple[list[str], list[str]] | None:
    """(predictions, references) of the non-None ``[prediction, reference]`` items; None
    when there is none (a skipped family, or no documents): its corpus value is NaN."""
    pairs = [it for it in items if it is not None]
    if not pairs:
        return None
    return [str(p) for p, _ in pairs], [str(r) for _, r in pairs]


def model_error(family: str, model: str, key: str, env: str, exc: BaseException) -> ScorerUnavailable:
    from custom_metrics.hf_models import unavailable_message

    return ScorerUnavailable(unavailable_message(family, model, key, env, exc))


# =========================================================================== the table


def json_safe(obj: Any) -> Any:
    """``obj`` with NaN/inf as None and numpy scalars as Python numbers: strict JSON.

    Why: a metric that does not apply to a document is NaN, which ``json.dumps``
    writes as the non-standard ``NaN`` that other JSON readers reject.
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "item") and type(obj).__module__ == "numpy":
        return json_safe(obj.item())
    return obj


_TABLE: dict[str, Family] | None = None
_ROWS: list = []  # the family modules' ``SETTING_ROWS``, in module order (filled with the table)


def _collect() -> dict[str, Family]:
    """Every family declared in a ``METRIC_FAMILIES`` tuple of a module of
    :mod:`custom_metrics.families` (module names in alphabetical order, families in
    declaration order).

    Why a scan of one package rather than a list here: a list would be a third place to
    edit for a new metric. Why that package only: the table is exactly what
    ``custom_metrics/families/*.py`` declares, and a lookup imports the family modules
    alone (light declarations), not the judge, FM, statistics or model machinery beside
    them. No entry points, no subpackages.
    """
    import importlib
    import pkgutil

    from custom_metrics import families

    table: dict[str, Family] = {}
    owner: dict[str, str] = {}
    _ROWS.clear()
    for info in sorted(pkgutil.iter_modules(families.__path__), key=lambda m: m.name):
        if info.ispkg or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{families.__name__}.{info.name}")
        for fam in getattr(module, "METRIC_FAMILIES", ()):
            if fam.name in table:
                raise ValueError(f"metric family {fam.name!r} is declared twice")
            for k in fam.key_names:
                if k in owner:
                    raise ValueError(f"key {k!r} is reported by two families: {owner[k]} and {fam.name}")
                owner[k] = fam.name
            table[fam.name] = fam
        _ROWS.extend(getattr(module, "SETTING_ROWS", ()))
    return table


def _table() -> dict[str, Family]:
    global _TABLE
    if _TABLE is None:
        _TABLE = _collect()
    return _TABLE


def setting_rows() -> tuple:
    """Every settings row the library declares beside the code that reads it (the family
    modules' ``SETTING_ROWS``, then the judge's); ``lm_eval_tasks.settings`` collects them."""
    from custom_metrics.judge import setting_rows as judge_rows

    _table()
    return (*_ROWS, *judge_rows())


def names() -> tuple[str, ...]:
    """Every family name, in table order."""
    return tuple(_table())


class UnknownFamily(SuiteError, KeyError):
    """A family name the table does not hold (the message lists the close ones); a
    ``KeyError`` too, for callers that catch that; through ``domsum`` one line, status 2."""

    def __str__(self) -> str:  # KeyError quotes its argument; ours is a sentence
        return str(self.args[0])


def get(name: str) -> Family:
    """The family called ``name``; :class:`UnknownFamily` naming the close ones otherwise."""
    try:
        return _table()[name]
    except KeyError:
        import difflib

        # names are lower case: a capitalised one (ROUGE, BERTScore) gets its hint too
        close = difflib.get_close_matches(str(name).lower(), names(), n=3)
        raise UnknownFamily(f"unknown metric family {name!r}" + (f"; did you mean {', '.join(close)}?" if close else "")
                            + f" (families: {', '.join(names())})") from None


def all_families() -> list[Family]:
    """Every family record."""
    return list(_table().values())


def family_models(contexts: Mapping[str, Context], *, corpus_only: bool = False) -> set[str]:
    """The models the families ``{name: context}`` score with (model-based families only);
    ``corpus_only``: of families with a corpus key, whose model is used again when the
    corpus is aggregated (MAUVE featurizes then). What a task holds in the model cache."""
    out = set()
    for name, ctx in contexts.items():
        fam = get(name)
        if fam.model_setting and (not corpus_only or any(k.aggregation == "corpus" for k in fam.keys)):
            out.add(fam.model(ctx))
    return out


def family_keys(name: str) -> tuple[str, ...]:
    """The metric keys a family reports."""
    return get(name).key_names


def higher_is_better(keys: Sequence[str] | None = None) -> dict[str, bool | None]:
    """Direction of every key (or of ``keys``), from the records: None where neither side is
    better (:attr:`Key.higher_is_better`)."""
    table = {k.name: k.higher_is_better for f in all_families() for k in f.keys}
    return table if keys is None else {k: table[k] for k in keys}


def family_of(key: str) -> Family:
    """The family that reports ``key``."""
    for f in all_families():
        if key in f.key_names:
            return f
    raise KeyError(f"no metric family reports {key!r}")


def key(name: str) -> Key | None:
    """The record of the output key ``name``, or None for a key no family reports."""
    for f in all_families():
        for k in f.keys:
            if k.name == name:
                return k
    return None


def display_name(name: str) -> str:
    """What tables and plots call the output key ``name`` (the key itself when unknown)."""
    k = key(name)
    return k.label if k is not None else name


def display_scale(name: str) -> float:
    """Factor that puts key ``name`` on the papers' display scale (1 for unknown keys)."""
    k = key(name)
    return k.scale if k is not None else 1.0


def aggregate(family: Family, key: str, values: Sequence[Any], ctx: Context) -> float:
    """The corpus number of ``key`` from its per-document values (outside the harness)."""
    k = family.key(key)
    if k.aggregation == "corpus":
        return float(k.corpus(values, ctx))
    vals = [float(v) for v in values]
    if k.aggregation == "sum":
        return math.fsum(0.0 if math.isnan(v) else v for v in vals)
    if k.aggregation == "nanmean":
        vals = [v for v in vals if not math.isnan(v)]
    return math.fsum(vals) / len(vals) if vals else NAN


def score_corpus(names: Sequence[str], batch: Batch, ctx: Context) -> dict[str, float]:
    """Corpus values of every key of ``names`` over ``batch`` (re-scoring, meta-evaluation)."""
    out: dict[str, float] = {}
    for name in names:
        fam = get(name)
        per = fam.score(batch, ctx)
        for k in fam.key_names:
            out[k] = aggregate(fam, k, per[k], ctx)
    return out
