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
``utils.py`` serves all) and the README's generated parts (between marks) are written
again to list both, the user's lines outside them kept; only the same task name again
needs ``--overwrite``. What the user wrote is never replaced: a ``README.md`` that
``new-task`` did not write stays as it is (the suite's goes beside it, as
``README.domsum.md``), and a ``utils.py`` that is not the suite's is an error.

The data are read once here, through the same reader the task uses, so a missing file,
a missing field or a bad line is reported now, with its file and line, not after a
model has loaded.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from lm_eval_tasks.benchmarks.suite import RECORDS
from lm_eval_tasks.marks import Marks
from lm_eval_tasks.benchmarks.own.configs import BENCHMARK, DEFAULT_FAMILIES, RECORD_KEY, DomainSource, RecordError, \
    domain_source

#: a task name: matched whole (``fullmatch``: ``$`` alone would let a trailing line break through)
NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
#: stops of DomainSum's prompts (a run-on generation ends at the next prompt marker)
UNTIL = RECORDS["domainsum"].until
#: tokens per word of English text in the usual LLM tokenizers (Llama, GPT-2: about 1.3)
TOKENS_PER_WORD = 1.3
#: train records the two-shot task needs: two demonstrations, neither the document itself
MIN_TRAIN = 3
#: how the YAML names the data files (``--data-paths``; :func:`data_file_names`)
PATH_STYLES = ("auto", "relative", "absolute")


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
    #: one of :data:`PATH_STYLES`
    data_paths: str = "auto"
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
    from lm_eval_tasks.data.user_files import unreadable

    suffix = {"json": ".jsonl", "csv": ".csv"}
    for fmt in [req.format] if req.format else ["json", "csv"]:
        if not os.path.lexists(folder / f"test{suffix[fmt]}"):
            continue
        files = {}
        for split in ("test", "train"):  # a file that is there but cannot be read is said, not skipped
            path = folder / f"{split}{suffix[fmt]}"
            if os.path.lexists(path):
                if (why := unreadable(path)) is not None:
                    raise RecordError(f"--data {folder}: {path.name} cannot be read: {why}")
                files[split] = path
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


def data_file_names(files: tuple[tuple[str, str], ...], out: Path, style: str = "auto") -> dict[str, str]:
    """Each split's data file (absolute, as read) as the task YAML in ``out`` names it:
    relative to ``out`` or absolute, by ``style`` (:data:`PATH_STYLES`).

    Why relative when the data lie inside the task folder or beside it (under its parent,
    ``auto``): the task reads a relative path from its YAML's own folder, wherever
    ``lm_eval`` runs (:func:`~lm_eval_tasks.benchmarks.own.configs.domain_source`), so the task
    folder, or the folder holding it and its data, can be moved, copied or shared and
    still finds them; an absolute path breaks as soon as they move. Data elsewhere (a
    corpus folder shared by projects) keep their absolute path, which survives moving
    the task folder alone.
    """
    if style not in PATH_STYLES:
        raise RecordError(f"data paths {style!r}: choose one of {', '.join(PATH_STYLES)}")
    relative = style == "relative" or style == "auto" and all(Path(f).is_relative_to(out.parent) for _, f in files)
    return {split: os.path.relpath(f, out) if relative else f for split, f in files}


def zero_shot_yaml(req: NewTask, source: DomainSource, max_gen: int) -> str:
    """The zero-shot task's YAML; ``req.out`` is the (resolved) folder it is written to."""
    if source.format == "hub":
        data = (f"dataset_path: {json.dumps(source.hub_path)}\n"
                + (f"dataset_name: {json.dumps(source.hub_name)}\n" if source.hub_name else "")
                + "dataset_kwargs:\n  data_files: null\n")
    else:
        data = (f"dataset_path: {source.format}        # json (JSON lines) or csv; or a hub dataset id\n"
                "dataset_kwargs:\n  data_files:          # split -> file (relative paths: from this folder)\n"
                + "".join(f"    {split}: {json.dumps(path)}\n"
                        for split, path in data_file_names(source.files, req.out, req.data_paths).items()))
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


def foreign_utils(path: Path) -> str | None:
    """Why the ``utils.py`` already in a task folder cannot serve the YAMLs ``new-task``
    writes, or None when it binds ``SuiteTask`` (the suite's, maybe edited, or an older one).

    Why checked before writing: every YAML names ``class: !function utils.SuiteTask``, and
    a folder holding the user's own ``utils.py`` (a project folder, another harness task's)
    was written to, exit 0, and the task then failed to load with an ``AttributeError``.
    """
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as exc:
        return f"it cannot be read as Python (line {exc.lineno}: {exc.msg})"
    except (OSError, ValueError) as exc:
        return f"it cannot be read ({getattr(exc, 'strerror', None) or exc})"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == "SuiteTask"
                or isinstance(node, ast.alias) and (node.asname or node.name) == "SuiteTask"
                or isinstance(node, ast.ClassDef) and node.name == "SuiteTask"):
            return None
    return "it defines no SuiteTask, the class every task YAML names (`class: !function utils.SuiteTask`)"


DVO_NOTE = """ DVO reads a vocabulary built from the train split the
first time the task runs, cached under the vocabulary folder and rebuilt when the train
file changes; the results record its path (`user_vocabulary`)."""


#: the README ``new-task`` writes when the folder's own ``README.md`` is not one it wrote
SIDE_README = "README.domsum.md"
#: the marks around each part of a README that ``new-task`` writes again when a domain is
#: added (HTML comments: a Markdown viewer shows nothing of them)
_MARKS = Marks("<!-- domsum new-task: begin {name} (written from this folder's task YAMLs when a domain is added; "
               "edit outside these marks) -->", "<!-- domsum new-task: end {name} -->")


