"""One declarative record per metric family: keys, direction, batched per-document
function, corpus functions, what it needs, and its settings.

Why a registry (the shape of lighteval's ``Metrics`` records and HELM's
``MetricMetadata``): the harness tasks, re-scoring and the analysis commands all
dispatch through :func:`get` instead of each keeping an ``if family == ...`` chain, a
higher-is-better table and a key list of its own. Adding a metric is one module with
its formula plus one :class:`Family` record here.

How a family is scored: :attr:`Family.score` takes a whole :class:`Batch` (every
document of a task shard) and returns, per key, one value per document. For a key
aggregated by ``mean`` / ``nanmean`` / ``sum`` the value is a float (NaN where the
metric does not apply to that document); for a ``corpus`` key it is a small JSON item
that :attr:`Key.corpus` folds into the corpus number (corpus BLEU, MAUVE, Pearson r,
F1, the geometric mean of ROUGE means). The harness turns ``mean``/``nanmean`` keys
into per-document scores with real standard errors.

This module imports nothing from the tasks: settings arrive as plain values in
:class:`Context` (resolved by ``lm_eval_tasks.settings``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NAN = float("nan")
log = logging.getLogger(__name__)

#: aggregations a key may declare
AGGREGATIONS = ("mean", "nanmean", "sum", "corpus")


class ScorerUnavailable(RuntimeError):
    """A family's scorer (encoder, vocabulary, judge endpoint) cannot be had.

    The message names the family and the setting (metadata key / environment
    variable) to change; raised before generation by :attr:`Family.check`.
    """


@dataclass(frozen=True)
class Key:
    """One reported number."""

    name: str
    higher_is_better: bool = True
    aggregation: str = "mean"
    #: corpus keys: (per-document items, context) -> the corpus value
    corpus: Callable[[Sequence[Any], "Context"], float] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"key {self.name}: aggregation must be one of {AGGREGATIONS}")
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


#: record fields a family may read beyond the three texts (CCSBench controls)
EXTRA_FIELDS = ("length_bin", "keywords", "readability", "focus")


def extras_of(doc: Mapping[str, Any], task: str | None) -> dict[str, Any]:
    """A record's ``id``, its task and the :data:`EXTRA_FIELDS` it has, as families read them.

    ``keywords`` may be stored as a JSON string (datasets keep list columns of mixed
    records as text); families want the list.
    """
    import json

    out: dict[str, Any] = {"id": str(doc.get("id", "")), "task": task}
    for name in EXTRA_FIELDS:
        if name in doc:
            value = doc[name]
            if name == "keywords" and isinstance(value, str):
                value = json.loads(value or "[]")
            out[name] = value
    return out


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
    judge: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)
    record: dict[str, Any] = field(default_factory=dict)
    progress: bool | None = None

    def bar_label(self, family: str) -> str:
        """``family`` with the subset it scores, the label of the family's bar."""
        return f"{family} {self.subset}".strip()


@dataclass(frozen=True)
class Family:
    """A metric family: scored together because its keys share one pass (one encoder
    pass, one judge batch)."""

    name: str
    keys: tuple[Key, ...]
    score: Callable[[Batch, Context], dict[str, list]]
    description: str
    source: str
    #: "encoder", "model", "vocabulary", "judge"
    needs: tuple[str, ...] = ()
    #: setting keys (lm_eval_tasks/settings.py) the family reads from ``Context.settings``
    settings: tuple[str, ...] = ()
    #: preflight: raise ScorerUnavailable when the scorer cannot be had
    check: Callable[[Context], None] | None = None
    #: what to record in the results before scoring (the values actually used)
    describe: Callable[[Context], dict[str, Any]] | None = None

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    def key(self, name: str) -> Key:
        for k in self.keys:
            if k.name == name:
                return k
        raise KeyError(f"family {self.name} has no key {name!r}")


# =========================================================================== helpers


def _nan_if_none(values: Sequence[Any]) -> list[float]:
    return [NAN if v is None else float(v) for v in values]


def _column_means(items: Sequence[Sequence[float]]) -> list[float]:
    rows = [r for r in items if r is not None]
    if not rows:
        return []
    return [math.fsum(r[i] for r in rows) / len(rows) for i in range(len(rows[0]))]


