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
  document it does not apply to; under ``accelerate``, a key some rank has no value for
  is handed over NaN included and averaged NaN-aware); corpus keys (corpus BLEU, MAUVE,
  Pearson r, F1) stay corpus aggregations. Under ``accelerate launch`` each rank
  scores its own shard.
* **Never lose generations.** Before any generation (:meth:`build_all_requests`) every
  scorer the task needs is checked (encoder loadable, vocabulary present, judge
  endpoint answering) and the run stops in seconds naming the setting to change. A
  family that still fails after generation makes its keys NaN, the reason goes into
  the results, and results and samples are written as usual.
* **Interrupted generation resumes.** lm-eval's ``evaluate`` is wrapped (once, when this
  module is imported while lm-eval loads the suite's tasks) so that, for the suite's
  tasks, the model's ``generate_until`` answers from the generation journal first and
  commits each generation as it finishes (:mod:`~lm_eval_tasks.harness_parts.resume`).
* ``--predict_only`` checks and loads no scorer. ``n-shot`` is the number of
  demonstrations built into the prompt; ``--num_fewshot`` with another number is an
  error naming the task to use instead.
* **What the results record** (``configs.<task>.metadata``): the settings actually used
  (encoder and its real layer, tokenizer, stemming, judge model and host, library
  versions), the loading facts and any scorer failure, added by :meth:`dump_config`,
  the harness's hook for writing a task's configuration into the results.

What needs no ``lm_eval`` lives beside it in :mod:`lm_eval_tasks.harness_parts`: shard
scoring (:mod:`~lm_eval_tasks.harness_parts.scoring`), prompt fitting records, saving and
counting generations, the generation journal, data-parallel gathering, the task folders
and the error hook.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import datasets
from lm_eval import evaluator
from lm_eval.api.metrics import mean, nanmean
from lm_eval.api.task import ConfigurableTask
from lm_eval.utils import simple_parse_args_string
from lm_eval.api.utils import maybe_delimit

from custom_metrics import model_cache, reference_cache, registry, secrets
from custom_metrics.errors import SuiteError
from lm_eval_tasks import catalog, settings
from lm_eval_tasks.benchmarks import stop_sequences
from lm_eval_tasks.catalog import load_task
from lm_eval_tasks.benchmarks.own.configs import check_settings, is_user_config, read_task_yaml, spec_from_config
from lm_eval_tasks.benchmarks.budget import FitLog, fit_prompt
from lm_eval_tasks.harness_parts.dataset import as_dataset
from lm_eval_tasks.harness_parts import resume
from lm_eval_tasks.harness_parts.errors import ScorerUnavailableError, install_excepthook
from lm_eval_tasks.harness_parts.fitting import (advise_batch_size, budget_report, calling_backend, cut_warning,
                                                 merge_fits, rank_fits, start_fitting)
from lm_eval_tasks.harness_parts.generations import generation_report, save_generations
from lm_eval_tasks.harness_parts.include_paths import index_leaves, index_paths, split_include_paths
from lm_eval_tasks.harness_parts import masking
from lm_eval_tasks.harness_parts.ranks import all_ranks, merge_counts, process_group
from lm_eval_tasks.harness_parts.scoring import ShardScoring, clean_prediction, none_scored, sum_counts
from lm_eval_tasks.results import first_text

log = logging.getLogger(__name__)

# every later log line and uncaught traceback masked (``domsum run`` did it from its start);
# before the suite's excepthook, which then stays in front for its one-line errors
secrets.install_log_masking()
install_excepthook()


resume.install(evaluator, simple_parse_args_string)
masking.install(evaluator)  # keys in --model_args: out of the results' config and the summary line


