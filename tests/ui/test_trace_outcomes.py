"""Why a recall's candidate was not served, as the trace page says it: each reason from what
the trace records."""

from __future__ import annotations

from mnemolog.ui.traces import Outcome, outcomes

PARAMS = {"limit": 5, "diversify": None, "recency": True}


def candidate(score: float, *, served: bool = False) -> dict[str, object]:
    return {"versionId": f"ver_{score}", "id": f"mem_{score}", "score": score, "served": served}


def test_each_reason_a_candidate_was_not_served() -> None:
    found = outcomes(
        [
            candidate(0.5, served=True),
            {**candidate(0.1), "belowFloor": True},
            {**candidate(0.2), "belowTrust": True},
            {**candidate(0.3), "rerankRank": 9},
            candidate(0.6),  # above a served one: passed over after scoring
            candidate(0.7),  # above a served one, and a served memory may update it
            candidate(0.4),
        ],
        {**PARAMS, "minTrust": 0.6},
        {"ver_0.7": ["mem_0.5"]},
    )
    assert found[0] == Outcome("served")
    assert found[1].label == "under the score floor"
    assert found[2] == Outcome(
        "under the trust floor", "it carries less trust than the recall's minTrust (0.6)"
    )
    assert found[3].because == "the rerank placed it 9th, past the limit of 5"
    assert "scored higher than a served result" in found[4].because
    assert "the diversity pass (MMR" in found[4].because
    assert "newer-first ordering" in found[4].because
    assert found[5].because.endswith("was served in its place (mem_0.5)")
    assert found[6] == Outcome("not in the top results", "ranked past the limit of 5")