def _model_error(family: str, model: str, key: str, env: str, exc: BaseException) -> ScorerUnavailable:
    from custom_metrics.hf_models import unavailable_message

    return ScorerUnavailable(unavailable_message(family, model, key, env, exc))


# =========================================================================== ROUGE


def _rouge_stemming(ctx: Context) -> tuple[bool, str]:
    """(stemming, its source): the ``rouge_stemming`` setting, else the release convention of
    ``ctx.benchmark`` (:data:`custom_metrics.rouge.RELEASE_STEMMING`), else stemming."""
    from custom_metrics.rouge import stemming_for

    return stemming_for(ctx.benchmark, ctx.settings.get("rouge_stemming"))


def _rouge_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.rouge import rouge_per_document, rouge_tokens

    stem, _ = _rouge_stemming(ctx)
    ctx.record.update(_rouge_describe(ctx))
    per = rouge_per_document(batch.predictions, batch.references, use_stemmer=stem,
                             progress=ctx.progress, desc=ctx.bar_label("ROUGE"))
    # rouge-score keeps only [a-z0-9] tokens: a reference in another script scores 0 for any summary
    blank = sum(not rouge_tokens(r, stem) for r in batch.references if (r or "").strip())
    ctx.record["rouge_references_without_tokens"] = {"count": blank,
                                                     "share": blank / len(batch) if len(batch) else 0.0}
    if blank:
        log.warning("ROUGE: %d of %d references have no [a-z0-9] token (non-Latin text?): they score 0 "
                    "whatever the summary; rouge-score does not support other scripts", blank, len(batch))
    out: dict[str, list] = {k: [d[k] for d in per] for k in ("rouge1", "rouge2", "rougeL")}
    out["rouge_mean"] = [(d["rouge1"] + d["rouge2"] + d["rougeL"]) / 3 for d in per]
    out["rouge_geo"] = [[d["rouge1"], d["rouge2"], d["rougeL"]] for d in per]
    return out


def _rouge_geo(items: Sequence[Sequence[float]], ctx: Context) -> float:
    from custom_metrics.rouge import geometric_mean

    means = _column_means(items)
    return geometric_mean(means) if means else NAN


def _rouge_describe(ctx: Context) -> dict[str, Any]:
    stem, source = _rouge_stemming(ctx)
    return {"rouge_tokenizer": "rouge-score default tokenizer ([a-z0-9]+, lowercased)",
            "rouge_stemming": stem, "rouge_stemming_source": source,
            "rouge_aggregation": "plain mean of per-document F1 (not rouge-score's bootstrap mid)"}


ROUGE = Family(
    name="rouge",
    keys=(
        Key("rouge1", description="ROUGE-1 F1"),
        Key("rouge2", description="ROUGE-2 F1"),
        Key("rougeL", description="ROUGE-L F1 (summary-level LCS, no sentence split)"),
        Key("rouge_geo", aggregation="corpus", corpus=_rouge_geo,
            description="geometric mean of the corpus ROUGE-1/2/L means (the papers' stated \"ROUGE\")"),
        Key("rouge_mean", description="arithmetic mean of ROUGE-1/2/L (the DomainSum release's rougeSUM)"),
    ),
    score=_rouge_score,
    description="ROUGE F1; Porter stemming per the benchmark's release (setting rouge_stemming); "
                "fractions in [0, 1].",
    source="custom_metrics.rouge (identical to rouge-score's RougeScorer)",
    settings=("rouge_stemming",),
    describe=_rouge_describe,
)


# =========================================================================== BERTScore


def _bertscore_model(ctx: Context) -> str:
    from custom_metrics.bertscore import default_model

    return ctx.settings.get("bertscore_model") or default_model()


def _bertscore_check(ctx: Context) -> None:
    from custom_metrics.bertscore import get_scorer

    model = _bertscore_model(ctx)
    try:
        get_scorer(model, ctx.settings.get("bertscore_layers"))
    except Exception as exc:  # noqa: BLE001 - any load failure means: not available
        raise _model_error("BERTScore", model, "bertscore_model", "DOMSUM_BERTSCORE_MODEL", exc) from exc