class SuiteTask(ConfigurableTask):
    """Every leaf task of the suite; what it does comes from its catalogue row.

    A user's own domain (``metadata.domain`` in its YAML, :mod:`lm_eval_tasks.benchmarks.own.configs`)
    is registered in the catalogue from its configuration when the task is built.
    """

    #: the folder of the task YAMLs whose ``utils.py`` made this class (:func:`task_class`):
    #: a user domain's relative ``data_files`` are read from there, wherever lm_eval runs
    task_folder: Path | None = None

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        cfg = dict(config or {})
        cfg.pop("class", None)
        if is_user_config(cfg):  # a user's own domain: its YAML is its catalogue row
            self.spec = catalog.register(spec_from_config(cfg, self.task_folder and str(self.task_folder / "task.yaml")))
            source = str((cfg.get("metadata") or {}).get("config_source") or "")  # the YAML lm-eval read
            if source.endswith(".yaml") and Path(source).is_file():
                check_settings(read_task_yaml(source), f"task {self.spec.name!r} ({source})")
        else:
            self.spec = catalog.lookup(cfg["task"])
        self._loaded_report: dict[str, Any] = {}
        super().__init__(config=cfg)
        self.config.metadata = dict(self.config.metadata or {})
        settings.check_metadata(self.meta, f"task {self.spec.name} (--metadata)",
                                allowed=set(found[1]) if (found := resume.model_args(simple_parse_args_string)) else None)
        until = stop_sequences(self.spec, self.meta)
        if until is not None:  # a prompt file's layout brings its own stops
            self.config.generation_kwargs = {**(self.config.generation_kwargs or {}), "until": list(until)}
        #: the families, their contexts and what scoring this rank's shard found
        self._scoring = ShardScoring(self.spec, self.meta)
        self._described: dict[str, Any] = {}
        self._checked = False
        self._fit = FitLog()
        self._meter_source = "not measured"
        #: prompt fitting of every rank's documents (data-parallel runs), merged in _score_shard
        self._fit_all: dict[str, Any] | None = None
        #: the generation journal's record of this task, every rank's (set at the first document)
        self._journal: dict[str, Any] | None = None

    # ------------------------------------------------------------------ loading

    @property
    def meta(self) -> dict:
        return self.config.metadata if isinstance(self.config.metadata, dict) else {}

    @property
    def _max_gen_toks(self) -> int:
        return int((self.config.generation_kwargs or {}).get("max_gen_toks") or self.spec.max_gen_toks)

    def download(self, dataset_kwargs: dict | None = None, **kwargs: Any) -> None:
        """Build the test records and prompts with the task's real metadata."""
        from lm_eval_tasks.data.loader import DataError

        loaded = load_task(self.spec, "test", dict(self.config.metadata or {}))
        if not loaded.docs:
            raise DataError(f"task {self.spec.name!r}: the test split has no usable record")
        self._loaded_report = loaded.report
        # each sample names its task: `domsum rescore` reads it rather than trusting a file name
        docs = [{**doc, "suite_task": self.spec.name} for doc in loaded.docs]
        self.dataset = datasets.DatasetDict({"test": as_dataset(docs, self._loaded_report)})
        self.task_docs = self.dataset["test"]

    def _start_fitting(self, backend: Any) -> None:
        """Choose how prompts are measured for this run (:mod:`~lm_eval_tasks.benchmarks.budget`).

        Why at request-building time and not at loading: ``--gen_kwargs max_gen_toks=...``
        reaches the task after it is built, and the chat template, system instruction
        and backend are known only now.
        """
        self._fit, self._meter_source = start_fitting(backend, self.meta, self._max_gen_toks)

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

    @property
    def _bypass(self) -> bool:
        """True under ``--predict_only`` (the harness swaps every metric for ``bypass``)."""
        return "bypass" in getattr(self, "_metric_fn_list", {})

    # ------------------------------------------------------------------ before generation

    def preflight(self) -> None:
        """Check every scorer this task needs; record the settings it will use."""
        if self._checked:
            return
        model_cache.hold(self, registry.family_models(self._scoring.ctx))  # kept until this task is scored
        if self.spec.source is not None and (vocabulary := self._scoring.needing("vocabulary")):
            from lm_eval_tasks.preparation.vocab import ensure_vocabulary

            try:
                self._described["user_vocabulary"] = ensure_vocabulary(self.spec, self.meta)
            except SuiteError as exc:
                raise ScorerUnavailableError(f"task {self.spec.name}: stopping before generation, "
                                             f"{', '.join(vocabulary)} has no vocabulary: {exc}") from None
        described, problems = self._scoring.check(self.meta)
        self._described.update(described)
        if problems:
            raise ScorerUnavailableError(
                f"task {self.spec.name}: stopping before generation, a scorer it needs is unavailable:\n  - "
                + "\n  - ".join(problems)
                + "\n(--predict_only generates without scoring; metadata preflight=false skips this check)")
        self._checked = True

    def build_all_requests(self, *args: Any, **kwargs: Any) -> None:
        if not self._bypass:
            self.preflight()
        backend = calling_backend(kwargs.get("chat_template"))
        self._start_fitting(backend)
        folder = settings.resolve(self.meta, "generation_journal")
        resume.register(self.config.task, None if reference_cache.is_off(folder) else folder)
        super().build_all_requests(*args, **kwargs)
        record = self._budget_report()
        if warning := cut_warning(self.spec.name, record):
            log.warning("%s", warning)
        advise_batch_size(backend, record)  # said once, before the first generation

    # ------------------------------------------------------------------ scoring

    def _score_shard(self) -> None:
        """Score every instance's filtered response of this rank, one batch per family."""
        seen: dict[tuple[str, str], dict] = {}
        for inst in self.instances:
            for resp in (inst.filtered_resps or {}).values():
                pred = clean_prediction(resp)
                seen.setdefault((str(inst.doc.get("id", "")), pred), inst.doc)
        self._generation_report()
        if self._scoring.needing("judge"):
            self._save_generations()
        self._scoring.scores = {}
        self._scoring.score_items(seen, shard=True)
        self._merge_ranks()
        # free the models no other task of this process still needs (a corpus key's model is
        # kept: it is used again at aggregation)
        model_cache.let_go(self, keep=registry.family_models(self._scoring.ctx, corpus_only=True))

    def _save_generations(self) -> None:
        """Write this rank's generations before judging starts, as a samples file.

        Why: lm-eval writes samples only after every metric is computed, so a judge
        interrupted (Ctrl-C, a killed job) would cost every generation
        (:func:`~lm_eval_tasks.harness_parts.generations.save_generations`).
        """
        folder = settings.resolve(self.meta, "generations_dir")
        if reference_cache.is_off(folder):
            return
        rows = ({"doc_id": inst.doc_id, "doc": inst.doc, "target": self.doc_to_target(inst.doc),
                 "arguments": {"gen_args_0": {"arg_0": inst.args[0]}}, "resps": [inst.resps],
                 "filtered_resps": [resp], "filter": filter_name}
                for inst in self.instances for filter_name, resp in (inst.filtered_resps or {}).items())
        path = save_generations(folder, self.spec.name, rows)
        if path is not None:
            self._loaded_report["generations_saved"] = path

    def _evaluated(self) -> dict[str, dict]:
        """Document key -> record of the documents this rank evaluated."""
        return {self._doc_key(inst.doc): inst.doc for inst in self.instances}

    def _merge_ranks(self) -> None:
        """Make this rank's record of the run the whole run's (a no-op in a single process)."""
        if process_group() is None:
            return
        parts = all_ranks({**self._scoring.rank_part(), **rank_fits(self._fit, self._evaluated()),
                           "saved": self._loaded_report.get("generations_saved")})
        self._scoring.merge(parts)
        self._fit_all = merge_fits(parts)
        if any(p["saved"] for p in parts):  # each rank saved its own generations file
            self._loaded_report["generations_saved"] = merge_counts([p["saved"] for p in parts])

    def _generation_report(self) -> None:
        """Count empty generations and generations cut by ``max_gen_toks``; warn about both."""
        raw = [(str(inst.doc.get("id", "")), first_text(inst.resps)) for inst in self.instances]
        self._described["generation"] = generation_report(self.spec.name, raw, self._fit.meter, self._max_gen_toks)

    def _budget_report(self) -> dict[str, Any]:
        """``prompt_budget`` for the documents this rank evaluated, with a warning when any was cut."""
        evaluated = self._evaluated() if self._fit_all is None else {}
        return budget_report(self._fit, self._meter_source, self._fit_all, evaluated)

    def process_results(self, doc: dict, results: list) -> dict[str, Any]:
        if self._journal is None:  # every rank's journal counts, gathered where every rank is
            self._journal = resume.merge_records(all_ranks(resume.task_record(self.config.task)))
        if self._bypass:
            return super().process_results(doc, results)
        if self._scoring.scores is None:
            self._score_shard()
        assert self._scoring.scores is not None
        key = (str(doc.get("id", "")), clean_prediction(results[0] if results else ""))
        if key not in self._scoring.scores:  # a document outside this rank's instances: score it alone
            self._scoring.score_items({key: doc})
        return self._scoring.document_scores(key)

    def aggregation(self) -> dict[str, Callable[[list], float]]:
        if self._bypass:
            return super().aggregation()
        scoring = self._scoring
        out: dict[str, Callable[[list], float]] = {}
        for name in scoring.families:
            ctx = scoring.ctx[name]
            for k in registry.get(name).keys:
                if k.aggregation == "mean":
                    out[k.name] = mean
                elif k.aggregation == "nanmean":
                    # NaN documents are left out in process_results; a key no document has a
                    # value for is NaN through a function the harness gives no stderr ("N/A")
                    scored_none = scoring.scores is not None and k.name not in scoring.sparse
                    out[k.name] = none_scored if scored_none else nanmean if k.name in scoring.ragged else mean
                elif k.aggregation == "sum":
                    out[k.name] = sum_counts
                else:
                    out[k.name] = scoring.corpus(k, ctx)
        return out

    def higher_is_better(self) -> dict[str, bool | None]:
        """Each key's direction from its record; None (no arrow in lm-eval's table, null in the
        results) for a key neither of whose directions is better."""
        if self._bypass:
            return super().higher_is_better()
        return {k.name: k.higher_is_better for k in self._scoring.keys()}

    # ------------------------------------------------------------------ results

    def run_record(self) -> dict[str, Any]:
        """What the results JSON records beside the scores (see the module docstring)."""
        record: dict[str, Any] = {
            "suite_task": {"benchmark": self.spec.benchmark, "subset": self.spec.subset,
                           "level": self.spec.level, "shots": self.spec.shots, "variant": self.spec.variant,
                           "families": list(self._scoring.families)},
            **self._loaded_report,
            **self._described,
            **(self._journal or {}),
        }
        if getattr(self, "_instances", None):
            record["prompt_budget"] = self._budget_report()
        record.update(self._scoring.record(self.meta, self._bypass))
        return record

    def dump_config(self) -> dict:
        cfg = super().dump_config()
        meta = dict(cfg.get("metadata") or {})
        meta.update(json.loads(json.dumps(self.run_record(), default=str)))
        cfg["metadata"] = meta
        if self.spec.source is not None and self.spec.source.format != "hub":
            # the files read, absolute: a results file is read (report, rescore) far from the task
            # YAML a relative path was relative to
            cfg["dataset_kwargs"] = {**(cfg.get("dataset_kwargs") or {}), "data_files": self.spec.source.splits}
        return secrets.mask_obj(cfg)


