"""The generated parts of ``docs/`` (the settings table, the metric reference and the CLI
reference) and of the task READMEs (their subset tables and metric lists, :mod:`lm_eval_tasks.readmes`).

Why generated: each of these facts is declared once in code (a :class:`~lm_eval_tasks.settings.Setting`
row, a metric family record in :mod:`custom_metrics.registry`, an argparse parser), and a page
copied by hand drifts from it. Each docs page holds its generated part between two markers::

    <!-- generated: NAME (python -m lm_eval_tasks.reference --write) -->
    ...
    <!-- end generated: NAME -->

``python -m lm_eval_tasks.reference --write`` rewrites every marked part from the code;
without ``--write`` it only checks, and exits 1 naming the stale pages
(``tests/unit/test_docs.py`` runs the same check). The pages live in the checkout, not in the
installed package, so this runs from the repository root.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from lm_eval_tasks import readmes
from lm_eval_tasks.marks import Marks

if TYPE_CHECKING:
    from custom_metrics.registry import Family

ROOT = Path(__file__).resolve().parents[1]
#: width of the generated ``--help`` texts, whatever the terminal
HELP_COLUMNS = "100"


# ------------------------------------------------------------------ settings


def render_settings() -> str:
    """The settings table, one row per :data:`lm_eval_tasks.settings.SETTINGS` row."""
    from lm_eval_tasks import settings

    return settings.markdown_table()


# ------------------------------------------------------------------ metrics

#: optional per-key record fields shown when the registry's ``Key`` has them
_OPTIONAL_KEY_FIELDS = (("display_name", "display name"), ("unit", "unit"), ("scale", "scale"))


def _cell(value: object) -> str:
    text = " ".join(str(value).split())
    return text.replace("|", "\\|") if text else "–"


def _code_list(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{i}`" for i in items) if items else "–"


def _settings_text(fam: Family) -> str:
    """The settings a family reads: its own, then the judge's as one link (the same table for
    every judged family, :data:`custom_metrics.judge.config.SETTINGS`)."""
    own = [f"`{k}`" for k in fam.settings]
    if "judge" in fam.needs:
        own.append("the judge's (`judge_*`, [settings](settings.md))")
    return ", ".join(own) or "–"


def render_metrics() -> str:
    """One section per metric family of :mod:`custom_metrics.registry`, with a row per key.

    Reads only the record fields (name, description, source, needs, settings, options; per key:
    direction, aggregation, description, plus any of :data:`_OPTIONAL_KEY_FIELDS` the key
    record declares), so a reshaped record needs a change here and nowhere else.
    """
    from custom_metrics import registry

    out: list[str] = []
    for fam in registry.all_families():
        key_fields = {f.name for f in dataclasses.fields(fam.keys[0])} if fam.keys else set()
        extra = [(f, title) for f, title in _OPTIONAL_KEY_FIELDS if f in key_fields]
        out += [f"### `{fam.name}`", "", _cell(fam.description), "",
                f"Source: {_cell(fam.source)}; needs: {', '.join(fam.needs) or 'nothing'}; "
                f"settings: {_settings_text(fam)}" + (f"; options: {_code_list(fam.options)}" if fam.options else "")
                + ".", ""]
        head = ["key", *(t for _, t in extra), "better", "aggregation", "meaning"]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for k in fam.keys:
            cells = [f"`{k.name}`", *(_cell(getattr(k, f) or "") for f, _ in extra),
                     k.better, k.aggregation, _cell(k.description)]
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip("\n")


# ------------------------------------------------------------------ command line


@contextlib.contextmanager
def _plain_environment() -> Iterator[None]:
    """A fixed help width and no ``DOMSUM_*`` variables, so the help reads alike everywhere."""
    saved = dict(os.environ)
    for name in [n for n in os.environ if n.startswith("DOMSUM_")]:
        del os.environ[name]
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _help_of(main: Callable[[list[str]], object]) -> str:
    """What ``main(["--help"])`` prints."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            main(["--help"])
        except SystemExit:
            pass
    return buf.getvalue().rstrip()


def render_cli() -> str:
    """``--help`` of ``domsum``, of each subcommand (``run`` is lm_eval's own and is left
    out), and of ``python -m finetune.merge`` and ``python -m finetune.combine``."""
    from lm_eval_tasks import commands

    out: list[str] = []
    with _plain_environment():
        top = io.StringIO()
        commands.build_parser().print_help(top)
        out += ["### `domsum`", "", "```text", top.getvalue().rstrip(), "```", ""]
        pages = [(f"domsum {name}", module) for name, (module, _) in commands.COMMANDS.items() if name != "run"]
        for title, module in [*pages, ("python -m finetune.merge", "finetune.merge"),
                              ("python -m finetune.combine", "finetune.combine")]:
            text = _help_of(importlib.import_module(module).main)
            out += [f"### `{title}`", "", "```text", text, "```", ""]
    return "\n".join(out).rstrip("\n")


# ------------------------------------------------------------------ the pages

#: section name -> (page, renderer)
SECTIONS: dict[str, tuple[str, Callable[[], str]]] = {
    "settings": ("docs/settings.md", render_settings),
    "metrics": ("docs/metrics.md", render_metrics),
    "cli": ("docs/cli.md", render_cli),
    **readmes.sections(),
}


#: the markers around every generated section
MARKS = Marks("<!-- generated: {name} (python -m lm_eval_tasks.reference --write) -->",
              "<!-- end generated: {name} -->")


def section_text(name: str, root: Path = ROOT) -> str:
    """The text between section ``name``'s markers on its page (without the newline before the end marker)."""
    page, _ = SECTIONS[name]
    match = MARKS.pattern(name).search((root / page).read_text(encoding="utf-8"))
    if match is None:
        raise ValueError(f"{page} has no generated section {name!r} (markers missing)")
    return match.group("body").removesuffix("\n")


def write_section(name: str, root: Path = ROOT) -> bool:
    """Rewrite section ``name`` from the code; True when the page changed."""
    page, render = SECTIONS[name]
    path = root / page
    old = path.read_text(encoding="utf-8")
    section_text(name, root)  # markers present
    new = MARKS.replace(old, {name: render() + "\n"})
    if new != old:
        path.write_text(new, encoding="utf-8")
    return new != old


def stale_sections(root: Path = ROOT) -> list[str]:
    """Names of the sections whose page differs from the code."""
    return [name for name, (_, render) in SECTIONS.items() if section_text(name, root) != render()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m lm_eval_tasks.reference",
                                 description="Check (default) or rewrite the generated parts of docs/ and "
                                             "of the task READMEs.")
    ap.add_argument("--write", action="store_true", help="rewrite the stale parts from the code")
    args = ap.parse_args(argv)
    if args.write:
        for name in SECTIONS:
            if write_section(name):
                print(f"rewrote {SECTIONS[name][0]} ({name})")
        return 0
    stale = stale_sections()
    for name in stale:
        print(f"{SECTIONS[name][0]}: section {name!r} is stale; run python -m lm_eval_tasks.reference --write",
              file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
