"""Helpers shared by the unit and integration tests of ccs_metrics (tests/unit, tests/integration)."""


# Three sentences with words where CMUdict and pyphen disagree ("idea", "area", "every").
FKGL_TEXTS = (
    "The proposed heteroscedastic variational architecture substantially outperforms "
    "conventional probabilistic baselines across heterogeneous experimental configurations.",
    "The new model works well. It beats old ones. We test it on many tasks.",
    "Every idea in this area was tested on real data, and the variable results are interesting.",
)