def task_class(utils_file: str) -> type[SuiteTask]:
    """The task class a user's task folder names in its YAMLs (``utils.py`` next to them).

    Why a class per folder: lm-eval hands a task its configuration, not the YAML's path,
    and a user's ``data_files`` may be relative to the folder they were written in.
    """
    return type("SuiteTask", (SuiteTask,), {"task_folder": Path(utils_file).resolve().parent,
                                            "__module__": SuiteTask.__module__})


# ---------------------------------------------------------------------- the CLI


def needs_harness_tasks(names: Sequence[str], folders: Sequence[str] = ()) -> bool:
    """Whether ``names`` need the harness's own task index besides the suite's and ``folders``.

    Why ask first: indexing the harness's 14,755 built-in tasks costs about 4.5 s on two
    cores, so it happens only for a name the suite and the user's folders do not hold. A
    name found nowhere is :class:`~lm_eval_tasks.catalog.UnknownTask`, one line with the
    close names and the ``--include_path`` hint, before any model loads.
    """
    missing = _outside(names, folders)
    if not missing:
        return False
    full = _task_index(tuple(index_paths(folders)), True)
    unknown = [n for n in missing if not full.match_tasks([n])]
    if unknown:
        import difflib

        close = sorted({c for n in unknown for c in difflib.get_close_matches(n, full.all_tasks, n=4, cutoff=0.6)})
        raise catalog.UnknownTask(
            f"task(s) not found: {', '.join(unknown)}" + (f"; did you mean {', '.join(close)}?" if close else "")
            + " (`domsum tasks` lists the suite's, `lm_eval ls tasks` the harness's; a task of your own needs "
              "its folder: --include_path FOLDER, an absolute path or \"$(pwd)/FOLDER\" from another directory)")
    return True


