"""``domsum tasks``: the task catalogue as a table (tasks, then groups).

Why a command: a task name means what :mod:`lm_eval_tasks.catalog` says, and every
other command looks names up there; this shows the table they all read, the way
``lm-eval ls tasks`` shows the harness's. ``--write-yaml`` regenerates the task
folders' YAMLs from the catalogue.
"""

from __future__ import annotations

import argparse
import json

from lm_eval_tasks import catalog
from lm_eval_tasks.commands import add_include_path

COLUMNS = ("task", "benchmark", "subset", "level", "shots", "variant", "families")


def rows(benchmark: str | None = None) -> list[dict[str, str]]:
    """One row per leaf task of ``benchmark`` (all when None), as display strings."""
    return [{"task": t.name, "benchmark": t.benchmark, "subset": t.subset, "level": t.level or "-",
             "shots": str(t.shots), "variant": t.variant or "-", "families": ",".join(t.families)}
            for t in catalog.select(benchmark)]


def table(records: list[dict[str, str]], columns: tuple[str, ...] = COLUMNS) -> str:
    """Left-aligned plain-text columns."""
    widths = {c: max([len(c)] + [len(r[c]) for r in records]) for c in columns}
    lines = ["  ".join(c.ljust(widths[c]) for c in columns).rstrip()]
    lines += ["  ".join(r[c].ljust(widths[c]) for c in columns).rstrip() for r in records]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="domsum tasks", description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", choices=catalog.ALL_BENCHMARKS,
                    help="only this benchmark's tasks and groups (own: your task folders')")
    add_include_path(ap)
    ap.add_argument("--json", action="store_true", help="JSON instead of a table")
    ap.add_argument("--write-yaml", action="store_true",
                    help="regenerate every task folder's YAMLs from the catalogue, then list")
    args = ap.parse_args(argv)
    if args.write_yaml:
        written = catalog.write_yamls()
        print(f"wrote {len(written)} YAML files under {catalog.TASKS_DIR}")
    tasks = rows(args.benchmark)
    groups = [{"group": g.name, "members": ",".join(g.members)}
              for g in catalog.all_groups().values()
              if args.benchmark is None or all(catalog.lookup(t).benchmark == args.benchmark
                                               for t in catalog.expand([g.name]))]
    if args.json:
        print(json.dumps({"tasks": tasks, "groups": groups}, indent=2))
        return 0
    print(table(tasks))
    print()
    print(table(groups, ("group", "members")))
    print(f"\n{len(tasks)} tasks, {len(groups)} groups")
    return 0
