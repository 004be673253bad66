"""CCSBench prompt texts, replaceable as a whole by a JSON prompt file.

Why a file: the paper's Appendix C.3 (focus classification), C.4 (zero-shot) and C.5
(few-shot) wording could not be retrieved offline, so the built-in texts below are our
reconstruction. A user holding the paper puts its wording into a JSON file and passes
``--metadata '{"ccs_prompt_file": "ccs_prompts.json"}'`` (or
``DOMSUM_CCS_PROMPT_FILE``); no code changes, and the results JSON records the file's
path and SHA-256 (``ccs_prompt_source``) so a published number names its prompt.

``python -m lm_eval_tasks.ccsbench.prompts > ccs_prompts.json`` writes the built-in
texts as a starting file. Keys (all optional; absent keys keep the built-in text):

==================== ===================================================================
key                  placeholders
==================== ===================================================================
``instruction``      none
``length``           ``{words}`` ("at most 50 words" / "between 51 and 100 words"),
                     ``{bin}``, ``{min_words}``, ``{max_words}`` (at least one)
``keywords``         ``{keywords}`` (comma-separated)
``readability_normal``, ``readability_high``, ``focus_high``, ``focus_low``: none
``turn``             ``{document}`` (required), ``{requirements}`` (instruction and
                     control sentences joined by a space), ``{instruction}``,
                     ``{controls}``
``answer_separator`` between a demonstration's turn and its abstract
``demo_separator``   between demonstrations and before the query
``until``            a list of stop strings replacing the task YAML's
``focus_system``     none
``focus_judge``      ``{summary}`` (required); the judge must answer 1 (empirical)
                     or 0 (conceptual), which the judge core scores
==================== ===================================================================

A malformed file (not JSON, an unknown key, a non-string value, an unknown or missing
placeholder) is an error naming the file and the key. The ``_hard`` variants keep their
``Attribute: Value`` lines (the fine-tuning format) whatever the file says.
"""

from __future__ import annotations

import hashlib
import json
import string
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from custom_metrics.ccs import FOCUS_INSTRUCTION, FOCUS_SYSTEM, bin_bounds, focus_messages
from lm_eval_tasks.common.data import DataError

DEFAULT_UNTIL = ("\nPaper:", "\nSummary:", "Write a summary of the following", "\nLength:",
                 "\nKeywords:", "\nReadability:", "\nFocus:", "\n\n\n")

# key -> (allowed placeholders, required placeholders: all of / at least one of)
_PLACEHOLDERS: dict[str, tuple[set[str], set[str], set[str]]] = {
    "instruction": (set(), set(), set()),
    "length": ({"words", "bin", "min_words", "max_words"}, set(), {"words", "bin", "min_words", "max_words"}),
    "keywords": ({"keywords"}, {"keywords"}, set()),
    "readability_normal": (set(), set(), set()),
    "readability_high": (set(), set(), set()),
    "focus_high": (set(), set(), set()),
    "focus_low": (set(), set(), set()),
    "turn": ({"document", "requirements", "instruction", "controls"}, {"document"}, set()),
    "answer_separator": (set(), set(), set()),
    "demo_separator": (set(), set(), set()),
    "focus_system": (set(), set(), set()),
    "focus_judge": ({"summary"}, {"summary"}, set()),
}


