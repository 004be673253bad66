"""THE table of suite tasks: every leaf task and group, and the YAMLs generated from it.

Why one table: data loading, the harness adapter, fine-tuning, vocabulary building,
token shift, re-scoring and the results readers all need to know what a task name
means (benchmark, subset, level, demonstrations, variant, metric families, generation
budget, hub source). They look it up here with :func:`lookup` instead of parsing the
name, so a new task is one row and no consumer can disagree with another.

``python -m lm_eval_tasks.catalog`` (or ``domsum tasks --write-yaml``) regenerates
every task folder's YAMLs; a test checks that the committed YAMLs equal the output.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from custom_metrics.errors import SuiteError

TASKS_DIR = Path(__file__).resolve().parent

# --------------------------------------------------------------------------- facts

#: DomainSum's three levels of domain shift and their five domains each (paper, Section 3)
DOMAINSUM_LEVELS: dict[str, tuple[str, ...]] = {
    "genre": ("cnndm", "pubmed", "reddit", "samsum", "wikihow"),
    "style": ("cnn", "fox", "nydaily", "nytimes", "wapo"),
    "topic": ("soccer", "crime", "family", "media", "law"),
}
ADAPTEVAL_DOMAINS = ("arxiv", "pubmed", "govreport")
CCSBENCH_SUBSETS = ("length", "keywords", "readability", "focus", "compositional")
CCSBENCH_CONTROLS = ("length", "keywords", "readability", "focus")
MEDQSUM_SUBSETS = ("hcm",)

BENCHMARKS = ("domainsum", "adapteval", "ccsbench", "medqsum")
#: the benchmark of every user domain (task YAMLs written by ``domsum new-task``,
#: :mod:`lm_eval_tasks.benchmarks.own`); its subsets are the user's domains
USER_BENCHMARK = "own"
#: the suite's benchmarks and the user's, in the order reports list them
ALL_BENCHMARKS = (*BENCHMARKS, USER_BENCHMARK)

#: task ``metadata.version`` per benchmark: bumped when its prompt or a metric changes
#: (2.0: per-document scores with standard errors, NLTK's own tokenizer; DomainSum 3.0:
#: ROUGE without stemming as its release; AdaptEval 3.0: Table 7/8 prompts by default;
#: CCSBench 3.0: Appendix C prompts, C.3 focus judge, CMUdict syllables)
VERSIONS = {"domainsum": 3.0, "adapteval": 3.0, "ccsbench": 3.0, "medqsum": 2.0}

#: benchmarks whose records carry a ``system`` text (the paper's system prompt): the
#: harness sends it as a system message under a chat template, prepends it otherwise
SYSTEM_PROMPTS = ("ccsbench",)

#: paper citation line recorded in every leaf's metadata
PAPERS = {
    "domainsum": "DomainSum (Yuan & Zhang, Findings of NAACL 2025)",
    "adapteval": "AdaptEval (Afzal et al., 2024)",
    "ccsbench": "CCSBench (Ding et al., 2024)",
    "medqsum": "Revisiting Automatic Question Summarization Evaluation in the Biomedical Domain (Yuan et al.)",
}

# DomainSum new-token budgets: about twice the mean reference length of the paper's
# Table 5 in Llama tokens, rounded up (PubMed abstracts are long, SAMSum/Reddit one line).
_DOMAINSUM_GEN = {
    "cnndm": 128, "pubmed": 384, "reddit": 64, "samsum": 64, "wikihow": 160,
    "cnn": 96, "fox": 96, "nydaily": 96, "nytimes": 96, "wapo": 96,
    "soccer": 128, "crime": 128, "family": 128, "media": 128, "law": 128,
}
# Stops end a run-on generation at the next prompt marker; none is "\n\n", which would
# cut multi-line summaries (CNN/DM highlights, WikiHow steps, GovReport paragraphs).
_DOMAINSUM_UNTIL = {
    0: ("\n\n\n", "SUMMARY:", "You are an expert at summarization"),
    2: ("\n\n\n", "Example 3:", "\nDocument:", "Now, summarize the following text"),
}
# AdaptEval: the paper's budgets (256 new tokens; GovReport 1,024).
_ADAPTEVAL_GEN = {"arxiv": 256, "pubmed": 256, "govreport": 1024}
_ADAPTEVAL_UNTIL = ("Proceed to summarize the following text.", "\nTEXT:", "\n\n\n\n")
# CCSBench abstracts are at most ~250 words.
_CCSBENCH_GEN = 300
# Question summaries are one short sentence.
_MEDQSUM_GEN = 64
_MEDQSUM_UNTIL = ("\n", "Question:")


@dataclass(frozen=True)
class TaskSpec:
    """One leaf task of the suite.

    ``shots`` demonstrations are built into the prompt by the benchmark's record
    builder (not by the harness's sampler); the harness reports them as ``n-shot``.
    ``variant`` is the name suffix's meaning: ``""`` plain, ``"judged"`` (LLM judge),
    ``"fm"`` (Facet-aware Metric), ``"hard"`` (CCSBench ``Attribute: Value`` lines).
    ``families`` are metric-family names of :mod:`custom_metrics.registry`.
    """

    name: str
    benchmark: str
    subset: str
    shots: int
    variant: str
    families: tuple[str, ...]
    max_gen_toks: int
    until: tuple[str, ...]
    level: str | None = None
    #: a user domain's data source and prompts (:class:`lm_eval_tasks.benchmarks.own.DomainSource`),
    #: None for the suite's benchmarks, whose data sources are the mirror and the hub
    source: Any = field(default=None, compare=False, repr=False)

    @property
    def domain(self) -> str:
        """The subset, under the name the domain-shift papers use."""
        return self.subset

    @property
    def zero_shot(self) -> "TaskSpec":
        """The zero-shot task of the same benchmark and subset (what fine-tuning trains on)."""
        found = select(self.benchmark, shots=0, variant="", subsets=(self.subset,))
        if not found:
            raise UnknownTask(f"{self.name}: the catalogue has no zero-shot task of {self.benchmark}/{self.subset}")
        return found[0]

    @property
    def hub_source(self):
        """The hub dataset this subset comes from, or None (mirror only)."""
        from lm_eval_tasks.data.loader import HUB_SOURCES

        return HUB_SOURCES.get((self.benchmark, self.subset))

    @property
    def paper(self) -> str:
        return PAPERS.get(self.benchmark) or (self.source.citation if self.source is not None else "")


@dataclass(frozen=True)
class GroupSpec:
    """A group of tasks; the keys of ``families`` are averaged unweighted over members (as
    the papers report), or nothing is when empty (a group of mixed settings is a list, not
    a mean)."""

    name: str
    members: tuple[str, ...]
    families: tuple[str, ...] = field(default=())

    @property
    def metrics(self) -> tuple[str, ...]:
        return _metric_keys(self.families)


class UnknownTask(SuiteError, KeyError):
    """A task name the catalogue does not hold; the message lists the close ones."""

    def __str__(self) -> str:  # KeyError quotes its argument; ours is a sentence
        return str(self.args[0])


def task_name(benchmark: str, subset: str, shots: int, variant: str) -> str:
    """The suite's naming rule: ``<benchmark>_<subset>[_<k>shot][_<variant>]``."""
    return f"{benchmark}_{subset}" + (f"_{shots}shot" if shots else "") + (f"_{variant}" if variant else "")


# --------------------------------------------------------------------------- the table


def _metric_keys(families: Iterable[str]) -> tuple[str, ...]:
    from custom_metrics.registry import family_keys

    return tuple(k for f in families for k in family_keys(f))


def _build() -> tuple[dict[str, TaskSpec], dict[str, GroupSpec]]:
    from custom_metrics.battery import MEDQSUM as MEDQSUM_FAMILIES
    from lm_eval_tasks.benchmarks.ccsbench_prompts import DEFAULT_UNTIL as CCS_UNTIL

    tasks: dict[str, TaskSpec] = {}
    groups: dict[str, GroupSpec] = {}

    def add(benchmark, subset, shots, variant, families, gen, until, level=None) -> str:
        spec = TaskSpec(task_name(benchmark, subset, shots, variant), benchmark, subset, shots, variant,
                        tuple(families), gen, tuple(until), level)
        tasks[spec.name] = spec
        return spec.name

    def group(name, members, families=()) -> str:
        groups[name] = GroupSpec(name, tuple(members), tuple(families))
        return name

    # DomainSum: 15 domains x {0, 2} shots; a group per level and setting.
    setting_groups = {0: [], 2: []}
    for shots in (0, 2):
        suffix = f"_{shots}shot" if shots else ""
        for level, domains in DOMAINSUM_LEVELS.items():
            members = [add("domainsum", d, shots, "", ("rouge", "bertscore"), _DOMAINSUM_GEN[d],
                           _DOMAINSUM_UNTIL[shots], level) for d in domains]
            setting_groups[shots].append(group(f"domainsum_{level}{suffix}", members, ("rouge", "bertscore")))
    # the whole benchmark lists both settings; it never averages zero- and two-shot together
    group("domainsum", setting_groups[0] + setting_groups[2])

    # AdaptEval: plain, two-shot, judged (LLM judge) and FM (arXiv and PubMed only).
    base = ("rouge", "bertscore", "dvo")
    for shots, variant, extra, domains in ((0, "", (), ADAPTEVAL_DOMAINS), (2, "", (), ADAPTEVAL_DOMAINS),
                                           (0, "judged", ("judge",), ADAPTEVAL_DOMAINS),
                                           (0, "fm", ("fm",), ("arxiv", "pubmed"))):
        members = [add("adapteval", d, shots, variant, base + extra, _ADAPTEVAL_GEN[d], _ADAPTEVAL_UNTIL)
                   for d in domains]
        if not variant:
            group("adapteval" + (f"_{shots}shot" if shots else ""), members, base)

    # CCSBench: each subset's controls; zero-shot, three-shot and hard-prompt variants.
    for shots, variant in ((0, ""), (3, ""), (0, "hard")):
        members = []
        for subset in CCSBENCH_SUBSETS:
            controls = CCSBENCH_CONTROLS if subset == "compositional" else (subset,)
            members.append(add("ccsbench", subset, shots, variant, ("rouge", *(f"ccs_{c}" for c in controls)),
                               _CCSBENCH_GEN, CCS_UNTIL))
        group("ccsbench" + (f"_{shots}shot" if shots else "") + (f"_{variant}" if variant else ""),
              members, ("rouge",))

    # Biomedical question summarization: the metric battery, a list of families.
    for shots in (0, 2):
        members = [add("medqsum", s, shots, "", MEDQSUM_FAMILIES, _MEDQSUM_GEN, _MEDQSUM_UNTIL)
                   for s in MEDQSUM_SUBSETS]
        group("medqsum" + (f"_{shots}shot" if shots else ""), members, MEDQSUM_FAMILIES)
    return tasks, groups


_TABLE: tuple[dict[str, TaskSpec], dict[str, GroupSpec]] | None = None


def _table() -> tuple[dict[str, TaskSpec], dict[str, GroupSpec]]:
    global _TABLE
    if _TABLE is None:
        _TABLE = _build()
    return _TABLE


def register(spec: TaskSpec) -> TaskSpec:
    """Add a user domain's task (:mod:`lm_eval_tasks.benchmarks.own`) to the table.

    Why: from then on every consumer that looks a task up (loading, scoring, rescoring,
    reports, domain statistics, fine-tuning) treats it as one more subset. A name the
    suite already uses is an error; registering the same user task again replaces it
    (its YAML may have been edited).
    """
    tasks = _table()[0]
    held = tasks.get(spec.name)
    if (held is not None and held.source is None) or spec.name in _table()[1]:
        raise UnknownTask(f"task {spec.name!r} is already a task or group of the suite; give your own "
                          f"domain another name")
    tasks[spec.name] = spec
    from lm_eval_tasks.data.user_files import register_source

    register_source(spec.benchmark, spec.subset, spec.source)
    return spec


def all_tasks() -> dict[str, TaskSpec]:
    """Every leaf task, by name, in catalogue order."""
    return _table()[0]


def all_groups() -> dict[str, GroupSpec]:
    """Every group, by name."""
    return _table()[1]


def lookup(name: str) -> TaskSpec:
    """The leaf task called ``name``; an unknown name is an error listing close names."""
    tasks = all_tasks()
    if name in tasks:
        return tasks[name]
    import difflib

    close = difflib.get_close_matches(name, list(tasks) + list(all_groups()), n=5, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    if name in all_groups():
        raise UnknownTask(f"{name!r} is a group of the suite, not a task; its tasks: "
                          f"{', '.join(expand([name]))}")
    raise UnknownTask(f"unknown suite task {name!r}{hint} (`domsum tasks` lists all; a task of your own "
                      f"needs its folder: --include_path FOLDER or $DOMSUM_INCLUDE_PATH)")


def task_target(task: str) -> tuple[str, str]:
    """(benchmark, subset) of a suite task; an unknown name raises :class:`UnknownTask`."""
    spec = lookup(task)
    return spec.benchmark, spec.subset


def expand(names: Iterable[str]) -> list[str]:
    """Leaf task names of ``names`` (tasks kept, groups expanded recursively), in order."""
    out: list[str] = []
    for name in names:
        if name in all_groups():
            out.extend(t for t in expand(all_groups()[name].members) if t not in out)
        else:
            spec = lookup(name)
            if spec.name not in out:
                out.append(spec.name)
    return out


def select(benchmark: str | None = None, *, level: str | None = None, shots: int | None = None,
           variant: str | None = None, subsets: Sequence[str] | None = None) -> list[TaskSpec]:
    """Leaf tasks matching every given field."""
    return [t for t in all_tasks().values()
            if (benchmark is None or t.benchmark == benchmark) and (level is None or t.level == level)
            and (shots is None or t.shots == shots) and (variant is None or t.variant == variant)
            and (subsets is None or t.subset in subsets)]


def subsets(benchmark: str) -> tuple[str, ...]:
    """The subsets (domains) of a benchmark, in catalogue order."""
    seen: dict[str, None] = {}
    for t in all_tasks().values():
        if t.benchmark == benchmark:
            seen.setdefault(t.subset)
    if not seen:
        raise UnknownTask(f"unknown benchmark {benchmark!r}; the suite has {', '.join(BENCHMARKS)}")
    return tuple(seen)


def level_of(benchmark: str, subset: str) -> str | None:
    """DomainSum level of a subset (None for the other benchmarks)."""
    for t in all_tasks().values():
        if t.benchmark == benchmark and t.subset == subset:
            return t.level
    return None


def metric_keys(spec: TaskSpec) -> tuple[str, ...]:
    """Every metric key a task reports, in family order."""
    return _metric_keys(spec.families)


# --------------------------------------------------------------------------- YAMLs

HEADER = "# Generated from lm_eval_tasks/catalog.py; edit the catalogue, not this file.\n"


def _yaml_list(items: Iterable[str], indent: str = "  ") -> str:
    """Block list of JSON-quoted strings (safe for newlines, colons, quotes)."""
    return "".join(f"{indent}- {json.dumps(x)}\n" for x in items)


def leaf_yaml(spec: TaskSpec) -> str:
    """A leaf: the benchmark's template, greedy ``generate_until``, the real shot count."""
    return (
        HEADER + f"include: _{spec.benchmark}_template_yaml\n"
        + f"task: {spec.name}\n"
        + (f"num_fewshot: {spec.shots}\n" if spec.shots else "")
        + "generation_kwargs:\n  until:\n" + _yaml_list(spec.until, "    ")
        + f"  max_gen_toks: {spec.max_gen_toks}\n  do_sample: false\n  temperature: 0.0\n"
    )


def group_yaml(group: GroupSpec) -> str:
    """A group; with metrics, each averaged over its members unweighted."""
    agg = "".join(f"  - metric: {m}\n    aggregation: mean\n    weight_by_size: false\n" for m in group.metrics)
    return (HEADER + f"group: {group.name}\ntask:\n" + _yaml_list(group.members)
            + ("aggregate_metric_list:\n" + agg if agg else "") + "metadata:\n  version: 2.0\n")


def template_yaml(benchmark: str) -> str:
    """What every leaf of a benchmark shares: the task class and the record fields."""
    return (
        HEADER + "# The task class loads the records itself (download()), from the mirror or the hub.\n"
        + "class: !function utils.SuiteTask\n"
        + "output_type: generate_until\n"
        + "test_split: test\n"
        + 'doc_to_text: "{{prompt}}"\n'
        + 'doc_to_target: "{{summary}}"\n'
        + ('description: "{{system}}"\n' if benchmark in SYSTEM_PROMPTS else "")
        + f"metadata:\n  version: {VERSIONS[benchmark]}\n"
        + f"  paper: {json.dumps(PAPERS[benchmark])}\n"
    )


def rendered_yamls() -> dict[Path, str]:
    """Every generated YAML file: path -> text."""
    out: dict[Path, str] = {}
    for bench in BENCHMARKS:
        out[TASKS_DIR / bench / f"_{bench}_template_yaml"] = template_yaml(bench)
    for spec in all_tasks().values():
        if spec.source is None:  # a user's own task lives in the user's folder
            out[TASKS_DIR / spec.benchmark / f"{spec.name}.yaml"] = leaf_yaml(spec)
    for g in all_groups().values():
        out[TASKS_DIR / g.name.split("_")[0] / f"{g.name}.yaml"] = group_yaml(g)
    return out


def write_yamls() -> list[Path]:
    """Write every generated YAML; remove stale generated ones. Returns the written paths."""
    files = rendered_yamls()
    for bench in BENCHMARKS:
        for old in (TASKS_DIR / bench).glob("*.yaml"):
            if old not in files and old.read_text().startswith(HEADER):
                old.unlink()
    for path, text in files.items():
        path.write_text(text)
    return list(files)


def iter_tasks() -> Iterator[TaskSpec]:
    yield from all_tasks().values()


if __name__ == "__main__":
    for p in write_yamls():
        print(p.relative_to(TASKS_DIR))