def _bertscore_describe(ctx: Context) -> dict[str, Any]:
    from custom_metrics.bertscore import scorer_signature

    sig = scorer_signature(_bertscore_model(ctx), ctx.settings.get("bertscore_layers"))
    return {"bertscore_model_used": sig["bertscore_model"], "bertscore_layers_used": sig["bertscore_layers"],
            "bertscore_version": sig["bertscore_version"], "bertscore_idf": sig["idf"],
            "bertscore_rescale_with_baseline": sig["rescale_with_baseline"]}


def _bertscore_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.bertscore import bertscore_per_document

    report: dict[str, int] = {}
    per = bertscore_per_document(batch.predictions, batch.references, model=_bertscore_model(ctx),
                                 num_layers=ctx.settings.get("bertscore_layers"),
                                 batch_size=ctx.settings.get("bertscore_batch_size") or 64, report=report,
                                 progress=ctx.progress, desc=ctx.bar_label("BERTScore"),
                                 cache_dir=ctx.settings.get("score_cache_dir"))
    cut = report.get("truncated_inputs", 0)
    ctx.record["bertscore_truncated_inputs"] = cut
    # distinct references read from / written to the reference cache (setting score_cache_dir)
    ctx.record["bertscore_reference_cache"] = {"hits": report.get("reference_cache_hits", 0),
                                               "stored": report.get("reference_cache_stored", 0)}
    if cut:
        log.warning("BERTScore: %d input text(s) reached the encoder's limit and were cut; their tails are "
                    "not scored", cut)
    return {"bertscore_p": [x[0] for x in per], "bertscore_r": [x[1] for x in per],
            "bertscore_f1": [x[2] for x in per]}


BERTSCORE = Family(
    name="bertscore",
    keys=(Key("bertscore_p", description="BERTScore precision"),
          Key("bertscore_r", description="BERTScore recall"),
          Key("bertscore_f1", description="BERTScore F1")),
    score=_bertscore_score,
    description="Greedy cosine matching of contextual embeddings, no idf, no baseline rescaling.",
    source="custom_metrics.bertscore (agrees with bert_score.BERTScorer to 1e-5)",
    needs=("encoder",),
    settings=("bertscore_model", "bertscore_layers", "bertscore_batch_size", "score_cache_dir"),
    check=_bertscore_check,
    describe=_bertscore_describe,
)


# =========================================================================== DVO


def _vocabulary(ctx: Context) -> tuple[str, list[str]]:
    """(path, words) of the vocabulary DVO reads.

    ``ctx.options["vocabulary_file"]`` names a file directly (re-scoring a file whose
    domain has no vocabulary under ``vocab_dir``); otherwise the benchmark/subset file
    under ``vocab_dir`` is used, as in a harness run.
    """
    from custom_metrics.dvo import VocabularyNotFoundError, load_vocabulary, vocabulary_path

    given = ctx.options.get("vocabulary_file")
    if given:
        path = Path(str(given)).expanduser()
        if not path.is_file():
            raise VocabularyNotFoundError(f"vocabulary file {path} not found")
    else:
        path = vocabulary_path(ctx.benchmark, ctx.subset, ctx.settings.get("vocab_dir"))
    return str(path), load_vocabulary(path)


def _tokenizer_info() -> dict[str, Any]:
    from custom_metrics.tokenize import tokenizer_info

    return tokenizer_info("nltk")


def _dvo_check(ctx: Context) -> None:
    from custom_metrics.dvo import VocabularyError

    try:
        _vocabulary(ctx)
    except (VocabularyError, OSError) as exc:
        raise ScorerUnavailable(f"DVO: {exc}") from exc


def _dvo_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.dvo import dvo_scores
    from custom_metrics.progress import track

    path, vocab = _vocabulary(ctx)
    ctx.record["vocabulary_used"] = path
    return {"dvo": dvo_scores(track(batch.predictions, ctx.bar_label("DVO"), enabled=ctx.progress), vocab)}


