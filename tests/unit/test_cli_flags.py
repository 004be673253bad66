"""Every ``domsum`` subcommand spells its flags by one convention (lm_eval_tasks/commands/__init__.py).

Each command builds its own argparse parser inside ``main(argv)``; the parser is caught
at its first ``parse_args`` / ``parse_known_args`` (nothing runs past that point), so the
checks read the real parsers of all subcommands, the ones in other packages included.
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections import defaultdict

import pytest

from lm_eval_tasks.commands import COMMANDS
from lm_eval_tasks.commands import FLAG_ALIASES

#: subcommands that draw progress bars, and where the bars come from
PROGRESS_COMMANDS = {
    "build-vocab": "counts the documents of a split",
    "token-shift": "runs the models over every document",
    "rescore": "scores every document with each metric family",
    "meta-eval": "--compute scores every summary (battery, judge)",
    "change-amplitude": "--judge asks the focus judge about every summary",
    "prepare-data": "--hub downloads show the datasets / hub bars",
    "domain-stats": "counts the pairs of every domain",
    "finetune": "the trainer's bars over steps and evaluation",
    "demo": "runs lm_eval in the foreground, with its generation and scoring bars",
    "report": "a bar over the report's steps (bootstrap tables, figures)",
    "run": "runs the harness in the foreground, with its generation and scoring bars",
}
HYPHENATED = re.compile(r"--[a-z0-9]+(-[a-z0-9]+)*")


class _Parsed(Exception):
    """Raised in place of parsing: the parser has been caught."""


def _capture(command: str) -> argparse.ArgumentParser:
    """The parser ``command``'s ``main([])`` builds, caught before it parses anything."""
    module = importlib.import_module(COMMANDS[command][0])
    caught: list[argparse.ArgumentParser] = []

    def catch(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        caught.append(self)
        raise _Parsed

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(argparse.ArgumentParser, "parse_args", catch)
        mp.setattr(argparse.ArgumentParser, "parse_known_args", catch)
        with pytest.raises(_Parsed):
            module.main([])
    return caught[0]


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    return {command: _capture(command) for command in COMMANDS}


def _long(action: argparse.Action) -> list[str]:
    return [o for o in action.option_strings if o.startswith("--")]


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if _long(a) and not isinstance(a, argparse._HelpAction)]


def _action_of(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


def _legacy() -> dict[str, str]:
    """older spelling -> the conventional flag it stands for"""
    return {old: primary for primary, olds in FLAG_ALIASES.items() for old in olds}


def test_every_subcommand_builds_a_parser(parsers):
    assert set(parsers) == set(COMMANDS)
    assert all(isinstance(p, argparse.ArgumentParser) for p in parsers.values())
    assert _action_of(parsers["rescore"], "--out") is not None  # the catch sees the real parser


@pytest.mark.parametrize("command", list(COMMANDS))
def test_long_flags_are_hyphenated_underscores_only_as_aliases(parsers, command):
    bad = []
    for action in _actions(parsers[command]):
        flags = _long(action)
        if not HYPHENATED.fullmatch(flags[0]):
            bad.append(f"{flags[0]} is the primary spelling")
        bad += [f"{f} has no hyphenated twin {f.replace('_', '-')}" for f in flags
                if "_" in f and f.replace("_", "-") not in flags]
    assert not bad, f"{command}: " + "; ".join(bad)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_older_spellings_are_aliases_of_the_conventional_flag(parsers, command):
    parser, legacy, bad = parsers[command], _legacy(), []
    for action in _actions(parser):
        for primary in dict.fromkeys(legacy[f] for f in action.option_strings if f in legacy):
            target = _action_of(parser, primary)
            if _long(action)[0] != primary and (target is None or target.dest != action.dest):
                bad.append(f"{'/'.join(_long(action))} should be {primary}, keeping "
                           f"{', '.join(f for f in action.option_strings if f in legacy)} as alias(es)")
    assert not bad, f"{command}: " + "; ".join(bad)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_data_dir_and_subsets_accept_their_old_spellings(parsers, command):
    parser, bad = parsers[command], []
    for primary in ("--data-dir", "--subsets"):
        action = _action_of(parser, primary)
        if action is not None and not set(FLAG_ALIASES[primary]) <= set(action.option_strings):
            bad.append(f"{primary} does not accept {', '.join(FLAG_ALIASES[primary])}")
    assert not bad, f"{command}: " + "; ".join(bad)


@pytest.mark.parametrize("command", sorted(PROGRESS_COMMANDS))
def test_commands_that_draw_bars_turn_them_off_with_no_progress(parsers, command):
    action = _action_of(parsers[command], "--no-progress")
    assert action is not None, f"{command} draws progress bars ({PROGRESS_COMMANDS[command]}) but has no --no-progress"
    assert isinstance(action, argparse._StoreTrueAction) and action.default is False, (
        f"{command}: --no-progress must be a switch that is off by default")


def test_no_two_commands_spell_one_concept_differently(parsers):
    """One concept, one primary spelling across all commands (``--out`` never beside
    ``--out-dir``, ``--data-dir`` never beside ``--data_dir``)."""
    legacy = _legacy()
    spellings: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for command, parser in parsers.items():
        for action in _actions(parser):
            primary = _long(action)[0]
            concept = legacy.get(primary, primary).lstrip("-").replace("_", "-").lower()
            spellings[concept][primary].add(command)
    mixed = {concept: {flag: sorted(cmds) for flag, cmds in used.items()}
             for concept, used in spellings.items() if len(used) > 1}
    assert not mixed, f"one concept spelled differently by different commands: {mixed}"


def test_aliases_parse_to_the_same_value(parsers):
    """What users typed before still means the same (a real parse of the caught parsers)."""
    rescore = parsers["rescore"]
    assert (rescore.parse_args(["x.jsonl", "--out-dir", "o"]).out
            == rescore.parse_args(["x.jsonl", "--out", "o"]).out == "o")
    vocab = parsers["build-vocab"]
    old = vocab.parse_args(["--benchmark", "adapteval", "--subset", "pubmed", "--data_dir", "d"])
    new = vocab.parse_args(["--benchmark", "adapteval", "--subsets", "pubmed", "--data-dir", "d"])
    assert (old.subsets, old.data_dir) == (new.subsets, new.data_dir) == (["pubmed"], "d")
    shift = parsers["token-shift"]
    args = ["--samples", "s.jsonl", "--output", "r.json", "--vocab", "v.tsv"]
    assert (shift.parse_args(args).out, shift.parse_args(args).vocabulary) == ("r.json", "v.tsv")
