"""Settings rows are declared by their owners and read from there by every consumer.

Why: a family's, the judge's or a benchmark's knob used to be a row of one central table
that mirrored the owner's defaults, and the report's and rescore's lists mirrored the
table again. Now the owner declares the row once; these tests hold that the settings
table, the settings page, ``JudgeConfig``, the report's identity settings and rescore's
flags all come from that one declaration.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil

import pytest

from conftest import ROOT
from custom_metrics import families, registry
from custom_metrics.errors import SuiteError
from custom_metrics.judge import JudgeConfig
from custom_metrics.judge import config as judge_config
from custom_metrics.setting import Setting, arrange, as_int
from lm_eval_tasks import settings
from lm_eval_tasks.benchmarks.suite import ALL_RECORDS

#: the resolver and the table it reads (the run-wide rows, the owners' rows collected)
RESOLVER_AND_TABLE = {name: (ROOT / "lm_eval_tasks" / name).read_text(encoding="utf-8")
                      for name in ("settings.py", "setting_table.py")}
SETTINGS_PY = "\n".join(RESOLVER_AND_TABLE.values())
PAGE = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")


def _family_module_rows() -> dict[str, tuple[Setting, ...]]:
    """``SETTING_ROWS`` of every module of the families package, found by scanning it here."""
    out = {}
    for info in pkgutil.iter_modules(families.__path__):
        rows = getattr(importlib.import_module(f"{families.__name__}.{info.name}"), "SETTING_ROWS", ())
        if rows:
            out[info.name] = tuple(rows)
    return out


def test_a_familys_rows_reach_the_table_and_the_page_without_settings_py_naming_them():
    owned = _family_module_rows()
    assert {"bertscore", "rouge", "meteor", "dvo", "blanc", "perplexity", "mauve"} <= set(owned)
    for module, rows in owned.items():
        for row in rows:
            assert settings.SETTINGS[row.key] is row, (module, row.key)  # the owner's object, not a copy
            assert row.table_row in PAGE.splitlines(), row.key  # the page's line is the row's
            assert f'"{row.key}"' not in SETTINGS_PY, row.key
    # the benchmark records' rows likewise, each attributed to its record
    for rec in ALL_RECORDS.values():
        for row in rec.settings:
            assert settings.SETTINGS[row.key] is row and settings.OWNER[row.key] == rec.name
            assert row.table_row in PAGE.splitlines() and f'"{row.key}"' not in SETTINGS_PY


def test_settings_py_imports_no_family_or_judge_module():
    imported = set()
    for node in (n for text in RESOLVER_AND_TABLE.values() for n in ast.walk(ast.parse(text))):
        if isinstance(node, ast.ImportFrom):
            imported |= {node.module or ""} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
    assert not [m for m in imported if m.startswith(("custom_metrics.families", "custom_metrics.judge"))]
    assert all(len(text.splitlines()) <= 200 for text in RESOLVER_AND_TABLE.values())


def test_every_row_is_declared_once_and_the_table_holds_every_owners_rows():
    owners = [*settings.RUN_WIDE, *registry.setting_rows(), *(r for m in settings.ANALYSES for r in m.SETTING_ROWS),
              *(r for rec in ALL_RECORDS.values() for r in rec.settings)]
    assert sorted(r.key for r in owners) == sorted(settings.SETTINGS)
    assert len({r.key for r in owners}) == len(owners)


def test_judge_config_defaults_are_the_judge_rows():
    """One declaration: each field a judge row fills takes that row's default, and the row in
    the settings table is the very object JudgeConfig names."""
    config = JudgeConfig("m")
    filled = {f.name: f.metadata["setting"] for f in dataclasses.fields(JudgeConfig) if "setting" in f.metadata}
    assert filled == judge_config.SETTING_OF and tuple(filled) == judge_config.FIELDS
    for row in judge_config.ROWS:
        assert settings.SETTINGS[row.key] is row
        name = next((n for n, key in filled.items() if key == row.key), None)
        assert name is not None, row.key  # every JudgeConfig row fills a field
        if name != "model":  # the one required field
            assert getattr(config, name) == row.default, name
    # the values in the table are JudgeConfig's own: n_samples 20, max_retries 5, logprobs auto
    assert (config.n_samples, config.max_retries, config.logprobs) == (20, 5, "auto")
    assert settings.SETTINGS["judge_cache"].default == config.cache == judge_config.DEFAULT_CACHE_PATH
    with pytest.raises(TypeError):
        JudgeConfig()  # model stays required


def test_judge_config_from_the_rows_reads_given_settings_only(monkeypatch):
    for row in judge_config.ROWS:
        if row.env:
            monkeypatch.delenv(row.env, raising=False)
    cfg = settings.judge_config({"judge_model": "m", "judge_n_samples": "7", "judge_logprobs": "yes",
                                 "judge_cache": "off"})
    assert (cfg.model, cfg.n_samples, cfg.logprobs, cfg.cache, cfg.max_retries) == ("m", 7, "on", None, 5)
    assert settings.judge_config({}) is None
    from custom_metrics.judge import JudgeConfigError

    with pytest.raises(JudgeConfigError, match="setting 'judge_n_samples' .*must be >= 1"):
        settings.judge_config({"judge_model": "m", "judge_n_samples": 0})


def test_rows_stand_where_they_say_and_a_new_one_at_the_end_of_its_group():
    rows = list(settings.SETTINGS.values())
    new = Setting("new_family_knob", None, as_int, 3, "A family's new knob.", "scorers")
    placed = Setting("placed_knob", None, str, None, "Beside FM's.", "scorers", after="fm_extract_max_tokens")
    page = list(arrange([*rows, new, placed], settings.GROUPS))
    by_key = {**settings.SETTINGS, new.key: new, placed.key: placed}
    scorers = [k for k in page if by_key[k].group == "scorers"]
    assert scorers[-1] == "new_family_knob"
    assert page[page.index("fm_extract_max_tokens") + 1] == "placed_knob"
    assert list(arrange(rows, settings.GROUPS)) == list(settings.SETTINGS)  # the order is a fixed point
    two = [Setting("a", None, str, None, "", "run"), Setting("x", None, str, None, "", "run", after="a"),
           Setting("y", None, str, None, "", "run", after="a"), Setting("b", None, str, None, "", "run"),
           Setting("z", None, str, None, "", "run", before="a")]
    assert list(arrange(two, ("run",))) == ["z", "a", "x", "y", "b"]  # two rows after one keep their order
    with pytest.raises(SuiteError, match="'dup' is declared twice"):
        arrange([Setting("dup", None, str, None, "", "run"), Setting("dup", None, str, None, "", "run")], ("run",))
    with pytest.raises(SuiteError, match="beside 'nowhere', which no row declares"):
        arrange([Setting("x", None, str, None, "", "run", after="nowhere")], ("run",))


def test_the_reports_identity_settings_are_the_rows_that_declare_them():
    from lm_eval_tasks.report import systems

    for key, row in settings.SETTINGS.items():
        if row.system == "prompt":
            assert systems.PROMPT_SETTINGS[key] == ((settings.OWNER[key],) if key in settings.OWNER else None)
        else:
            assert key not in systems.PROMPT_SETTINGS
        assert (key in systems.JUDGE_SETTINGS) == (row.system == "judge")
    assert systems.PROMPT_SETTINGS["max_demo_summary_words"] == ("adapteval",)
    assert systems.PROMPT_SETTINGS["max_doc_words"] is None
    assert set(systems.JUDGE_SETTINGS) == {"judge_model", "judge_prompt_variant", "fm_variant", "fm_weights"}
    assert systems.USED_ALIASES == {"adapteval_prompt_variant": "prompt_variant_used"}


def test_rescores_settings_flags_are_the_rows_that_declare_one(tmp_path):
    from lm_eval_tasks.commands.rescore import build_parser
    from lm_eval_tasks.rescoring import flagged

    parser = build_parser()
    dests = {a.dest for a in parser._actions}
    offered = {k for k, row in settings.SETTINGS.items() if row.flag is not None}
    assert offered <= dests and len(offered) == 13
    args = parser.parse_args([str(tmp_path / "s.jsonl"), "--bertscore-layers", "9", "--judge-n-samples", "3",
                              "--judge-logprobs", "off", "--fm-variant", "few"])
    given = {k: v for k, v in flagged(args).items() if v is not None}
    assert given == {"bertscore_layers": 9, "judge_n_samples": 3, "judge_logprobs": "off", "fm_variant": "few"}
    assert set(flagged(args)) == offered
    with pytest.raises(SystemExit):  # the flag takes fewer values than the row (no yes/no spellings)
        parser.parse_args([str(tmp_path / "s.jsonl"), "--judge-logprobs", "yes"])