DVO = Family(
    name="dvo",
    keys=(Key("dvo", description="share of the summary's vocabulary words in the domain vocabulary"),),
    score=_dvo_score,
    description="Domain Vocabulary Overlap (AdaptEval): NLTK-style tokens, stopwords and punctuation removed.",
    source="custom_metrics.dvo (AdaptEval release)",
    needs=("vocabulary",),
    settings=("vocab_dir",),
    check=_dvo_check,
    describe=lambda ctx: {"vocabulary_used": _vocabulary(ctx)[0], "dvo_tokenizer": _tokenizer_info()},
)


# =========================================================================== judges


def check_endpoint(config: Any, timeout_s: float = 5.0) -> None:
    """Raise :class:`ScorerUnavailable` unless the judge endpoint answers HTTP at all.

    Any HTTP status (even 401/404) proves a server is there; a refused connection,
    an unknown host or a timeout does not. Why before generation: a run whose judge
    is unreachable would otherwise generate everything and only then fail to judge.
    """
    import urllib.error
    import urllib.request

    import urllib.parse

    base = (config.endpoint or "https://api.openai.com/v1").rstrip("/")
    parts = urllib.parse.urlsplit(base)
    # urllib reads "user:key@host" as a host name; any answer proves the server, so probe without them
    probe = parts._replace(netloc=parts.netloc.rpartition("@")[2], query="").geturl()
    try:
        urllib.request.urlopen(urllib.request.Request(probe + "/models", method="GET"), timeout=timeout_s)
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, OSError) as exc:
        from custom_metrics import secrets

        reason = getattr(exc, "reason", exc)
        raise ScorerUnavailable(secrets.mask(
            f"judge endpoint {base} does not answer ({reason}); set metadata 'judge_base_url' or "
            f"$OPENAI_BASE_URL to a running OpenAI-compatible server, or unset judge_model / "
            f"$DOMSUM_JUDGE_MODEL to leave the judge metrics out", config)) from exc


def _judge_of(ctx: Context) -> Any:
    """The context's judge, drawing its bar as ``ctx.progress`` says unless the judge's own
    configuration already decides."""
    import dataclasses

    if ctx.judge is None or ctx.progress is None or getattr(ctx.judge, "progress", False) is not None:
        return ctx.judge
    return dataclasses.replace(ctx.judge, progress=ctx.progress)


def _judge_check(ctx: Context) -> None:
    if ctx.judge is not None:
        check_endpoint(ctx.judge)


def _judge_describe(ctx: Context) -> dict[str, Any]:
    from urllib.parse import urlsplit

    if ctx.judge is None:
        return {}
    return {"judge_model_used": ctx.judge.model, "judge_base_url_used": ctx.judge.shown_endpoint,
            "judge_host": urlsplit(ctx.judge.endpoint or "https://api.openai.com/v1").hostname}


JUDGE_METRICS = ("domain_adaptation", "coherence", "fluency")


def _judge_prompt_variant(ctx: Context) -> str:
    from custom_metrics.judge.prompts import check_prompt_variant

    return check_prompt_variant(ctx.settings.get("judge_prompt_variant"))


def _adapteval_judge_describe(ctx: Context) -> dict[str, Any]:
    return {**_judge_describe(ctx), "judge_prompt_variant_used": _judge_prompt_variant(ctx)}


def _adapteval_judge_score(batch: Batch, ctx: Context) -> dict[str, list]:
    """The three AdaptEval judge ratings per document.

    ``ctx.options``: ``judge_metrics`` (a subset of :data:`JUDGE_METRICS`) sends only
    those requests, since each one is a paid call; the others are NaN and do not count
    as parse failures. ``max_document_words`` truncates long sources in the prompt.
    Setting ``judge_prompt_variant``: the prompt texts (``paper``, the default, or
    ``release``/``suite``; see :mod:`custom_metrics.judge.prompts`), recorded as
    ``judge_prompt_variant_used``.
    """
    from custom_metrics.judge.prompts import adapteval_judge

    wanted = [m for m in JUDGE_METRICS if m in (ctx.options.get("judge_metrics") or JUDGE_METRICS)]
    variant = _judge_prompt_variant(ctx)
    ctx.record["judge_prompt_variant_used"] = variant
    res = adapteval_judge(batch.documents, batch.predictions, ctx.subset, _judge_of(ctx), wanted,
                          max_document_words=ctx.options.get("max_document_words"),
                          stats=ctx.options.get("judge_stats"), prompt_variant=variant)
    ctx.record["judge_mode"] = res["judge_mode"]
    ctx.record["judge_usage"] = res["usage"]
    ctx.record["judge_failed"] = res["failed"]  # unscored items by reason: parse, empty, timeout, http_<n>, ...
    out = {k: _nan_if_none(res["per_item"][k]) if k in wanted else [NAN] * len(batch) for k in JUDGE_METRICS}
    # only unparsable replies count here; empty summaries and transport faults are in judge_failed
    out["judge_parse_failures"] = [float(sum(res["reasons"][k][i] == "parse" for k in wanted))
                                   for i in range(len(batch))]
    return out


