"""CCSBench prompt texts: the paper's Appendix C, replaceable by a JSON prompt file.

Source: Ding et al., "CCSBench" (arXiv 2410.12601), Appendix C.4 (zero-shot), C.5
(few-shot, three demonstrations) and C.3 (focus evaluation), copied verbatim,
including the quote characters as printed (``”multi-scale”``, ``’empirical’``) and the
line layout (one line per part, no blank lines). Reading of the appendix blocks:

* ``# System`` introduces the system text. Each record carries it as ``system``; the
  task hands it to the harness as a system message when a chat template is applied
  and prepends it (followed by one newline) otherwise. Everything after it is the
  user part (``prompt``), starting at ``# Instruction``.
* The other ``#`` lines (``# Instruction``, ``# Control signals``, ``# Examples``,
  ``# To generate``, ``# Output``) are printed inside the blocks and kept as text.
* ``{doc}`` is the (truncated) document; the control block holds one
  ``Attribute: value`` line per control the row sets, in the paper's order (Length,
  Keywords, Readability, Empirical Focus Level). Length is the row's 50-word bin as a
  word range (Section 3.1: "Bin 0: 0-50 words; Bin 1: 51-100 words"); keywords are
  each quoted as in the appendix's single example and joined by ", " (the appendix
  shows one keyword only; the separator is our choice). ``{ctrl1}`` of a
  demonstration is the same block for that demonstration's row.

A prompt file (metadata ``ccs_prompt_file`` or ``DOMSUM_CCS_PROMPT_FILE``) replaces
any of these texts without code changes; the results record which text ran
(``ccs_prompt_source``: :data:`PAPER_SOURCE`, or the file's path and SHA-256).
``python -m lm_eval_tasks.benchmarks.ccsbench.prompts > ccs_prompts.json`` writes the
built-in texts as a starting file. Keys (all optional; absent keys keep the paper's):

===================== ==================================================================
key                   placeholders (required ones marked *)
===================== ==================================================================
``system``            none; "" sends no system text
``instruction``       none (the ``# Instruction`` block with the four definitions)
``zero_shot``         ``{document}`` *, ``{instruction}``, ``{controls}``
``few_shot``          ``{document}`` *, ``{demonstrations}`` *, ``{instruction}``,
                      ``{controls}``
``demonstration``     ``{document}`` *, ``{summary}`` *, ``{controls}``
``demo_separator``    none (between demonstrations)
``length``            at least one of ``{min_words}``, ``{max_words}``, ``{bin}``
``keywords``          ``{keywords}`` * (the quoted keywords joined)
``keyword``           ``{keyword}`` * (one keyword, quoted)
``keyword_separator`` none
``readability``       ``{level}`` * (``normal`` / ``high``)
``focus``             ``{level}`` * (``high`` / ``low``)
``until``             a list of stop strings replacing the task YAML's
``focus_system``      none (the judge's system message; "" sends none)
``focus_judge``       ``{abstract}`` or ``{summary}`` (at least one; both are the summary)
``focus_answers``     an object: judge answer word -> ``high`` / ``low`` (both labels)
===================== ==================================================================

A template line that is just ``{controls}`` is left out for a row that sets no
control. A malformed file (not JSON, an unknown key, a wrong type, an unknown or
missing placeholder) is an error naming the task, the file and the key. The ``_hard``
variants keep their ``Attribute: Value`` lines (Appendix A) whatever the file says;
the focus judge texts apply to every variant.
"""

from __future__ import annotations

import hashlib
import json
import string
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from custom_metrics.families.ccs import (
    FOCUS_ANSWERS, FOCUS_CLASSES, FOCUS_INSTRUCTION, FOCUS_SYSTEM, N_BINS, bin_bounds, focus_messages,
)
from lm_eval_tasks.data.records import DataError

PAPER_SOURCE = "CCSBench Appendix C.4/C.5 (paper text)"
FOCUS_PAPER_SOURCE = "CCSBench Appendix C.3 (paper text)"

