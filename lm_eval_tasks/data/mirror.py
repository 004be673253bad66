"""Building the local data mirror ``DIR/<benchmark>/<subset>/<split>.jsonl`` (``domsum prepare-data``).

Two sources:

* the DomainSum authors' released sampled splits (:func:`convert_release`): JSON lists of
  ``{"document", "summary"}``, file names like ``cnndm_test_sampled_500.json``,
  ``fox_train_sampled_10000.json``, ``cnndm_train_sampled_20.json`` (the 20-instance
  demonstration pool, written as split ``train_pool20``). Style files use
  ``washington`` for WaPo; topic files are ``topic1`` .. ``topic5``, mapped in order
  to soccer, crime, family, media, law (``topic_order`` changes the mapping).
* the Hugging Face hub (:func:`from_hub`), with the paper's seeded sampling (DomainSum
  genre level: 500 test / 500 validation / 10,000 train per domain; AdaptEval: the full
  splits). DomainSum's style level (Newsroom publications) and topic level (CNN topic
  clusters) exist only in the authors' release or Newsroom's manual download, so the
  hub refuses them.

Why all-or-nothing: every split is converted and checked before any is written, and
each is written atomically, so a bad or partial input leaves an existing mirror as it
was. Domains and levels come from the task catalogue (:mod:`lm_eval_tasks.catalog`).
Errors are :class:`lm_eval_tasks.data.loader.DataError` (or
:class:`lm_eval_tasks.catalog.UnknownTask` for a benchmark the suite lacks).
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from lm_eval_tasks import catalog
from lm_eval_tasks.data.loader import HUB_SOURCES, DataError, load_split, validate_record
from lm_eval_tasks.outputs import write_atomically

RELEASE_RE = re.compile(
    r"^(?P<domain>[A-Za-z0-9]+)_(?P<split>train|test|valid|validation|val|dev)_sampled(?:_(?P<n>\d+))?\.json$"
)
SPLIT_NAMES = {"train": "train", "test": "test", "valid": "validation", "validation": "validation",
               "val": "validation", "dev": "validation"}
DOMAIN_ALIASES = {"washington": "wapo", "washingtonpost": "wapo", "nydailynews": "nydaily"}
DEFAULT_TOPIC_ORDER = ("soccer", "crime", "family", "media", "law")
POOL_SIZE = 20


def jsonl_text(records: list[dict]) -> str:
    """One JSON object per line, UTF-8 text kept as it is."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def check_out(out: Path) -> None:
    """Refuse an ``out`` that is a file: the mirror is a folder."""
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out} is a file; give the folder the mirror goes in")


def write_splits(planned: dict[Path, list[dict]], overwrite: bool) -> list[str]:
    """Write every split, each whole or not at all (a temporary file, then a rename).

    Called only once every split is converted and checked, so a bad input file leaves
    the mirror as it was. A split that exists with other content is replaced only with
    ``--overwrite``; one with the same content is left alone.
    """
    texts = {dest: jsonl_text(recs) for dest, recs in planned.items()}
    changed = [d for d, t in texts.items() if d.is_file() and d.read_text(encoding="utf-8") != t]
    if changed and not overwrite:
        raise DataError(f"{len(changed)} split(s) of the mirror already exist with other content: "
                        + ", ".join(str(d) for d in changed[:5]) + ("..." if len(changed) > 5 else "")
                        + "; pass --overwrite to replace them, or --out another folder")
    written = []
    for dest, text in texts.items():
        n = len(planned[dest])
        if dest.is_file() and dest not in changed:
            written.append(f"{dest} ({n} records, unchanged)")
            continue
        write_atomically(dest, text)
        written.append(f"{dest} ({n} records)")
    return written


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


def convert_release(src: Path, out: Path, topic_order: tuple[str, ...], overwrite: bool = False) -> list[str]:
    """Convert every recognised release file under ``src``; return what was written.

    Everything is read and checked before anything is written: two files that map to
    one split, a missing file, a bad record stop the conversion with the mirror untouched.
    """
    known = set(catalog.subsets("domainsum"))
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
    planned: dict[Path, list[dict]] = {}
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
        planned[out / "domainsum" / domain / f"{split}.jsonl"] = recs
    if not planned:
        raise DataError(f"no DomainSum release files (like cnndm_test_sampled_500.json) under {src}")
    missing = missing_release_files(found, topic_order)
    if missing:
        raise DataError(f"the release under {src} is incomplete; missing: " + "; ".join(missing)
                        + " (nothing was written; add the missing files and run again)")
    return write_splits(planned, overwrite)