JUDGE = Family(
    name="judge",
    keys=(Key("domain_adaptation", aggregation="nanmean", description="1-5 Domain Adaptation (GPT-4 judge)"),
          Key("coherence", aggregation="nanmean", description="1-5 Coherence (G-Eval)"),
          Key("fluency", aggregation="nanmean", description="1-3 Fluency (G-Eval)"),
          Key("judge_parse_failures", higher_is_better=False, aggregation="sum",
              description="judge replies with no valid rating after one retry (left out of the means)")),
    score=_adapteval_judge_score,
    description="AdaptEval's LLM judge; probability-weighted ratings, unparsable replies counted, never 0.",
    source="custom_metrics.judge.prompts (AdaptEval Table 8 and G-Eval prompts; release gpt4-eval.py variant)",
    needs=("judge",),
    settings=("judge_prompt_variant",),
    check=_judge_check,
    describe=_adapteval_judge_describe,
)


#: what ``keep_details`` hands back per document (why each FM score is what it is)
FM_DETAIL_FIELDS = ("fractions", "ratings", "reference_facets", "candidate_facets", "failure")


#: the FM details file asked for -> the file this process appends to
_FM_DETAILS: dict[str, Path] = {}


def fm_details_file(asked: str) -> Path:
    """Where this process writes FM details asked for at ``asked``.

    Every task of one run appends to one file; a file an earlier run wrote is never
    replaced: the rows go to the first free ``<stem>.<n><suffix>`` beside it, recorded
    as ``fm_details_written``.
    """
    if asked not in _FM_DETAILS:
        path = Path(asked).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        n = 1
        while True:
            try:
                with open(path, "x", encoding="utf-8"):
                    break
            except FileExistsError:
                n += 1
                path = Path(asked).expanduser().with_name(f"{Path(asked).stem}.{n}{Path(asked).suffix}")
        _FM_DETAILS[asked] = path
    return _FM_DETAILS[asked]


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


def _fm_score(batch: Batch, ctx: Context) -> dict[str, list]:
    """FM and its vanilla baseline per document.

    ``ctx.options``: ``fm_facets=False`` computes the vanilla rating only (no facet
    extraction or alignment calls) and ``fm_vanilla=False`` skips the vanilla calls;
    the key not computed is NaN. ``keep_details=True`` adds the non-key list
    ``fm_detail`` (each document's facet fractions, ratings, segments and failure) and
    ``fm_judge`` (scored pairs, failures by kind, variant, usage) to ``ctx.record``,
    so re-scoring can show why every score is what it is.
    """
    import json

    from custom_metrics.fm import EXTRACT_MAX_TOKENS, fm_scores

    variant = str(ctx.settings.get("fm_variant") or "zero")
    if variant not in ("zero", "few"):
        raise ValueError(f"fm_variant must be 'zero' or 'few', got {variant!r}")
    res = fm_scores(batch.references, batch.predictions, _judge_of(ctx), variant=variant,
                    facets=bool(ctx.options.get("fm_facets", True)),
                    vanilla=bool(ctx.options.get("fm_vanilla", True)), stats=ctx.options.get("judge_stats"),
                    extract_max_tokens=int(ctx.settings.get("fm_extract_max_tokens") or EXTRACT_MAX_TOKENS))
    ctx.record.update(fm_variant_used=variant, fm_usage=res["usage"], fm_failures_by_kind=res["failures"],
                      fm_vanilla_failures=res["vanilla_failures"])
    details = ctx.settings.get("fm_details")
    if details:
        path = fm_details_file(str(details))
        with open(path, "a", encoding="utf-8") as fh:
            for extra, item in zip(batch.extras, res["per_item"]):
                row = json_safe({"task": extra.get("task"), "id": extra.get("id"), **item})
                fh.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
        ctx.record["fm_details_written"] = str(path)
    per = res["per_item"]
    out: dict[str, list] = {"fm": _nan_if_none([p["fm"] for p in per]),
                            "fm_vanilla": _nan_if_none([p["fm_vanilla"] for p in per]),
                            "fm_failures": [0.0 if p["failure"] is None else 1.0 for p in per]}
    if ctx.options.get("keep_details"):
        out["fm_detail"] = [{k: p[k] for k in FM_DETAIL_FIELDS} for p in per]
        ctx.record["fm_judge"] = {k: res[k] for k in ("n_scored", "failures", "variant", "usage")}
    return out