# CCSBench Appendix C.4 / C.5, verbatim (the two appendix blocks share these parts).
SYSTEM = "You are an expert summarizer who can generate summaries with specific controls."
INSTRUCTION = (
    "# Instruction\n"
    "Your task is to create a summary of the given scientific document with the following controls:\n"
    "Length: The summary should fit in the specified word counts.\n"
    "Keywords: Include the following keywords in the summary: [list of keywords]\n"
    "Readability: Ensure the summary is either highly readable for laymen (high) or not specifically "
    "optimized for readability (normal).\n"
    "Empirical Focus Level: Make the summary has high empirical focus level (high) by emphasizing the "
    "experimental, data-driven aspects of a study. It highlights data collection, experimental settings, "
    "performance metrics and concrete results obtained from the research, especially when it comes to "
    "statistics and data; or low empirical focus level (low) the theoretical and innovative aspects of a "
    "study. It highlights the motivation, the challenge, the underlying theoretical framework, the "
    "description of the proposed method or algorithm, and broader implications of the research."
)
ZERO_SHOT = "{instruction}\nDocument: {document}\n# Control signals\n{controls}\n# Output\nSummary:"
FEW_SHOT = ("{instruction}\n# Examples\nExamples:\n{demonstrations}\n# To generate\n"
            "Document: {document}\n{controls}\n# Output\nSummary:")
DEMONSTRATION = "Document: {document}\n{controls}\nSummary: {summary}"

#: stops for both layouts: the next document, section, control line or demonstration
DEFAULT_UNTIL = ("\nDocument:", "\n# ", "\nSummary:", "\nLength:", "\nKeywords:", "\nReadability:",
                 "\nEmpirical Focus Level:", "\nFocus:", "\nPaper:", "\n\n\n")

# key -> (allowed placeholders, required: all of, required: at least one of)
_PLACEHOLDERS: dict[str, tuple[set[str], set[str], set[str]]] = {
    "system": (set(), set(), set()),
    "instruction": (set(), set(), set()),
    "zero_shot": ({"instruction", "document", "controls"}, {"document"}, set()),
    "few_shot": ({"instruction", "demonstrations", "document", "controls"}, {"document", "demonstrations"}, set()),
    "demonstration": ({"document", "controls", "summary"}, {"document", "summary"}, set()),
    "demo_separator": (set(), set(), set()),
    "length": ({"bin", "min_words", "max_words"}, set(), {"bin", "min_words", "max_words"}),
    "keywords": ({"keywords"}, {"keywords"}, set()),
    "keyword": ({"keyword"}, {"keyword"}, set()),
    "keyword_separator": (set(), set(), set()),
    "readability": ({"level"}, {"level"}, set()),
    "focus": ({"level"}, {"level"}, set()),
    "focus_system": (set(), set(), set()),
    "focus_judge": ({"abstract", "summary"}, set(), {"abstract", "summary"}),
}


@dataclass(frozen=True, eq=False)
class FocusPrompt:
    """The focus judge's request builder (called per summary) and its answer words.

    ``judge_focus`` calls it like :func:`custom_metrics.families.ccs.focus_messages` and reads
    ``answers`` to parse the reply.
    """

    instruction: str
    system: str
    answers: dict[str, str]

    def __call__(self, summary: str) -> list[dict[str, str]]:
        return focus_messages(summary, self.instruction, self.system)