def _sections(out: Path) -> dict[str, str]:
    """The generated parts of the folder's README, listing every task of every domain whose
    YAML is in ``out``: ``about`` (title and data) and ``tasks`` (tasks and metrics)."""
    from lm_eval_tasks.benchmarks.own.configs import spec_from_config, task_configs
    from lm_eval_tasks.readmes import metric_table

    domains: dict[str, DomainSource] = {}
    named: dict[str, dict] = {}  # each domain's data files as its YAML names them (maybe relative to it)
    tasks, families, specs = [], [], []
    for path, cfg in task_configs(out):
        spec = spec_from_config(cfg, str(path))
        specs.append(spec)
        source = domains.setdefault(spec.subset, spec.source)
        named.setdefault(spec.subset, (cfg.get("dataset_kwargs") or {}).get("data_files") or {})
        how = ("two demonstrations from the train split, seeded per document" if spec.shots
               else "zero-shot, DomainSum's prompt" + (" (or the one in the YAML)" if source.prompt else ""))
        tasks.append(f"* `{spec.name}`: {how}; metrics {', '.join(spec.families)}")
        families += spec.families
    abstract = "\n".join(
        f"* `{name}`: records from "
        + (f"the hub dataset `{src.hub_path}`" if src.format == "hub"
           else ", ".join(f"`{p}` ({s})" for s, p in named[name].items()))
        + f"; field `{src.document_field}` is the document and `{src.summary_field}` the reference summary."
        for name, src in domains.items())
    title = next(iter(domains)) if len(domains) == 1 else out.name
    about = f"""# {title}

### Paper

Title: your own domain{'s' if len(domains) > 1 else ''}, evaluated with the DomainSum protocol

Abstract:

{abstract}

The prompts are DomainSum's (Yuan & Zhang, Findings of NAACL 2025, Appendix B) unless the
YAML gives its own.
"""
    listed = "\n".join(tasks)
    dvo = f"\n{DVO_NOTE.lstrip()}\n" if "dvo" in families else ""
    metrics = f"""{listed}

Metrics are per document, with standard errors (docs/metrics.md defines each key):

{metric_table(specs)}
{dvo}"""
    return {"about": about, "tasks": metrics}


def readme(out: Path, parts: dict[str, str] | None = None) -> str:
    """The folder's README (the harness's task README template) listing every task of every
    domain whose YAML is in ``out``; its generated parts (``parts``: :func:`_sections`)
    between marks (:func:`write_readme`)."""
    parts = parts or _sections(out)
    return f"""{_MARKS.wrap("about", parts["about"])}

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

{_MARKS.wrap("tasks", parts["tasks"])}

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


def write_readme(out: Path, notes: list[str]) -> Path | None:
    """Write the folder's README, never replacing what its user wrote; returns the file
    written (None: none could be) and adds a line to ``notes`` when it is not ``README.md``.

    Why never replaced whole: the README is where the user cites their data
    (docs/own_domain.md), and ``--out`` may be a project folder with a README of its
    own. A README ``new-task`` wrote holds its generated parts between marks: when a
    domain joins the folder only those parts are written again, and every line outside
    them stays as the user left it. A ``README.md`` without the marks is not the suite's:
    it is left as it is, and the suite's README goes to :data:`SIDE_README` beside it.
    """
    from lm_eval_tasks.outputs import write_atomically

    fresh = _sections(out)
    for path in (out / "README.md", out / SIDE_README):
        if not os.path.lexists(path):
            write_atomically(path, readme(out, fresh))
        else:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):  # not text new-task wrote: left as it is
                continue
            if set(_MARKS.parts(text)) != set(fresh):
                continue  # not one new-task wrote (or its marks were removed): left as it is
            write_atomically(path, _MARKS.replace(text, fresh))
        if path.name != "README.md":
            notes.append(f"{out / 'README.md'} is not one `domsum new-task` wrote (it has no generated "
                         f"section): left as it is; the tasks' README is {path}")
        return path
    notes.append(f"{out / 'README.md'} and {out / SIDE_README} are not ones `domsum new-task` wrote: both left "
                 f"as they are, no README written")
    return None


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
    was written and the record counts. (A name the suite holds is refused by
    :func:`lm_eval_tasks.catalog.check_new_task`, which ``domsum new-task`` calls first.)"""
    from lm_eval_tasks.benchmarks.own.configs import check_families

    check_families(req.families, f"task {req.name!r}")
    if not NAME_RE.fullmatch(req.name):
        raise RecordError(f"task name {req.name!r}: use letters, digits and underscores, starting with a letter")
    if req.name.endswith("_2shot"):
        raise RecordError(f"task name {req.name!r}: the two-shot task gets `_2shot` itself; drop the suffix")
    for name in (req.name, f"{req.name}_2shot"):
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
    utils = out / "utils.py"
    if os.path.lexists(utils) and (why := foreign_utils(utils)) is not None:  # never replaced: it is the user's
        raise RecordError(f"{utils} is not the suite's: {why}; choose another --out folder, or add "
                          f"`from lm_eval_tasks.harness import task_class; SuiteTask = task_class(__file__)` to it")
    if out.is_dir():  # the domains already there must read back: the README lists them with this one
        from lm_eval_tasks.benchmarks.own.configs import spec_from_config, task_configs

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
    if (readme_path := write_readme(out, req.notes)) is not None:
        req.written.append(readme_path)
    return req