FM = Family(
    name="fm",
    keys=(Key("fm", aggregation="nanmean", description="Facet-aware Metric, weighted facet alignment"),
          Key("fm_vanilla", aggregation="nanmean", description="one direct 1-4 rating, rescaled"),
          Key("fm_failures", higher_is_better=False, aggregation="sum",
              description="pairs whose facet extraction or rating failed, whose reference had no facet, or whose vanilla rating failed (by kind in fm_failures_by_kind; left out of the means)")),
    score=_fm_score,
    description="Facet-aware Metric (Chen et al.): LLM facet extraction and rating of scientific abstracts.",
    source="custom_metrics.fm (the paper's prompts and weights)",
    needs=("judge",),
    settings=("fm_variant", "fm_extract_max_tokens", "fm_details"),
    check=_judge_check,
    describe=_judge_describe,
)


# =========================================================================== CCSBench


def _length_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.ccs import length_bin

    pairs = []
    for pred, extra in zip(batch.predictions, batch.extras):
        target = extra.get("length_bin")
        pairs.append(None if target is None or target < 0 else [length_bin(pred), int(target)])
    return {"length_pcc": pairs,
            "length_mad": [NAN if p is None else float(abs(p[0] - p[1])) for p in pairs]}


def _length_pcc(items: Sequence[Any], ctx: Context) -> float:
    from custom_metrics.analysis.stats.correlation import pearson

    pairs = [p for p in items if p is not None]
    return pearson([p[0] for p in pairs], [p[1] for p in pairs]) if pairs else NAN


CCS_LENGTH = Family(
    name="ccs_length",
    keys=(Key("length_pcc", aggregation="corpus", corpus=_length_pcc,
              description="Pearson r of generated vs requested length bin"),
          Key("length_mad", higher_is_better=False, aggregation="nanmean",
              description="mean |generated bin - requested bin|")),
    score=_length_score,
    description="CCSBench length control: 50-word bins of whitespace words.",
    source="custom_metrics.ccs",
)


def _keywords_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.ccs import keyword_success_rate

    return {"keyword_sr": [keyword_success_rate([p], [e.get("keywords") or []])
                           for p, e in zip(batch.predictions, batch.extras)]}


CCS_KEYWORDS = Family(
    name="ccs_keywords",
    keys=(Key("keyword_sr", aggregation="nanmean", description="share of requested keywords present"),),
    score=_keywords_score,
    description="CCSBench keyword control: exact match after Porter stemming.",
    source="custom_metrics.ccs",
)


def _readability_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.ccs import fkgl
    from custom_metrics.progress import track

    levels = [e.get("readability") or None for e in batch.extras]
    pairs = track(list(zip(batch.predictions, levels)), ctx.bar_label("FKGL"), enabled=ctx.progress)
    grades = [fkgl(p) if lv in ("normal", "high") else NAN for p, lv in pairs]
    return {"fkgl_normal": [g if lv == "normal" else NAN for g, lv in zip(grades, levels)],
            "fkgl_high": [g if lv == "high" else NAN for g, lv in zip(grades, levels)],
            "delta_fkgl": [None if lv not in ("normal", "high") else [lv, g] for g, lv in zip(grades, levels)]}