#: release split -> the file name pattern it comes from
RELEASE_FILES = {"test": "{d}_test_sampled_*.json", "validation": "{d}_valid_sampled_*.json",
                 "train": "{d}_train_sampled_*.json", "train_pool20": "{d}_train_sampled_20.json"}


def missing_release_files(found: dict[str, set[str]], topic_order: tuple[str, ...]) -> list[str]:
    """Expected release files absent for each level that has at least one domain present.

    Why: a release copied in part (a failed download, a renamed file) would otherwise
    give a mirror that silently lacks a domain or a split until a task asks for it.
    """
    missing = []
    for level, domains in catalog.DOMAINSUM_LEVELS.items():
        if not any(d in found for d in domains):
            continue
        for d in domains:
            name = (f"topic{topic_order.index(d) + 1}" if d in topic_order
                    else {v: k for k, v in DOMAIN_ALIASES.items()}.get(d, d))
            for split, pattern in RELEASE_FILES.items():
                if split not in found.get(d, set()):
                    missing.append(f"{level}/{d}: {pattern.format(d=name)}")
    return missing


def from_hub(benchmark: str, subsets: list[str], out: Path, splits: list[str], overwrite: bool = False) -> list[str]:
    """Download ``splits`` of each subset with the paper's sampling; write them once all
    are downloaded; return what was written."""
    known = catalog.subsets(benchmark)  # UnknownTask for a benchmark the suite lacks
    planned: dict[Path, list[dict]] = {}
    for subset in subsets:
        if subset not in known:
            raise DataError(f"{benchmark} has no subset {subset!r}; the catalogue lists {', '.join(known)}")
        if (benchmark, subset) not in HUB_SOURCES:
            raise DataError(
                f"{benchmark}/{subset} cannot be built from the hub: use the authors' release "
                "(--release DIR) or Newsroom's manual download"
            )
        for split in splits:
            planned[out / benchmark / subset / f"{split}.jsonl"] = load_split(benchmark, subset, split, data_dir=None)
    return write_splits(planned, overwrite)


@contextlib.contextmanager
def hub_bars(on: bool) -> Iterator[None]:
    """The download bars of ``datasets`` and ``huggingface_hub``, off while ``on`` is False
    (``--no-progress`` or ``DOMSUM_PROGRESS=0``).

    Why restore afterwards: both switches are process-wide, and ``main`` also runs from
    Python (tests, notebooks), where later downloads should show their bars again.
    """
    if on:
        yield
        return
    import datasets
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    datasets_was_on, hub_was_on = datasets.is_progress_bar_enabled(), not are_progress_bars_disabled()
    datasets.disable_progress_bars()
    disable_progress_bars()
    try:
        yield
    finally:
        if datasets_was_on:
            datasets.enable_progress_bars()
        if hub_was_on:
            enable_progress_bars()


def hub_subsets(benchmark: str, level: str | None = None, subsets: list[str] | None = None) -> list[str]:
    """The subsets a hub download builds: those given, else a DomainSum level's, else every
    subset of ``benchmark`` that the hub has."""
    if subsets:
        return subsets
    if level:
        return [t.subset for t in catalog.select("domainsum", level=level, shots=0, variant="")]
    return [s for (b, s) in HUB_SOURCES if b == benchmark]


def prepare_mirror(out: Path, *, release: Path | None = None, topic_order: tuple[str, ...] = DEFAULT_TOPIC_ORDER,
                   benchmark: str = "domainsum", level: str | None = None, subsets: list[str] | None = None,
                   splits: tuple[str, ...] | list[str] = ("train", "validation", "test"),
                   overwrite: bool = False, progress: bool = True) -> list[str]:
    """Build the mirror under ``out`` from ``release`` (a folder of release files) or, without
    it, from the hub (download bars as ``progress`` says); return a line per split written."""
    check_out(out)
    if release is not None:
        return convert_release(release, out, topic_order, overwrite)
    with hub_bars(progress):
        return from_hub(benchmark, hub_subsets(benchmark, level, subsets), out, list(splits), overwrite)