@lru_cache(maxsize=2)
def _task_index(paths: tuple[str, ...], include_defaults: bool) -> Any:
    """The harness's task index over ``paths`` (and its own tasks), built once per process:
    finding a name and reading its data's source ask the same 4.5 s index."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=list(paths), include_defaults=include_defaults, verbosity="ERROR")


def _outside(names: Sequence[str], folders: Sequence[str]) -> list[str]:
    """The requested names neither the suite nor the user's ``folders`` hold."""
    wanted = [n for n in names if n and not n.endswith(".yaml") and not Path(n).is_dir()]
    suite = _task_index(tuple(index_paths(folders)), False)
    return [n for n in wanted if not suite.match_tasks([n])]


def harness_task_configs(names: Sequence[str], folders: Sequence[str] = ()) -> dict[str, list[tuple[str, dict]]]:
    """Each requested name that is one of the harness's own tasks, groups or tags -> its
    tasks' ``(task, configuration)`` as the harness's index read them
    (:func:`~lm_eval_tasks.harness_parts.include_paths.index_leaves`), for the data check
    before the model loads."""
    index = _task_index(tuple(index_paths(folders)), True).task_index
    return {name: index_leaves(index, name) for name in _outside(names, folders) if name in index}


def run_cli(argv: list[str], folders: Sequence[str] = (), include_defaults: bool = False) -> None:
    """The harness's own CLI (``lm_eval ...``, same flags and outputs) over the suite's tasks,
    the user's task ``folders`` and, with ``include_defaults``, the harness's own tasks.

    Why not plain ``lm_eval``: lm-eval 0.4.13 takes one ``--include_path`` and, at every
    start, parses the YAML of all its 14,755 built-in tasks (about 4.5 s on two cores)
    before it loads a model. Here its ``TaskManager`` gets every folder, and the harness's
    tasks only when a requested name needs them (:func:`needs_harness_tasks`). Everything
    after indexing is the unmodified CLI; its commit probe runs quietly (no stray ``fatal:``
    line outside a git checkout, :mod:`~lm_eval_tasks.harness_parts.git_probe`).
    """
    from lm_eval import evaluator
    from lm_eval.__main__ import cli_evaluate
    from lm_eval.loggers.utils import get_commit_from_path
    from lm_eval.tasks import manager

    from lm_eval_tasks.harness_parts.git_probe import quiet_git_hash

    argv, given = split_include_paths(argv)
    paths = index_paths([*folders, *given])
    original = manager.TaskManager.__init__

    def with_folders(self, *args: Any, **kwargs: Any) -> None:
        kwargs["include_defaults"] = include_defaults
        kwargs["include_path"] = paths
        original(self, *args, **kwargs)

    argv = [*argv, "--include_path", paths[0]]  # what the CLI logs; the index gets every folder
    manager.TaskManager.__init__ = with_folders  # type: ignore[method-assign]
    probe, evaluator.get_git_commit_hash = evaluator.get_git_commit_hash, lambda: quiet_git_hash(get_commit_from_path)
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
    finally:
        manager.TaskManager.__init__ = original  # type: ignore[method-assign]
        evaluator.get_git_commit_hash = probe
