"""``domsum new-task``'s library side: a folder of plain harness YAML for a user's domain.

Why write files rather than register the domain somewhere in the package: a task YAML
is what lm-eval users read, edit, version and share, and ``lm_eval --include_path
FOLDER`` runs it from any directory with no suite command in between. The folder holds

* ``NAME.yaml``: the zero-shot task, every fact of the domain in one place (data files,
  field names, prompt, generation budget, metric families), with comments;
* ``NAME_2shot.yaml``: the two-shot task, ``include: NAME.yaml`` plus its own lines;
* ``utils.py``: the one line that names the suite's task class;
* ``README.md``: the harness's task README template, filled in for every task of the folder.

A second domain written to the same folder adds its YAMLs beside the first's (one
``utils.py`` serves all) and the README is written again to list both; only the same
task name again needs ``--overwrite``.

The data are read once here, through the same reader the task uses, so a missing file,
a missing field or a bad line is reported now, with its file and line, not after a
model has loaded.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from lm_eval_tasks.benchmarks.papers import RECORDS
from lm_eval_tasks.benchmarks.own import BENCHMARK, DEFAULT_FAMILIES, RECORD_KEY, DomainSource, RecordError, \
    domain_source

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
#: stops of DomainSum's prompts (a run-on generation ends at the next prompt marker)
UNTIL = RECORDS["domainsum"].until
#: tokens per word of English text in the usual LLM tokenizers (Llama, GPT-2: about 1.3)
TOKENS_PER_WORD = 1.3
#: train records the two-shot task needs: two demonstrations, neither the document itself
MIN_TRAIN = 3


@dataclass
class NewTask:
    """What ``domsum new-task`` was asked for."""

    name: str
    out: Path
    data: Path | None = None
    hub: str | None = None
    hub_config: str | None = None
    format: str | None = None
    document_field: str = "document"
    summary_field: str = "summary"
    id_field: str | None = None
    level: str = BENCHMARK
    families: tuple[str, ...] = DEFAULT_FAMILIES
    prompt: str | None = None
    max_gen_toks: int | None = None
    overwrite: bool = False
    written: list[Path] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    #: what was not written, or written otherwise than asked, and why: one line each for the console
    notes: list[str] = field(default_factory=list)


def _source(req: NewTask) -> DomainSource:
    """The data ``--data`` (a folder's ``test`` and ``train`` files) or ``--hub`` names."""
    common = dict(document_field=req.document_field, summary_field=req.summary_field, id_field=req.id_field,
                  prompt=req.prompt)
    if req.hub:
        return domain_source(req.name, "hub", {"test": "test", "train": "train"}, "--", hub_path=req.hub,
                             hub_name=req.hub_config, **common)
    if req.data is None:
        raise RecordError("say where the data are: --data DIR (test.jsonl and train.jsonl, or .csv) or --hub DATASET")
    folder = req.data.expanduser().resolve()
    if not folder.is_dir():
        raise RecordError(f"--data {req.data}: not a folder (it should hold test.jsonl and train.jsonl)")
    suffix = {"json": ".jsonl", "csv": ".csv"}
    for fmt in [req.format] if req.format else ["json", "csv"]:
        if (folder / f"test{suffix[fmt]}").is_file():
            files = {s: folder / f"{s}{suffix[fmt]}" for s in ("test", "train")
                     if (folder / f"{s}{suffix[fmt]}").is_file()}
            return domain_source(req.name, fmt, files, "--", **common)
    have = sorted(p.name for p in folder.iterdir())[:10]
    raise RecordError(f"--data {folder}: no test.jsonl or test.csv (found: {', '.join(have) or 'nothing'})")


def _read(req: NewTask, source: DomainSource) -> dict[str, list[dict]]:
    """Every split's records with a document and a summary; the bad lines of every split are
    one error (:class:`~lm_eval_tasks.data.records.BadLines`), each empty record one line of
    ``req.notes`` (it is left out and counted when the task runs)."""
    from lm_eval_tasks.benchmarks import drop_empty
    from lm_eval_tasks.data.records import BadLines, capped
    from lm_eval_tasks.data.user_files import FieldInNoRecord, read_split

    out, bad = {}, []
    for split in source.splits:
        try:
            records, empty = read_split(source, split)  # the task is named once, in the error
        except BadLines as exc:
            bad += exc.problems
            continue
        except FieldInNoRecord as exc:  # named as the flag that gave it (--document-field)
            raise RecordError(exc.said_as("--" + exc.role.replace("_", "-"))) from None
        req.counts[split] = len(records)
        req.notes.extend(capped(empty))
        out[split] = drop_empty(records)[0]
    if bad:
        raise BadLines(bad, req.name)
    return out


def default_max_gen_toks(summaries: list[str]) -> int:
    """About twice the mean reference length in tokens, rounded up to a multiple of 32
    (32 to 1,024): DomainSum's rule for its budgets."""
    words = [len(s.split()) for s in summaries] or [50]
    tokens = 2 * TOKENS_PER_WORD * sum(words) / len(words)
    return int(min(1024, max(32, math.ceil(tokens / 32) * 32)))


def _strings(items) -> str:
    return "".join(f"    - {json.dumps(x)}\n" for x in items)


def zero_shot_yaml(req: NewTask, source: DomainSource, max_gen: int) -> str:
    if source.format == "hub":
        data = (f"dataset_path: {json.dumps(source.hub_path)}\n"
                + (f"dataset_name: {json.dumps(source.hub_name)}\n" if source.hub_name else "")
                + "dataset_kwargs:\n  data_files: null\n")
    else:
        data = (f"dataset_path: {source.format}        # json (JSON lines) or csv; or a hub dataset id\n"
                "dataset_kwargs:\n  data_files:          # split -> file (relative paths: from this folder)\n"
                + "".join(f"    {split}: {json.dumps(path)}\n" for split, path in source.files))
    prompt = json.dumps(source.prompt) if source.prompt else "null"
    return (
        f"# Summarization on your own domain {req.name!r}, written by `domsum new-task` (docs/own_domain.md).\n"
        "# A plain lm-eval task: edit any line. Run it from any directory with\n"
        f"#   lm_eval --model hf --model_args pretrained=MODEL --include_path THIS_FOLDER --tasks {req.name}\n"
        f"task: {req.name}\n"
        "class: !function utils.SuiteTask     # the suite's task class: prompt fitting, per-document scores\n"
        "output_type: generate_until\n"
        + data +
        "test_split: test\n"
        'doc_to_text: "{{prompt}}"            # built by the suite from metadata.domain.prompt\n'
        'doc_to_target: "{{summary}}"\n'
        "generation_kwargs:\n  until:\n" + _strings(UNTIL[0]) +
        f"  max_gen_toks: {max_gen}            # about twice the mean reference length in tokens\n"
        "  do_sample: false\n  temperature: 0.0\n"
        "metadata:\n  version: 1.0\n"
        "  rouge_stemming: true               # Porter stemming (rouge-score's default); false as DomainSum\n"
        f"  {RECORD_KEY}:\n"
        f"    name: {json.dumps(req.name)}\n"
        f"    level: {json.dumps(req.level)}                  # its group in domain-stats and reports\n"
        f"    document_field: {json.dumps(source.document_field)}\n"
        f"    summary_field: {json.dumps(source.summary_field)}\n"
        f"    id_field: {json.dumps(source.id_field) if source.id_field else 'null'}\n"
        f"    families: [{', '.join(req.families)}]\n"
        f"    prompt: {prompt}                   # null: DomainSum's prompt; else a text with {{document}}\n"
        "    fewshot_prompt: null           # null: DomainSum's two-shot prompt\n"
    )


def two_shot_yaml(req: NewTask) -> str:
    return (
        f"# {req.name} with two demonstrations drawn from the train split (DomainSum's two-shot prompt).\n"
        f"include: {req.name}.yaml\n"
        f"task: {req.name}_2shot\n"
        "num_fewshot: 2\n"
        "generation_kwargs:\n  until:\n" + _strings(UNTIL[2]) +
        f"  max_gen_toks: {req.max_gen_toks}\n  do_sample: false\n  temperature: 0.0\n"
    )


UTILS = ('"""Harness entry point of this task folder: the YAMLs name ``utils.SuiteTask``."""\n\n'
         "from lm_eval_tasks.harness import task_class\n\nSuiteTask = task_class(__file__)\n")


DVO_NOTE = """ DVO reads a vocabulary built from the train split the
first time the task runs, cached under the vocabulary folder and rebuilt when the train
file changes; the results record its path (`user_vocabulary`)."""


def readme(out: Path) -> str:
    """The folder's README (the harness's task README template) listing every task of every
    domain whose YAML is in ``out``: written again whenever a domain is added, so a
    second domain in the folder is listed beside the first."""
    from lm_eval_tasks.benchmarks.own import spec_from_config, task_configs

    specs = [spec_from_config(cfg, str(path)) for path, cfg in task_configs(out)]
    domains: dict[str, DomainSource] = {}
    tasks, families = [], []
    for spec in specs:
        source = domains.setdefault(spec.subset, spec.source)
        how = ("two demonstrations from the train split, seeded per document" if spec.shots
               else "zero-shot, DomainSum's prompt" + (" (or the one in the YAML)" if source.prompt else ""))
        tasks.append(f"* `{spec.name}`: {how}; metrics {', '.join(spec.families)}")
        families += spec.families
    abstract = "\n".join(
        f"* `{name}`: records from "
        + (f"the hub dataset `{src.hub_path}`" if src.format == "hub" else ", ".join(f"`{p}` ({s})" for s, p in src.files))
        + f"; field `{src.document_field}` is the document and `{src.summary_field}` the reference summary."
        for name, src in domains.items())
    title = next(iter(domains)) if len(domains) == 1 else out.name
    tasks_text = "\n".join(tasks)
    return f"""# {title}

### Paper

Title: your own domain{'s' if len(domains) > 1 else ''}, evaluated with the DomainSum protocol

Abstract:

{abstract}

The prompts are DomainSum's (Yuan & Zhang, Findings of NAACL 2025, Appendix B) unless the
YAML gives its own.

Homepage: none

### Citation

```text
Cite your data here; the protocol: Yuan & Zhang, DomainSum, Findings of NAACL 2025.
```

### Groups, Tags, and Tasks

#### Groups

None.

#### Tags

None.

#### Tasks

{tasks_text}

Metrics are per document, with standard errors (`domsum tasks` and docs/metrics.md name
their keys).{DVO_NOTE if 'dvo' in families else ''}

### Checklist

For adding novel benchmarks/datasets to the library:
* [ ] Is the task an existing benchmark in the literature?
  * [ ] Have you referenced the original paper that introduced the task?
  * [ ] If yes, does the original paper provide a reference implementation? If so, have you checked against the reference implementation and documented how to run such a test?

If other tasks on this dataset are already supported:
* [ ] Is the "Main" variant of this task clearly denoted?
* [ ] Have you provided a short sentence in a README on what each new variant adds / evaluates?
* [ ] Have you noted which, if any, published evaluation setups are matched by this variant?

### Changelog

* v1.0: written by `domsum new-task`.
"""


def _train_notes(req: NewTask, source: DomainSource, records: dict[str, list[dict]]) -> bool:
    """Whether the train split holds enough records for the two-shot task; what a short or
    missing one changes is added to ``req.notes`` (and dvo dropped from ``req.families``
    when there is nothing to build its vocabulary from).

    Why said, not silent: the user asked for a task folder and would otherwise find
    ``NAME_2shot`` missing, or DVO failing before generation, only when running it.
    """
    n = len(records.get("train", ()))
    what = (f"no train split (train.jsonl or train.csv) in {req.data}" if "train" not in source.splits
            else f"{source.where('train')}: {n} train record(s) with a document and a summary")
    enough = n >= MIN_TRAIN
    if not enough:
        req.notes.append(f"{what}: {req.name}_2shot not written (two demonstrations per document need at least "
                         f"{MIN_TRAIN} train records)")
    if n == 0 and "dvo" in req.families:
        req.families = tuple(f for f in req.families if f != "dvo")
        req.notes.append(f"{what}: dvo left out of the families (DVO's domain vocabulary is built from the train "
                         f"split); add a train file and dvo to metadata.domain.families to score it")
    elif not enough and "dvo" in req.families:
        req.notes.append(f"{what}: DVO's domain vocabulary will be built from {n} document(s) only")
    return enough


def harness_task_file(name: str) -> Path | None:
    """The harness YAML that declares ``name`` as a task, group or tag, or None.

    Why a text scan and not the harness's index: ``TaskManager`` parses all 14,000 of
    the harness's YAML files (about 4.5 s on two cores); reading them as bytes and
    matching ``task:``/``group:``/``tag:`` lines takes well under a second. A name the
    harness builds in Python, or lists only as a tag list item, is not seen; a group's
    ``- task: NAME`` entries refer to tasks declared elsewhere and are not matched.
    """
    import importlib.util

    spec = importlib.util.find_spec("lm_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    pattern = re.compile(rb"^\s*(?:task|group|tag)\s*:\s*['\"]?" + re.escape(name.encode()) + rb"['\"]?\s*$",
                         re.MULTILINE)
    for root in spec.submodule_search_locations:
        for path in sorted(Path(root, "tasks").rglob("*.yaml")):
            text = path.read_bytes()
            if name.encode() in text and pattern.search(text):
                return path
    return None


def write_folder(req: NewTask) -> NewTask:
    """Check the request and the data, then write the folder; returns ``req`` with what
    was written and the record counts."""
    from lm_eval_tasks import catalog

    if not NAME_RE.match(req.name):
        raise RecordError(f"task name {req.name!r}: use letters, digits and underscores, starting with a letter")
    if req.name.endswith("_2shot"):
        raise RecordError(f"task name {req.name!r}: the two-shot task gets `_2shot` itself; drop the suffix")
    for name in (req.name, f"{req.name}_2shot"):
        if name in catalog.all_groups() or (name in catalog.all_tasks() and catalog.all_tasks()[name].source is None):
            raise RecordError(f"task name {name!r} is already one of the suite's (`domsum tasks`); choose another")
        if (found := harness_task_file(name)) is not None:
            raise RecordError(f"task name {name!r} is already one of the harness's ({found}); choose another")
    source = _source(req)
    if source.format != "hub":
        records = _read(req, source)
        if not records.get("test"):
            raise RecordError(f"{source.where('test')}: no records with a document and a summary")
        summaries = [r["summary"] for r in records.get("train") or records["test"]]
    else:
        records, summaries = {}, []
    req.max_gen_toks = req.max_gen_toks or default_max_gen_toks(summaries)
    two_shot = source.format == "hub" or _train_notes(req, source, records)
    out = req.out.expanduser().resolve()
    req.out = out
    files = {out / f"{req.name}.yaml": zero_shot_yaml(req, source, req.max_gen_toks), out / "utils.py": UTILS}
    if two_shot:
        files[out / f"{req.name}_2shot.yaml"] = two_shot_yaml(req)
    clash = [p for p in files if p.exists() and p.name != "utils.py"]
    if clash and not req.overwrite:
        raise RecordError(f"{clash[0]} exists; pass --overwrite to replace task {req.name!r}, or choose another "
                          f"name or --out folder")
    if out.is_dir():  # the domains already there must read back: the README lists them with this one
        from lm_eval_tasks.benchmarks.own import spec_from_config, task_configs

        for path, cfg in task_configs(out):
            if path not in files:
                spec_from_config(cfg, str(path))
    if (out / "utils.py").exists() and not req.overwrite:
        del files[out / "utils.py"]  # shared by the folder's tasks: the one there (maybe edited) is kept
    stale = out / f"{req.name}_2shot.yaml"
    if not two_shot and stale.exists():  # only with --overwrite: it would run on the new data without demonstrations
        stale.unlink()
        req.notes.append(f"{stale} removed (it belonged to the task being replaced)")
    out.mkdir(parents=True, exist_ok=True)
    from lm_eval_tasks.outputs import write_atomically

    req.written = list(files)
    for path, text in files.items():
        write_atomically(path, text)
    readme_path = out / "README.md"
    write_atomically(readme_path, readme(out))
    req.written.append(readme_path)
    return req
