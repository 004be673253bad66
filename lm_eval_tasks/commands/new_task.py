"""``domsum new-task``: a folder of plain harness YAML that evaluates your own domain.

Flags -> :func:`lm_eval_tasks.benchmarks.own.folder.write_folder`; the walkthrough is
``docs/own_domain.md``.

    domsum new-task legal --data ~/legal_data --out ~/my_tasks/legal
    lm_eval --model hf --model_args pretrained=MODEL --include_path ~/my_tasks/legal --tasks legal,legal_2shot
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from custom_metrics.errors import SuiteError
from lm_eval_tasks.benchmarks.own.configs import DEFAULT_FAMILIES
from lm_eval_tasks.benchmarks.own.folder import PATH_STYLES, NewTask, write_folder
from lm_eval_tasks.catalog import check_new_task


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="domsum new-task",
        description="Write a folder of harness task YAML (NAME and NAME_2shot) that evaluates summaries of "
                    "your own data with DomainSum's prompts and the suite's metrics.")
    ap.add_argument("name", help="the task name (letters, digits, underscores)")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", type=Path,
                     help="a folder holding test.jsonl and train.jsonl (or test.csv and train.csv)")
    src.add_argument("--hub", help="a hub dataset id with test and train splits instead of files")
    ap.add_argument("--hub-config", "--hub_config", dest="hub_config", help="the hub dataset's configuration")
    ap.add_argument("--format", choices=("json", "csv"), help="file format (default: whichever test file exists)")
    ap.add_argument("--out", type=Path, help="the task folder to write (default: ./NAME)")
    ap.add_argument("--document-field", "--document_field", dest="document_field", default="document",
                    help="the field holding the document")
    ap.add_argument("--summary-field", "--summary_field", dest="summary_field", default="summary",
                    help="the field holding the reference summary")
    ap.add_argument("--id-field", "--id_field", dest="id_field", help="a field with a unique id per record")
    ap.add_argument("--level", default="own", help="the domain's group in domain-stats and reports")
    ap.add_argument("--families", default=",".join(DEFAULT_FAMILIES),
                    help="comma-separated metric families")
    ap.add_argument("--judge", action="store_true", help="add the LLM-judge family (needs a judge endpoint)")
    ap.add_argument("--prompt", help="a zero-shot prompt with {document} instead of DomainSum's")
    ap.add_argument("--max-gen-toks", "--max_gen_toks", dest="max_gen_toks", type=int,
                    help="generation budget (default: about twice the mean reference length in tokens)")
    ap.add_argument("--data-paths", "--data_paths", dest="data_paths", choices=PATH_STYLES, default="auto",
                    help="how the YAML names the data files: relative to the task folder (moves with it), "
                         "absolute, or auto: relative when they lie inside or beside the task folder")
    ap.add_argument("--overwrite", action="store_true", help="replace this task's YAMLs (not your README, utils.py)")
    args = ap.parse_args(argv)
    if args.max_gen_toks is not None and args.max_gen_toks < 1:
        ap.error("--max-gen-toks must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    families = tuple(f.strip() for f in args.families.split(",") if f.strip()) + (("judge",) if args.judge else ())
    req = NewTask(name=args.name, out=args.out or Path(args.name), data=args.data, hub=args.hub,
                  hub_config=args.hub_config, format=args.format, document_field=args.document_field,
                  summary_field=args.summary_field, id_field=args.id_field, level=args.level,
                  families=tuple(dict.fromkeys(families)), prompt=args.prompt, max_gen_toks=args.max_gen_toks,
                  overwrite=args.overwrite, data_paths=args.data_paths)
    try:
        check_new_task(req.name)
        done = write_folder(req)
    except SuiteError as exc:
        print(f"domsum new-task: error: {exc}", file=sys.stderr)
        return 2
    for note in done.notes:
        print(f"domsum new-task: note: {note}", file=sys.stderr)
    counts = ", ".join(f"{n} {s}" for s, n in done.counts.items())
    print(f"wrote {len(done.written)} files to {done.out}" + (f" ({counts} records)" if counts else ""))
    for path in done.written:
        print(f"  {path.name}")
    tasks = ",".join(p.stem for p in done.written if p.suffix == ".yaml")
    print(f"run it:\n  lm_eval --model hf --model_args pretrained=MODEL --include_path {done.out} "
          f"--tasks {tasks} --log_samples --output_path out/")
    return 0
