"""Each benchmark's task README follows the harness's task README template and agrees
with the task catalogue.

Why: users read ``lm_eval_tasks/<benchmark>/README.md`` for the task and group names,
the citation and what changed between task versions; a name the catalogue no longer
has, or a version the YAMLs do not carry, sends them wrong. The template is
lm-evaluation-harness's ``templates/new_yaml_task/README.md``.
"""

from __future__ import annotations

import re

import pytest

from lm_eval_tasks import catalog

#: the template's headings, in order
SECTIONS = ("### Paper", "### Citation", "### Groups, Tags, and Tasks", "#### Groups", "#### Tags", "#### Tasks",
            "### Checklist", "### Changelog")
#: the template's checklist lines, each with a ``[ ]`` or ``[x]`` box
CHECKLIST = (
    "For adding novel benchmarks/datasets to the library:",
    "* [?] Is the task an existing benchmark in the literature?",
    "  * [?] Have you referenced the original paper that introduced the task?",
    "  * [?] If yes, does the original paper provide a reference implementation? If so, have you checked "
    "against the reference implementation and documented how to run such a test?",
    "If other tasks on this dataset are already supported:",
    "* [?] Is the \"Main\" variant of this task clearly denoted?",
    "* [?] Have you provided a short sentence in a README on what each new variant adds / evaluates?",
    "* [?] Have you noted which, if any, published evaluation setups are matched by this variant?",
)
ITEM = re.compile(r"^\* `([a-z0-9_]+)`")
ENTRY = re.compile(r"^\* v(\d+(?:\.\d+)?) \((\d{4}-\d{2}-\d{2})\): \S")


def _lines(benchmark: str) -> list[str]:
    """The README's lines outside fenced code blocks (a ``#`` in a shell example is no heading)."""
    out, fenced = [], False
    for line in (catalog.TASKS_DIR / benchmark / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def _section(lines: list[str], heading: str) -> list[str]:
    """The lines under ``heading`` up to the next heading."""
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start:end]


def _items(lines: list[str], heading: str) -> list[str]:
    return [m.group(1) for line in _section(lines, heading) if (m := ITEM.match(line))]


@pytest.mark.parametrize("benchmark", catalog.BENCHMARKS)
def test_readme_has_the_template_sections_in_order(benchmark):
    lines = _lines(benchmark)
    assert lines[0].startswith("# "), "the first line is the benchmark's title"
    where = [lines.index(h) if h in lines else -1 for h in SECTIONS]
    assert -1 not in where, f"missing: {[h for h, i in zip(SECTIONS, where) if i < 0]}"
    assert where == sorted(where), "the template's sections are out of order"
    paper = _section(lines, "### Paper")
    for field in ("Title: ", "Abstract: ", "Homepage: "):
        assert any(line.startswith(field) for line in paper), f"### Paper has no {field.strip()}"


@pytest.mark.parametrize("benchmark", catalog.BENCHMARKS)
def test_citation_is_a_bibtex_entry_with_title_and_authors(benchmark):
    text = (catalog.TASKS_DIR / benchmark / "README.md").read_text(encoding="utf-8")
    block = re.search(r"### Citation\s*```bibtex\n(.*?)```", text, re.S)
    assert block, "### Citation holds a ```bibtex block"
    entry = block.group(1)
    assert re.match(r"@(inproceedings|article|misc)\{[\w-]+,", entry)
    assert re.search(r"^\s*title\s*=", entry, re.M) and re.search(r"^\s*author\s*=", entry, re.M)
    assert entry.count("{") == entry.count("}"), "unbalanced braces"


@pytest.mark.parametrize("benchmark", catalog.BENCHMARKS)
def test_checklist_is_the_templates(benchmark):
    got = [line for line in _section(_lines(benchmark), "### Checklist") if line.strip()]
    pattern = [re.escape(line).replace(r"\[\?\]", r"\[[ x]\]") for line in CHECKLIST]
    listed = [line for line in got if line.startswith(("For adding", "If other", "* [", "  * ["))]
    assert len(listed) == len(pattern) and all(re.fullmatch(p, line) for p, line in zip(pattern, listed)), listed


@pytest.mark.parametrize("benchmark", catalog.BENCHMARKS)
def test_tasks_and_groups_are_the_catalogues(benchmark):
    lines = _lines(benchmark)
    tasks = [t.name for t in catalog.select(benchmark)]
    groups = [g.name for g in catalog.all_groups().values()
              if all(catalog.lookup(t).benchmark == benchmark for t in catalog.expand([g.name]))]
    listed_tasks, listed_groups = _items(lines, "#### Tasks"), _items(lines, "#### Groups")
    assert sorted(listed_tasks) == sorted(tasks) and len(set(listed_tasks)) == len(listed_tasks)
    assert sorted(listed_groups) == sorted(groups) and len(set(listed_groups)) == len(listed_groups)


@pytest.mark.parametrize("benchmark", catalog.BENCHMARKS)
def test_changelog_ends_at_the_current_task_version(benchmark):
    entries = [ENTRY.match(line) for line in _section(_lines(benchmark), "### Changelog") if line.startswith("* ")]
    assert entries and all(entries), "each changelog entry reads `* vX.Y (YYYY-MM-DD): what changed`"
    versions = [float(m.group(1)) for m in entries]
    assert versions[0] == catalog.record(benchmark).version, "the newest entry is the YAMLs' metadata.version"
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    assert f"version: {catalog.record(benchmark).version}" in catalog.template_yaml(benchmark)