def _delta_fkgl(items: Sequence[Any], ctx: Context) -> float:
    groups: dict[str, list[float]] = {"normal": [], "high": []}
    for it in items:
        if it is not None:
            groups[it[0]].append(it[1])
    mean = {k: (math.fsum(v) / len(v) if v else NAN) for k, v in groups.items()}
    return mean["normal"] - mean["high"]


def _readability_describe(ctx: Context) -> dict[str, Any]:
    from custom_metrics.ccs import fkgl_syllable_source

    return {"fkgl_syllables": fkgl_syllable_source()}


CCS_READABILITY = Family(
    name="ccs_readability",
    keys=(Key("fkgl_normal", aggregation="nanmean", description="mean FKGL of normal-readability requests"),
          Key("fkgl_high", higher_is_better=False, aggregation="nanmean",
              description="mean FKGL of high-readability requests"),
          Key("delta_fkgl", aggregation="corpus", corpus=_delta_fkgl,
              description="fkgl_normal - fkgl_high")),
    score=_readability_score,
    description="CCSBench readability control: Flesch-Kincaid grade level (textstat).",
    source="custom_metrics.ccs",
    describe=_readability_describe,
)


def _focus_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics import ccs

    messages = ctx.options.get("focus_messages") or ccs.focus_messages
    labels, res = ccs.judge_focus(batch.predictions, _judge_of(ctx), messages=messages)
    ctx.record["judge_usage"] = res.stats.as_dict()
    ctx.record["focus_failed"] = res.failed
    if "focus_prompt_source" in ctx.options:
        ctx.record["focus_judge_prompt_source"] = ctx.options["focus_prompt_source"]
    pairs = [[lab, e.get("focus") or None] for lab, e in zip(labels, batch.extras)]
    out: dict[str, list] = {k: pairs for k in ("focus_f1_high", "focus_f1_low", "focus_macro_f1")}
    # only unparsable replies count here; empty summaries and transport faults are in focus_failed
    reasons = res.reasons or [None if lab is not None else "parse" for lab in labels]
    out["focus_parse_failures"] = [1.0 if r == "parse" else 0.0 for r in reasons]
    return out


def _focus_key(name: str) -> Callable[[Sequence[Any], Context], float]:
    """Corpus F1 over (judged label, requested focus) pairs.

    NaN when no pair has a judged label (every reply unparsable, failed or empty):
    an F1 of 0.0 would claim the model missed every requested focus, when in fact
    nothing was measured; the count stays in ``focus_parse_failures``.
    """

    def corpus(items: Sequence[Any], ctx: Context) -> float:
        from custom_metrics.ccs import focus_f1

        pairs = [p for p in items if p is not None]
        if not any(p[0] is not None for p in pairs):
            return NAN
        return focus_f1([p[0] for p in pairs], [p[1] for p in pairs])[name]

    corpus.__name__ = name
    return corpus


CCS_FOCUS = Family(
    name="ccs_focus",
    keys=(Key("focus_f1_high", aggregation="corpus", corpus=_focus_key("focus_f1_high"),
              description="F1 of the empirical-focus class"),
          Key("focus_f1_low", aggregation="corpus", corpus=_focus_key("focus_f1_low"),
              description="F1 of the conceptual-focus class"),
          Key("focus_macro_f1", aggregation="corpus", corpus=_focus_key("focus_macro_f1"),
              description="macro F1 of the judged focus vs the requested focus"),
          Key("focus_parse_failures", higher_is_better=False, aggregation="sum",
              description="judge replies with no label (left out of F1)")),
    score=_focus_score,
    description="CCSBench empirical-focus control, judged by an LLM (empirical / conceptual).",
    source="custom_metrics.ccs",
    needs=("judge",),
    check=_judge_check,
    describe=_judge_describe,
)


# =========================================================================== medqsum battery


def battery_config(ctx: Context) -> dict[str, Any]:
    """The battery's config dict from the resolved settings (its own key names).

    ``rouge_stemming`` is resolved here as for the ROUGE family (the setting, else the
    release convention of ``ctx.benchmark``, else medqsum's) and passed with its source
    (``rouge_stemming_source``), which the battery records.
    """
    from custom_metrics.rouge import stemming_for

    cfg = {k: v for k, v in ctx.settings.items() if v not in (None, "")}
    if "metric_batch_size" in cfg:
        cfg["batch_size"] = cfg.pop("metric_batch_size")
    metrics = cfg.pop("medqsum_metrics", None)
    if metrics:
        cfg["metrics"] = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else list(metrics)
    cfg["rouge_stemming"], cfg["rouge_stemming_source"] = stemming_for(
        ctx.benchmark or "medqsum", ctx.settings.get("rouge_stemming"))
    cfg["progress"] = ctx.progress
    return cfg


