"""Each benchmark's task README follows the harness's task README template and agrees
with the task catalogue.

Why: users read ``lm_eval_tasks/<benchmark>/README.md`` for the task and group names,
the citation and what changed between task versions; a name the catalogue no longer
has, or a version the YAMLs do not carry, sends them wrong. The template is
lm-evaluation-harness's ``templates/new_yaml_task/README.md``. Its subset table and metric
list are generated from the records (:mod:`lm_eval_tasks.readmes`).
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


# ------------------------------------------------------------------ generated sections


def test_the_subset_and_metric_lists_are_generated_and_a_stale_one_is_rewritten(tmp_path):
    """Each README's subset table and metric list are generated sections (tests/unit/test_docs.py
    checks that they equal the records); one that lost a row, as a hand-kept list did when a
    family or subset was added, reads as stale and ``--write`` restores it, leaving the prose
    around the markers as written."""
    from lm_eval_tasks import reference

    for bench in catalog.BENCHMARKS:
        assert {f"{bench}-subsets", f"{bench}-metrics"} <= set(reference.SECTIONS)
    page = tmp_path / "lm_eval_tasks" / "medqsum" / "README.md"
    page.parent.mkdir(parents=True)
    current = (catalog.TASKS_DIR / "medqsum" / "README.md").read_text(encoding="utf-8")
    stale = current.replace("| `cider` | CIDEr-D |", "| `cider_gone` | CIDEr-D |").replace("prose", "prose!")
    page.write_text(stale + "written by hand\n", encoding="utf-8")
    assert reference.section_text("medqsum-metrics", tmp_path) != reference.SECTIONS["medqsum-metrics"][1]()
    assert reference.write_section("medqsum-metrics", tmp_path)
    assert page.read_text(encoding="utf-8") == current.replace("prose", "prose!") + "written by hand\n"
    assert not reference.write_section("medqsum-metrics", tmp_path)


def test_the_metric_list_says_which_tasks_report_each_family_and_which_direction_is_better():
    from lm_eval_tasks.readmes import metric_table, reported_by

    ccs, adapt = catalog.select("ccsbench"), catalog.select("adapteval")
    assert reported_by(ccs, "rouge") == "every task"
    assert reported_by(ccs, "ccs_length") == "every task of subsets `length`, `compositional`"
    assert reported_by(adapt, "judge") == "`_judged` tasks" and reported_by(adapt, "fm") == "`_fm` tasks"
    assert reported_by(catalog.select("domainsum", level="genre", shots=2)[:2] + catalog.select(
        "domainsum", level="style", shots=0)[:1], "rouge") == "every task"
    rows = {line.split(" | ")[0].strip("| `"): line.split(" | ") for line in metric_table(ccs).splitlines()[2:]}
    assert rows["fkgl_normal"][3] == "neither" and rows["fkgl_high"][3] == "lower" and rows["delta_fkgl"][3] == "higher"
    assert len(rows) == len({k for t in ccs for k in catalog.metric_keys(t)})


def test_reported_by_names_the_tasks_when_no_suffix_or_subset_describes_them():
    from lm_eval_tasks.readmes import reported_by

    # FM on the two _fm tasks and on one two-shot task: no suffix, subset or both describe them
    mixed = [t if t.name != "adapteval_pubmed_2shot" else catalog.TaskSpec(
        t.name, t.benchmark, t.subset, t.shots, t.variant, (*t.families, "fm"), t.max_gen_toks, t.until, t.level)
        for t in catalog.select("adapteval")]
    assert reported_by(mixed, "fm") == "`adapteval_pubmed_2shot`, `adapteval_arxiv_fm`, `adapteval_pubmed_fm`"