@dataclass(frozen=True)
class PromptSpec:
    """Every CCSBench prompt text; the defaults are the built-in reconstruction."""

    instruction: str = "Write a summary of the following scientific paper (its introduction and conclusion)."
    length: str = "The summary should be {words} long."
    keywords: str = "The summary should include the following keywords: {keywords}."
    readability_normal: str = ("The summary should have normal readability, written for expert "
                               "readers like a typical abstract.")
    readability_high: str = "The summary should have high readability, easy to understand for a lay audience."
    focus_high: str = ("The summary should have a high empirical focus, emphasising experiments, "
                       "data and results.")
    focus_low: str = "The summary should have a low empirical focus, emphasising concepts, ideas and methods."
    turn: str = "{requirements}\nPaper: {document}\nSummary:"
    answer_separator: str = " "
    demo_separator: str = "\n\n"
    until: tuple[str, ...] = field(default=DEFAULT_UNTIL)
    focus_system: str = FOCUS_SYSTEM
    focus_judge: str = FOCUS_INSTRUCTION
    source: str = "built-in reconstruction (not the paper's Appendix C text)"

    # ------------------------------------------------------------------ rendering

    def control_sentences(self, rec: dict) -> list[str]:
        """One requirement per control the row sets; absent controls are left out."""
        out = []
        b = rec.get("length_bin", -1)
        if b is not None and b >= 0:
            lo, hi = bin_bounds(b)
            out.append(self.length.format(words=length_words(b), bin=b, min_words=lo, max_words=hi))
        kws = json.loads(rec.get("keywords") or "[]")
        if kws:
            out.append(self.keywords.format(keywords=", ".join(kws)))
        level = {"normal": self.readability_normal, "high": self.readability_high}.get(rec.get("readability") or "")
        if level:
            out.append(level)
        focus = {"high": self.focus_high, "low": self.focus_low}.get(rec.get("focus") or "")
        if focus:
            out.append(focus)
        return out

    def render_turn(self, rec: dict, document: str) -> str:
        """One instruction turn (the query, or a demonstration before its abstract)."""
        controls = self.control_sentences(rec)
        requirements = " ".join(s for s in (self.instruction, *controls) if s)
        return self.turn.format(requirements=requirements, instruction=self.instruction,
                                controls=" ".join(controls), document=document)

    def focus_messages(self, summary: str) -> list[dict[str, str]]:
        """The judge request classifying one summary's focus."""
        return focus_messages(summary, self.focus_judge, self.focus_system)


DEFAULT = PromptSpec()


def length_words(b: int) -> str:
    """The words a length bin asks for: bin 0 = at most 50, bin b = 50b+1 .. 50(b+1)."""
    lo, hi = bin_bounds(b)
    return f"at most {hi} words" if b == 0 else f"between {lo} and {hi} words"


def _check_placeholders(key: str, text: str, where: str) -> None:
    allowed, required, one_of = _PLACEHOLDERS[key]
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
    except ValueError as exc:
        raise DataError(f"{where}: key {key!r}: {exc} (write a literal brace as {{{{ or }}}})") from None
    bad = sorted(n for n in names if n not in allowed)
    if bad:
        raise DataError(f"{where}: key {key!r} uses placeholder(s) {bad}; allowed: {sorted(allowed) or 'none'}")
    if required - names:
        raise DataError(f"{where}: key {key!r} lacks placeholder(s) {sorted(required - names)}")
    if one_of and not names & one_of:
        raise DataError(f"{where}: key {key!r} needs at least one of {sorted(one_of)}")


def load_prompt_spec(path: str | Path, task: str = "ccsbench") -> PromptSpec:
    """The prompt texts of a JSON file, built-in texts for absent keys (see module doc)."""
    p = Path(path).expanduser()
    where = f"task {task!r}: CCSBench prompt file {p}"
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise DataError(f"{where}: cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{where}: not valid UTF-8 JSON ({exc})") from None
    if not isinstance(data, dict):
        raise DataError(f"{where}: the file must hold one JSON object, got {type(data).__name__}")
    known = [f.name for f in fields(PromptSpec) if f.name != "source"]
    unknown = sorted(k for k in data if k not in known)
    if unknown:
        raise DataError(f"{where}: unknown key(s) {unknown}; known: {known}")
    values: dict = {}
    for key, value in data.items():
        if key == "until":
            if not (isinstance(value, list) and value and all(isinstance(s, str) and s for s in value)):
                raise DataError(f"{where}: key 'until' must be a non-empty list of non-empty strings")
            values[key] = tuple(value)
            continue
        if not isinstance(value, str):
            raise DataError(f"{where}: key {key!r} must be a string, got {type(value).__name__}")
        _check_placeholders(key, value, where)
        values[key] = value
    digest = hashlib.sha256(raw).hexdigest()
    return replace(DEFAULT, **values, source=f"{p.resolve()} (sha256 {digest})")


def resolve_prompt_spec(metadata: dict | None, task: str) -> PromptSpec:
    """The spec named by metadata ``ccs_prompt_file`` / ``DOMSUM_CCS_PROMPT_FILE``, else the default."""
    from lm_eval_tasks.common.settings import setting

    path = setting(metadata, "ccs_prompt_file")
    return load_prompt_spec(path, task) if path else DEFAULT


def main() -> int:
    """Print the built-in texts as a JSON prompt file to start from."""
    data = {k: v for k, v in asdict(DEFAULT).items() if k != "source"}
    data["until"] = list(data["until"])
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
