"""``domsum change-amplitude``: CCSBench attribute dependency (flip one control, regenerate, compare).

Flags -> :func:`lm_eval_tasks.analysis.change_amplitude.run_change_amplitude`, which
describes the flips, the affected metrics and CA = ``|m_new - m| / |m|``.

    domsum change-amplitude --model hf --model-args pretrained=MODEL \\
        --data-dir ~/ccs_mirror --out ca_out
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from custom_metrics.outputs import claimed_folder
from lm_eval_tasks.analysis.amplitude import ATTRIBUTES
from lm_eval_tasks.analysis.change_amplitude import PAPER_N, AttributeNotSet, HarnessRunError, run_change_amplitude
from lm_eval_tasks.benchmarks.suite import CONTROL_STUDY
from lm_eval_tasks.commands import parse_metadata, with_flags
from lm_eval_tasks.settings import judge_config


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="domsum change-amplitude", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="hf", help="lm_eval model type (default hf)")
    ap.add_argument("--model-args", required=True)
    ap.add_argument("--data-dir", "--data_dir", dest="data_dir",
                    help="mirror root (else $DOMSUM_DATA_DIR, else the hub)")
    ap.add_argument("--subsets", "--subset", dest="subset", default="compositional",
                    choices=CONTROL_STUDY.subsets, help=f"the {CONTROL_STUDY.title} subset (one)")
    ap.add_argument("--attributes", default=",".join(ATTRIBUTES), help=f"controls to flip, comma list (default all: {','.join(ATTRIBUTES)})")
    ap.add_argument("--n", type=int, default=PAPER_N, help=f"test rows sampled (seeded; default {PAPER_N}, the paper's, all where the split holds fewer): the harness generates for them once plus once per attribute ({PAPER_N} x 5 = {PAPER_N * 5:,} generations for the four attributes); --n 50 for a quick look")
    ap.add_argument("--seed", type=int, default=42, help="seed of the row sample (default 42)")
    ap.add_argument("--shots", type=int, default=0, choices=(0, 3))
    ap.add_argument("--metadata", default="{}", help="extra task metadata JSON (judge, budgets)")
    ap.add_argument("--judge", action="store_true", help="also measure focus with the configured judge (a request per generation, re-asks of unparsable replies extra: about 1,500 at the default --n)")
    ap.add_argument("--out", "--out-dir", dest="out", required=True, help="output folder")
    ap.add_argument("--overwrite", action="store_true",
                    help="replace what an earlier run wrote into --out (default: stop and say so)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar (stderr) while judging focus")
    ap.add_argument("lm_eval_args", nargs="*", help="extra lm_eval arguments after --")
    if (args := ap.parse_args(argv)).n < 1:  # its mirror for the harness would hold no records: one line, no usage
        ap.exit(2, f"domsum change-amplitude: error: --n must be >= 1 (test rows sampled), got {args.n}\n")
    attrs = [a for a in args.attributes.split(",") if a]
    bad = [a for a in attrs if a not in ATTRIBUTES]
    if bad:
        ap.error(f"unknown attributes {bad}; known: {ATTRIBUTES}")
    metadata = parse_metadata(args.metadata, "change_amplitude")
    judge = None
    if args.judge:
        judge = judge_config(metadata, progress=False if args.no_progress else None)
        if judge is None:
            print("change_amplitude: no judge configured; focus metric skipped", file=sys.stderr)
    out = Path(args.out)
    try:
        with claimed_folder(out, args.overwrite):
            report = run_change_amplitude(
                out, model=args.model, model_args=args.model_args, subset=args.subset, attributes=attrs,
                n=args.n, seed=args.seed, shots=args.shots, metadata=with_flags(metadata, data_dir=args.data_dir),
                judge=judge, lm_eval_args=args.lm_eval_args)
    except AttributeNotSet as exc:
        ap.error(str(exc))
    except HarnessRunError as exc:
        raise SystemExit(str(exc)) from None
    print(json.dumps(report["change_amplitude"], indent=2))
    print(f"wrote {out / 'change_amplitude.json'}, .csv" + (", .png" if report["png"] else "") + ("" if report["n"] >= args.n else f" ({report['n']} rows: all the test split holds, fewer than --n {args.n})"))
    return 0
