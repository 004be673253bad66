"""Helpers shared by the unit and integration tests of e2e_ccsbench (tests/unit, tests/integration)."""

import json


# CCSBench Appendix C.4 and C.5 as printed (between the appendix's triple quotes); the
# parts the two blocks share are written once.
SYSTEM_PART = """# System
You are an expert summarizer who can generate summaries with specific controls.
"""
INSTRUCTION_PART = """# Instruction
Your task is to create a summary of the given scientific document with the following controls:
Length: The summary should fit in the specified word counts.
Keywords: Include the following keywords in the summary: [list of keywords]
Readability: Ensure the summary is either highly readable for laymen (high) or not specifically optimized for readability (normal).
Empirical Focus Level: Make the summary has high empirical focus level (high) by emphasizing the experimental, data-driven aspects of a study. It highlights data collection, experimental settings, performance metrics and concrete results obtained from the research, especially when it comes to statistics and data; or low empirical focus level (low) the theoretical and innovative aspects of a study. It highlights the motivation, the challenge, the underlying theoretical framework, the description of the proposed method or algorithm, and broader implications of the research."""
PAPER_CONTROLS = """Length: 0-50 words
Keywords: ”multi-scale”
Readability: high
Empirical Focus Level: high"""
C4 = SYSTEM_PART + INSTRUCTION_PART + """
Document: {doc}
# Control signals
""" + PAPER_CONTROLS + """
# Output
Summary:"""


def split_system(block: str) -> tuple[str, str]:
    """(system text, user part) of an appendix block: the line after "# System", the rest."""
    head, system, user = block.split("\n", 2)
    assert head == "# System"
    return system, user


def write_prompt_file(path, **texts):
    path.write_text(json.dumps(texts), encoding="utf-8")
    return path