@dataclass(frozen=True)
class PromptSpec:
    """Every CCSBench prompt text; the defaults are the paper's Appendix C.3-C.5."""

    system: str = SYSTEM
    instruction: str = INSTRUCTION
    zero_shot: str = ZERO_SHOT
    few_shot: str = FEW_SHOT
    demonstration: str = DEMONSTRATION
    demo_separator: str = "\n"
    length: str = "Length: {min_words}-{max_words} words"
    keywords: str = "Keywords: {keywords}"
    keyword: str = "\u201d{keyword}\u201d"
    keyword_separator: str = ", "
    readability: str = "Readability: {level}"
    focus: str = "Empirical Focus Level: {level}"
    until: tuple[str, ...] = field(default=DEFAULT_UNTIL)
    focus_system: str = FOCUS_SYSTEM
    focus_judge: str = FOCUS_INSTRUCTION
    focus_answers: tuple[tuple[str, str], ...] = tuple(FOCUS_ANSWERS.items())
    source: str = PAPER_SOURCE

    # ------------------------------------------------------------------ rendering

    def control_lines(self, rec: dict, where: str = "") -> list[str]:
        """One ``Attribute: value`` line per control the row sets (C.4 "# Control signals").

        A length bin outside 0 .. ``N_BINS - 1`` is an error naming the record.
        """
        out = []
        b = rec.get("length_bin", -1)
        if b is not None and b != -1:
            if not isinstance(b, int) or not 0 <= b < N_BINS:
                raise DataError(f"{where or 'CCSBench'}: record {rec.get('id')!r}: field 'length_bin' = {b!r} "
                                f"is not a CCSBench length bin (0-{N_BINS - 1}, 50 words each)")
            lo, hi = bin_bounds(b)
            out.append(self.length.format(bin=b, min_words=lo, max_words=hi))
        kws = json.loads(rec.get("keywords") or "[]")
        if kws:
            quoted = self.keyword_separator.join(self.keyword.format(keyword=k) for k in kws)
            out.append(self.keywords.format(keywords=quoted))
        if rec.get("readability"):
            out.append(self.readability.format(level=rec["readability"]))
        if rec.get("focus"):
            out.append(self.focus.format(level=rec["focus"]))
        return out

    def render(self, rec: dict, document: str, demos: Sequence[tuple[dict, str]] = (), where: str = "") -> str:
        """The user part of the prompt: C.4 without demonstrations, C.5 with them.

        ``demos`` are (record, truncated document) pairs; their abstracts are
        ``record["summary"]``.
        """
        controls = "\n".join(self.control_lines(rec, where))
        if not demos:
            return _fill(self.zero_shot, instruction=self.instruction, document=document, controls=controls)
        shown = [_fill(self.demonstration, document=doc, summary=d["summary"].strip(),
                       controls="\n".join(self.control_lines(d, where))) for d, doc in demos]
        return _fill(self.few_shot, instruction=self.instruction, demonstrations=self.demo_separator.join(shown),
                     document=document, controls=controls)

    @property
    def focus_source(self) -> str:
        """Where the focus judge's texts come from: C.3, or the prompt file."""
        return FOCUS_PAPER_SOURCE if self.source == PAPER_SOURCE else self.source

    @property
    def focus_messages(self) -> FocusPrompt:
        """The focus judge's request builder (C.3), with the answer words to parse."""
        return FocusPrompt(self.focus_judge, self.focus_system, dict(self.focus_answers))


DEFAULT = PromptSpec()


def _fill(template: str, **values: str) -> str:
    """``template.format(**values)``, leaving out a line that is only ``{controls}``
    when the row sets no control (no empty line in the block)."""
    if not values.get("controls"):
        template = "\n".join(line for line in template.split("\n") if line != "{controls}")
    return template.format(**values)


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


def _check_answers(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    ok = (isinstance(value, dict) and value and all(isinstance(k, str) and k.strip() for k in value)
          and all(v in FOCUS_CLASSES for v in value.values()) and set(value.values()) == set(FOCUS_CLASSES))
    if not ok:
        raise DataError(f"{where}: key 'focus_answers' must map non-empty answer words to "
                        f"{list(FOCUS_CLASSES)}, each label at least once (e.g. {FOCUS_ANSWERS})")
    return tuple(value.items())


def load_prompt_spec(path: str | Path, task: str = "ccsbench") -> PromptSpec:
    """The prompt texts of a JSON file, the paper's texts for absent keys (see module doc)."""
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
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "until":
            if not (isinstance(value, list) and value and all(isinstance(s, str) and s for s in value)):
                raise DataError(f"{where}: key 'until' must be a non-empty list of non-empty strings")
            values[key] = tuple(value)
            continue
        if key == "focus_answers":
            values[key] = _check_answers(value, where)
            continue
        if not isinstance(value, str):
            raise DataError(f"{where}: key {key!r} must be a string, got {type(value).__name__}")
        _check_placeholders(key, value, where)
        values[key] = value
    digest = hashlib.sha256(raw).hexdigest()
    return replace(DEFAULT, **values, source=f"{p.resolve()} (sha256 {digest})")


def spec_as_json(spec: PromptSpec = DEFAULT) -> dict[str, Any]:
    """The spec as a prompt-file object (every key; ``source`` left out)."""
    data: dict[str, Any] = {f.name: getattr(spec, f.name) for f in fields(PromptSpec) if f.name != "source"}
    data["until"] = list(spec.until)
    data["focus_answers"] = dict(spec.focus_answers)
    return data


def main() -> int:
    """Print the paper's texts as a JSON prompt file to start from."""
    json.dump(spec_as_json(), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
