"""``domsum rankings`` run as the installed command: its JSON's numbers against the same
numbers recomputed here from the file's rows, and bad lines answered in one line each."""

from __future__ import annotations

import csv
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, subprocess_env

SYSTEMS = ("Llama2 7b 2-shot", "Llama2 70b 2-shot", "Llama2 7b fine-tuned", "PEGASUS-X fine-tuned")
#: (annotator, document) -> ranks of SYSTEMS (no ties)
STUDY = {("e1", "a1"): (1, 2, 3, 4), ("e2", "a1"): (2, 1, 3, 4), ("e1", "a2"): (1, 3, 2, 4),
         ("e2", "a2"): (1, 2, 4, 3), ("e1", "a3"): (2, 1, 4, 3), ("e2", "a3"): (2, 1, 3, 4),
         ("e1", "a4"): (3, 1, 2, 4), ("e2", "a4"): (1, 2, 3, 4)}


def _domsum(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("domsum")
    return subprocess.run([str(exe), *args], cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                          timeout=300)


def _write(path: Path, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["annotator", "document", "system", "rank"], *rows])
    return path


def test_the_command_computes_what_the_rows_say(tmp_path):
    path = _write(tmp_path / "study.csv", [[a, d, s, r] for (a, d), ranks in STUDY.items()
                                           for s, r in zip(SYSTEMS, ranks)])
    proc = _domsum("rankings", str(path), "--out", str(tmp_path / "out"), "--bootstrap", "200")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "out" / "rankings.json").read_text(encoding="utf-8"))
    assert "# Expert rankings: study.csv" in proc.stdout and "(published)" in proc.stdout

    # top-2 share: the rankings (8) that give the system rank 1 or 2 (no ties here)
    for j, system in enumerate(SYSTEMS):
        expected = sum(ranks[j] <= 2 for ranks in STUDY.values()) / len(STUDY)
        got = next(s for s in result["shares"] if s["system"] == system)
        assert got["share"] == pytest.approx(expected) and got["rankings"] == 8
        lo, hi = got["ci"]
        assert lo <= expected <= hi
        both = sum(all(STUDY[(a, d)][j] <= 2 for a in ("e1", "e2")) for d in ("a1", "a2", "a3", "a4")) / 4
        assert got["all_annotators_share"] == pytest.approx(both)

    # kappa: labels of every document's six pairs, po and pe from their counts
    labels = {a: [] for a in ("e1", "e2")}
    for d in ("a1", "a2", "a3", "a4"):
        for a in labels:
            ranks = dict(zip(SYSTEMS, STUDY[(a, d)]))
            labels[a] += [ranks[x] < ranks[y] for x, y in itertools.combinations(sorted(SYSTEMS), 2)]
    n = len(labels["e1"])
    po = sum(x == y for x, y in zip(labels["e1"], labels["e2"])) / n
    p1, p2 = sum(labels["e1"]) / n, sum(labels["e2"]) / n
    pe = p1 * p2 + (1 - p1) * (1 - p2)
    pair = result["agreement"]["pairs"][0]
    assert pair["items"] == n == 24 and pair["kappa"] == pytest.approx((po - pe) / (1 - pe))

    # Kendall's W per document without ties: 12 S / (m^2 (n^3 - n)), m = 2, n = 4
    for d, got in zip(("a1", "a2", "a3", "a4"), result["kendall_w"]["per_document"]):
        sums = [STUDY[("e1", d)][j] + STUDY[("e2", d)][j] for j in range(4)]
        s = sum((r - 2 * 5 / 2) ** 2 for r in sums)
        assert got["document"] == d and got["w"] == pytest.approx(12 * s / (4 * 60))

    beside = {r["label"]: r for r in result["published"]}
    assert beside["Cohen's kappa"]["published"] == 0.4
    assert beside["Cohen's kappa"]["run_value"] == pytest.approx(pair["kappa"])
    share = beside["Llama2 70b 2-shot: top-2 share, pooled rankings"]
    assert share["published"] == 52 and share["run_value"] == pytest.approx(
        100 * sum(r[1] <= 2 for r in STUDY.values()) / 8)
    assert "4 of 25 test documents" in share["sentence"]
    assert (tmp_path / "out" / "rankings.html").is_file() and (tmp_path / "out" / "shares.csv").is_file()


@pytest.mark.parametrize("rows, message", [
    ([["e1", "a1", "A", "1"], ["e1", "a1", "B", "first"]], "line 3: field 'rank' is not a number: 'first'"),
    ([["e1", "a1", "A", "1"], ["e1", "a1", "A", "2"]], "line 3: field 'system': annotator 'e1' already ranked"),
    ([["e1", "a1", "A", "1"], ["e1", "a1", "B", "2"], ["e2", "a1", "A", "1"]],
     "line 4: field 'system': annotator 'e2' ranked document 'a1' without system(s) 'B'"),
])
def test_bad_lines_are_one_line_errors(tmp_path, rows, message):
    path = _write(tmp_path / "bad.csv", rows)
    proc = _domsum("rankings", str(path), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"rankings: error: {path}, {message}"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()  # nothing left behind
