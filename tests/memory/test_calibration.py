"""Every similarity threshold the product ships is the one its rule gives for that model.

The rules (``memory/writing/calibration.py``) are quantiles of the labelled pairs; a threshold
carried
over from another model, or left behind when a model or the pairs change, fails here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from mnemolog.embedding import known_embedders, open_identity, tier_identity
from mnemolog.memory.writing.calibration import SHIPPED, Thresholds, derive, rounded, thresholds_for
from mnemolog.settings import default_model_cache

# Loaded from its file: putting bench/ on sys.path would shadow packages (bench/mcp.py).
_SPEC = importlib.util.spec_from_file_location(
    "bench_calibrate", Path(__file__).resolve().parents[2] / "bench" / "calibrate.py"
)
assert _SPEC is not None and _SPEC.loader is not None
calibrate = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(calibrate)
DEFAULT_DATA, cosines, pairs_of = calibrate.DEFAULT_DATA, calibrate.cosines, calibrate.pairs_of


@pytest.fixture(scope="module")
def dev_pairs() -> list[dict[str, str]]:
    return pairs_of(DEFAULT_DATA / "dev.jsonl")


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_thresholds_are_derived_for_their_model(
    name: str, dev_pairs: list[dict[str, str]]
) -> None:
    identity = next(i for i in known_embedders() if i.name == name)
    embedder = open_identity(identity, default_model_cache(), threads=1)
    assert embedder is not None
    assert cosines(embedder, dev_pairs) == SHIPPED[name]


def test_every_tier_has_thresholds_and_an_unknown_model_none() -> None:
    for tier in ("quality", "fast"):
        thresholds_for(tier_identity(tier).name)
    with pytest.raises(ValueError, match="no thresholds are derived"):
        thresholds_for("someone-elses-model")


def test_the_rules() -> None:
    unrelated = [i / 1000 for i in range(1000)]  # cosines 0.000 to 0.999
    distinct_unsure = [0.95, 0.9, 0.85, 0.8, 0.7]
    derived = derive(unrelated, distinct_unsure, distinct_count=20)
    # 10% of unrelated pairs reach the floor, 0.3% the supersede gate; two distinct pairs
    # in twenty may be linked, so the gate sits above the third most similar.
    assert derived == Thresholds(floor=0.9, same=1.0, possible=0.85)
    assert rounded(0.8249) == 0.8 and rounded(0.8251) == 0.85
    with pytest.raises(ValueError):
        derive([], distinct_unsure, 20)
