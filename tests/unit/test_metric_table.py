"""The metric table: records declared beside their formulas, collected by the registry.

A new metric family is its module (formula + record in ``METRIC_FAMILIES``) and the
catalogue's family list; these tests pin the contract that makes that enough.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import custom_metrics
from custom_metrics import registry
from custom_metrics.registry import Batch, Context, Family, Key


def _declared() -> dict[str, str]:
    """family name -> the module that declares it, read from every module of the metric
    library that declares ``METRIC_FAMILIES`` (wherever it sits: the layout test keeps
    them in ``custom_metrics/families/``, the package the registry scans)."""
    root = Path(custom_metrics.__file__).parent
    out = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts or "METRIC_FAMILIES" not in path.read_text(encoding="utf-8"):
            continue
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        module = importlib.import_module(name)
        for fam in getattr(module, "METRIC_FAMILIES", ()):
            out[fam.name] = module.__name__
    return out


def test_the_table_is_what_the_modules_declare():
    declared = _declared()
    assert set(registry.names()) == set(declared)
    # records sit beside their formulas
    assert declared["rouge"] == "custom_metrics.families.rouge" and declared["dvo"] == "custom_metrics.families.dvo"
    assert declared["bertscore"] == declared["bertscore_sci"] == "custom_metrics.families.bertscore"
    assert declared["ccs_focus"] == "custom_metrics.families.ccs" and declared["mauve"] == "custom_metrics.families.mauve"


def test_every_key_belongs_to_one_family_and_has_its_display_facts():
    owners: dict[str, str] = {}
    for fam in registry.all_families():
        for k in fam.keys:
            assert k.name not in owners, (k.name, owners.get(k.name), fam.name)
            owners[k.name] = fam.name
            assert k.label and k.scale > 0 and k.unit
    # the papers' display scale: ROUGE and BERTScore fractions x100, DVO already a percentage
    assert registry.display_scale("rouge_geo") == registry.display_scale("bertscore_f1") == 100.0
    assert registry.display_scale("dvo") == registry.display_scale("bertscore_sci_f1") == 1.0
    assert registry.display_name("rouge_geo") == "ROUGE" and registry.display_name("no_such_key") == "no_such_key"
    assert registry.display_scale("no_such_key") == 1.0


def test_every_catalogue_family_is_in_the_table():
    from lm_eval_tasks import catalog

    used = {f for spec in catalog.all_tasks().values() for f in spec.families}
    assert used <= set(registry.names())


def test_a_key_declared_twice_is_an_error(monkeypatch):
    dvo = importlib.import_module("custom_metrics.families.dvo")  # the package exports a function of that name
    twin = Family(name="dvo_twin", keys=(Key("dvo"),), score=lambda b, c: {"dvo": []}, description="", source="")
    monkeypatch.setattr(dvo, "METRIC_FAMILIES", (*dvo.METRIC_FAMILIES, twin))
    monkeypatch.setattr(registry, "_TABLE", None)
    with pytest.raises(ValueError, match="key 'dvo' is reported by two families"):
        registry.names()


def test_a_new_family_in_a_module_is_found_without_a_registry_edit(monkeypatch):
    """What a new metric module does: declare its record in METRIC_FAMILIES."""
    bleu = importlib.import_module("custom_metrics.families.bleu")

    def score(batch: Batch, ctx: Context) -> dict[str, list]:
        return {"words": [float(len(p.split())) for p in batch.predictions]}

    words = Family(name="words", keys=(Key("words", unit="count", display="Words"),), score=score,
                   description="summary length in words", source="tests")
    monkeypatch.setattr(bleu, "METRIC_FAMILIES", (*bleu.METRIC_FAMILIES, words))
    monkeypatch.setattr(registry, "_TABLE", None)
    assert registry.get("words") is words and registry.display_name("words") == "Words"
    batch = Batch(["a b c", "a"], ["x", "y"], ["", ""], [{}, {}])
    assert registry.score_corpus(["words"], batch, Context()) == {"words": 2.0}


def test_functions_named_like_their_family_modules_stay_functions():
    """``bertscore`` and ``dvo`` are public functions of ``custom_metrics`` and names of
    family modules: building the table imports the modules, which must not shadow them."""
    registry.names()  # every family module imported
    from custom_metrics import bertscore, dvo
    from custom_metrics.families import bertscore as bertscore_module, dvo as dvo_module

    assert bertscore is bertscore_module.bertscore and dvo is dvo_module.dvo
    assert custom_metrics.bertscore is bertscore and custom_metrics.dvo is dvo
