"""What the learned ranker serves, as ``GET /ranker`` shows it: per container the model in
use (its own, the global one, or none) with its figures and weights, the feedback counted and
the latest decisions."""

from __future__ import annotations

from typing import Any

from ...projections.ranker.projection import RankerProjection


def container_json(projection: RankerProjection, tag: str) -> dict[str, Any]:
    digests = projection.serving_digests()
    own = digests.get(tag)
    return {
        "containerTag": tag,
        "serving": "container" if own else ("global" if digests.get(None) else "none"),
        "model": model_json(projection, own or digests.get(None)),
        "feedback": projection.feedback_counts(tag),
        "decisions": [
            {
                "seq": d.seq,
                "at": d.at,
                "kind": d.kind,
                "digest": d.digest,
                "other": d.other,
                "metrics": d.body.get("metrics", {}),
                **({"reason": d.body["reason"]} if "reason" in d.body else {}),
            }
            for d in projection.decisions(tag)
        ],
    }


def model_json(projection: RankerProjection, digest: str | None) -> dict[str, Any] | None:
    if digest is None:
        return None
    row = projection.model_row(digest)
    if row is None:
        return {"digest": digest, "reproduced": False}
    trained = row.trained
    return {
        "digest": digest,
        "containerTag": trained.container_tag,
        "seq": row.seq,
        "trainedAt": row.at,
        "reproduced": row.reproduced,
        "throughSeq": trained.through_seq,
        "splitSeq": trained.split_seq,
        "prior": trained.prior,
        "examples": trained.examples,
        "pairs": trained.pairs,
        "propensityEta": trained.eta,
        "propensitySwaps": trained.propensity_swaps,
        "metrics": trained.metrics,
        "weights": row.model.explained(),
    }