def _battery_score(batch: Batch, ctx: Context) -> dict[str, list]:
    from custom_metrics.battery import battery_documents

    values, facts = battery_documents(batch.predictions, batch.references, batch.documents,
                                      config=battery_config(ctx))
    ctx.record["medqsum_skipped"] = facts["skipped"]
    ctx.record["medqsum_timings_s"] = {k: round(v, 4) for k, v in facts["timings"].items()}
    ctx.record["medqsum_details"] = facts["details"]
    return values


def _battery_keys() -> tuple[Key, ...]:
    from custom_metrics.battery import KEY_AGGREGATION, LOWER_IS_BETTER, METRIC_KEYS, corpus_value

    def corpus_fn(key: str) -> Callable[[Sequence[Any], Context], float]:
        def fn(items: Sequence[Any], ctx: Context) -> float:
            return corpus_value(key, items, battery_config(ctx))

        fn.__name__ = key
        return fn

    return tuple(Key(k, higher_is_better=k not in LOWER_IS_BETTER, aggregation=KEY_AGGREGATION[k],
                     corpus=corpus_fn(k) if KEY_AGGREGATION[k] == "corpus" else None)
                 for k in METRIC_KEYS)


def _battery_describe(ctx: Context) -> dict[str, Any]:
    from custom_metrics.battery import resolved_models

    cfg = battery_config(ctx)
    return {"medqsum_models_used": resolved_models(cfg), "meteor_tokenizer": _tokenizer_info(),
            "rouge_stemming": cfg["rouge_stemming"], "rouge_stemming_source": cfg["rouge_stemming_source"]}


def _medqsum() -> Family:
    """Built on first use: its keys come from the battery's own tables."""
    return Family(
        name="medqsum",
        keys=_battery_keys(),
        score=_battery_score,
        description="The biomedical question-summarization battery; a metric whose model is missing is NaN "
                    "and listed with its reason under medqsum_skipped.",
        source="custom_metrics.battery",
        needs=("model",),
        settings=("bertscore_model", "bertscore_layers", "sci_bertscore_model", "sci_bertscore_layers",
                  "blanc_model", "blanc_tune_epochs", "ppl_model", "mauve_model", "metric_batch_size",
                  "medqsum_metrics", "rouge_stemming"),
        describe=_battery_describe,
    )


# =========================================================================== the table

_STATIC = (ROUGE, BERTSCORE, DVO, JUDGE, FM, CCS_LENGTH, CCS_KEYWORDS, CCS_READABILITY, CCS_FOCUS)
_LAZY: dict[str, Callable[[], Family]] = {"medqsum": _medqsum}
FAMILIES: dict[str, Family] = {f.name: f for f in _STATIC}


def names() -> tuple[str, ...]:
    """Every family name, in table order."""
    return (*(f.name for f in _STATIC), *_LAZY)


def get(name: str) -> Family:
    """The family called ``name``."""
    if name not in FAMILIES and name in _LAZY:
        FAMILIES[name] = _LAZY[name]()
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown metric family {name!r}; families: {', '.join(names())}") from None


def all_families() -> list[Family]:
    """Every family record (building the lazy ones)."""
    return [get(n) for n in names()]


def family_keys(name: str) -> tuple[str, ...]:
    """The metric keys a family reports."""
    return get(name).key_names


def higher_is_better(keys: Sequence[str] | None = None) -> dict[str, bool]:
    """Direction of every key (or of ``keys``), from the records."""
    table = {k.name: k.higher_is_better for f in all_families() for k in f.keys}
    return table if keys is None else {k: table[k] for k in keys}


def family_of(key: str) -> Family:
    """The family that reports ``key``."""
    for f in all_families():
        if key in f.key_names:
            return f
    raise KeyError(f"no metric family reports {key!r}")


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
