"""The DomainSum authors' release of their sampled splits, read for the mirror (``domsum prepare-data --release``).

The release holds JSON lists of ``{"document", "summary"}``, file names like
``cnndm_test_sampled_500.json``, ``fox_train_sampled_10000.json``,
``cnndm_train_sampled_20.json`` (the 20-instance demonstration pool, split
``train_pool20``). Style files use ``washington`` for WaPo; topic files are ``topic1`` ..
``topic5``, mapped in order to the topic level's domains (``topic_order`` changes the
mapping).

Why here and not beside the mirror's writer: the file names, the aliases and the levels
a release must cover are DomainSum's facts; the writer (:mod:`lm_eval_tasks.preparation.mirror`)
takes what :func:`read_release` returns from the record (:attr:`Benchmark.release
<lm_eval_tasks.benchmarks.record.Benchmark.release>`) and knows no benchmark.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from lm_eval_tasks.benchmarks.domainsum.record import RECORD
from lm_eval_tasks.benchmarks.record import Release
from lm_eval_tasks.data.records import DataError, validate_record

RELEASE_RE = re.compile(
    r"^(?P<domain>[A-Za-z0-9]+)_(?P<split>train|test|valid|validation|val|dev)_sampled(?:_(?P<n>\d+))?\.json$"
)
SPLIT_NAMES = {"train": "train", "test": "test", "valid": "validation", "validation": "validation",
               "val": "validation", "dev": "validation"}
DOMAIN_ALIASES = {"washington": "wapo", "washingtonpost": "wapo", "nydailynews": "nydaily"}
DEFAULT_TOPIC_ORDER = RECORD.levels["topic"]
POOL_SIZE = 20
#: release split -> the file name pattern it comes from
RELEASE_FILES = {"test": "{d}_test_sampled_*.json", "validation": "{d}_valid_sampled_*.json",
                 "train": "{d}_train_sampled_*.json", "train_pool20": "{d}_train_sampled_20.json"}


def release_target(name: str, topic_order: tuple[str, ...]) -> tuple[str, str] | None:
    """(domain, split) for a release file name, or None if it is not one."""
    m = RELEASE_RE.match(name)
    if not m:
        return None
    domain = m["domain"].lower()
    domain = DOMAIN_ALIASES.get(domain, domain)
    t = re.fullmatch(r"topic(\d)", domain)
    if t:
        k = int(t[1]) - 1
        if not 0 <= k < len(topic_order):
            raise DataError(f"{name}: no topic name for {domain} in --topic-order {topic_order}")
        domain = topic_order[k]
    split = SPLIT_NAMES[m["split"]]
    if split == "train" and m["n"] is not None and int(m["n"]) == POOL_SIZE:
        split = "train_pool20"
    return domain, split


def read_release(src: Path, topic_order: tuple[str, ...]) -> dict[tuple[str, str], list[dict]]:
    """Every recognised release file under ``src``, read and checked: ``(domain, split) -> records``.

    Everything is read and checked before the caller writes anything: two files that map
    to one split, a missing file, a bad record stop the conversion with the mirror untouched.
    """
    known = set(RECORD.all_subsets())
    files = sorted(src.rglob("*.json"))
    misnamed = [f for f in files if release_target(f.name, topic_order) is None]
    if misnamed:
        raise DataError(f"{len(misnamed)} file(s) under {src} are not named like the release "
                        f"(<domain>_<train|valid|test>_sampled[_N].json): "
                        + ", ".join(str(f) for f in misnamed[:10]))
    found: dict[str, set[str]] = {}
    sources: dict[tuple[str, str], Path] = {}
    for f in files:
        domain, split = release_target(f.name, topic_order)
        if domain in known and (domain, split) in sources:
            raise DataError(f"{sources[(domain, split)]} and {f} both map to the {domain} {split} split; "
                            f"keep one of them under {src}")
        sources[(domain, split)] = f
    planned: dict[tuple[str, str], list[dict]] = {}
    for f in files:
        domain, split = release_target(f.name, topic_order)
        if domain not in known:
            print(f"skip {f}: unknown domain {domain!r}", file=sys.stderr)
            continue
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DataError(f"{f}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
                            f"the file may be truncated: download it again") from None
        except UnicodeDecodeError as exc:
            raise DataError(f"{f}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
        found.setdefault(domain, set()).add(split)
        if not isinstance(data, list):
            raise DataError(f"{f}: expected a JSON list of objects")
        recs = []
        for i, rec in enumerate(data):
            validate_record(rec, ("document", "summary"), f"{f}, item {i}")
            recs.append({"document": rec["document"], "summary": rec["summary"]})
        planned[(domain, split)] = recs
    if not planned:
        raise DataError(f"no {RECORD.title} release files (like cnndm_test_sampled_500.json) under {src}")
    missing = missing_release_files(found, topic_order)
    if missing:
        raise DataError(f"the release under {src} is incomplete; missing: " + "; ".join(missing)
                        + " (nothing was written; add the missing files and run again)")
    return planned


def missing_release_files(found: dict[str, set[str]], topic_order: tuple[str, ...]) -> list[str]:
    """Expected release files absent for each level that has at least one domain present.

    Why: a release copied in part (a failed download, a renamed file) would otherwise
    give a mirror that silently lacks a domain or a split until a task asks for it.
    """
    missing = []
    for level, domains in RECORD.levels.items():
        if not any(d in found for d in domains):
            continue
        for d in domains:
            name = (f"topic{topic_order.index(d) + 1}" if d in topic_order
                    else {v: k for k, v in DOMAIN_ALIASES.items()}.get(d, d))
            for split, pattern in RELEASE_FILES.items():
                if split not in found.get(d, set()):
                    missing.append(f"{level}/{d}: {pattern.format(d=name)}")
    return missing


#: the release as the record holds it
RELEASE = Release(read=read_release, topic_order=DEFAULT_TOPIC_ORDER)

__all__ = ["DEFAULT_TOPIC_ORDER", "RELEASE", "missing_release_files", "read_release", "release_target"]
