"""The test suite's own layout: tests live by kind, and ``tests/unit`` stays fast.

``tests/unit`` holds tests that need no model, no subprocess and no server, so that it runs
in seconds and a change to a formula or a reader is checked at once. A test that builds or
loads a model, runs the ``lm_eval`` CLI, starts a process or a judge server belongs in
``tests/integration`` (or ``tests/real_model`` for SmolLM2). This file keeps the split true
by reading the unit files' code: a heavy fixture or call moved into one fails here by name.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
KINDS = ("unit", "integration", "real_model")

#: fixtures, builders and calls that make a test an integration test
HEAVY_NAMES = frozenset({
    "tiny_causal_lm", "tiny_seq2seq_lm", "tiny_mlm", "minilm_path", "minilm_dir",
    "smollm2_checkpoint", "smollm2_gguf", "smollm2_server", "run_lm_eval", "sigint_default",
    "subprocess", "Popen", "StubJudgeServer", "running_server", "stub_config",
    "build_causal_lm", "build_seq2seq_lm", "build_tiny_mlm", "demo_model", "train_tokenizer",
    "AutoModel", "AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModelForMaskedLM",
    "get_peft_model", "BERTScorer",
})
#: helper modules that exist to run models or processes
HEAVY_HELPERS = frozenset({"dp_lm", "tiny_mlm", "real_models"})
#: what a unit test may take from the judge-server helper: the environment cleaner, not the server
JUDGE_SERVER_LIGHT = frozenset({"clear_judge_env", "JUDGE_ENV"})


def _heavy_uses(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in HEAVY_NAMES:
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in HEAVY_NAMES:
            found.add(node.attr)
        elif isinstance(node, ast.arg) and node.arg in HEAVY_NAMES:
            found.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [a.name for a in node.names]
            found.update(m for m in modules if m.split(".")[0] in ("subprocess", "multiprocessing"))
    return found


def _helper_imports(tree: ast.AST) -> dict[str, set[str]]:
    """``{helper module: names taken from it}`` for ``from helpers(.m) import ...``."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "helpers":
            for a in node.names:
                out.setdefault(a.name, set())
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers."):
            out.setdefault(node.module.split(".")[1], set()).update(a.name for a in node.names)
    return out


def _offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [f"uses {name}" for name in sorted(_heavy_uses(tree))]
    for module, names in sorted(_helper_imports(tree).items()):
        if module in HEAVY_HELPERS:
            bad.append(f"imports helpers.{module}")
        elif module == "judge_server":
            bad += [f"takes {n} from helpers.judge_server" for n in sorted(names - JUDGE_SERVER_LIGHT)]
        else:
            helper = ast.parse((TESTS / "helpers" / f"{module}.py").read_text(encoding="utf-8"))
            bad += [f"uses {n} through helpers.{module}" for n in sorted(_heavy_uses(helper))]
    return bad


def test_every_test_file_sits_in_a_kind_folder():
    assert not sorted(p.name for p in TESTS.glob("test_*.py")), "tests/ root keeps only conftest.py"
    stray = [str(p.relative_to(TESTS)) for p in TESTS.rglob("test_*.py")
             if p.relative_to(TESTS).parts[0] not in KINDS]
    assert not stray, stray


def test_every_test_file_has_its_own_name():
    """pytest imports test modules by file name (no packages under tests/): two files of one
    name in two kind folders stop the whole run at collection."""
    from collections import Counter

    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert not sorted(n for n, k in names.items() if k > 1)


def test_unit_tests_load_no_model_and_start_no_process_or_server():
    offenders = {p.name: bad for p in sorted((TESTS / "unit").glob("*.py")) if (bad := _offences(p))}
    assert not offenders, ("move these tests to tests/integration: " + repr(offenders))


def test_the_guard_sees_a_heavy_fixture_a_call_and_a_server(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text("import subprocess\n"
                      "from helpers.judge_server import StubJudgeServer, clear_judge_env\n"
                      "def test_x(tiny_causal_lm):\n"
                      "    demo.demo_model(tiny_causal_lm)\n", encoding="utf-8")
    assert _offences(sample) == ["uses demo_model", "uses subprocess", "uses tiny_causal_lm",
                                 "takes StubJudgeServer from helpers.judge_server"]
