"""Events of the learned ranker: a model trained, promoted, rolled back.

They carry a model's digest, what it was trained from and its offline figures, never its
weights: the ranker projection trains the model again from the log's prefix (the examples and
feedback up to ``through_seq``, with the standing recorded here) and must arrive at the same
digest. ``container_tag`` None is the global model every container's is pulled towards.
"""

from __future__ import annotations

from .base import Event


class RankerTrained(Event, frozen=True, kw_only=True, tag="ranker.trained"):
    container_tag: str | None
    digest: str
    through_seq: int  # the last seq of the feedback it saw
    # It learned from the recalls up to this seq; the later ones (to ``through_seq``) are
    # the examples it was measured on, and were not trained on.
    split_seq: int
    prior: str | None = None  # the digest of the model it was pulled towards
    # The weight each agent's feedback had (its trust, or 0: quarantined, rolled back, under
    # the trust floor): so that training it again does not depend on later trust.
    standing: dict[str, float] = {}
    eta: float = 0.0  # the examination propensity's exponent (0: no correction)
    propensity_swaps: int = 0
    examples: int = 0
    pairs: int = 0
    # Offline figures on the newest examples it was not trained on: the IPW-estimated DCG@5
    # of used results under this model and under the one serving, their difference and its
    # standard error.
    metrics: dict[str, float] = {}


class RankerPromoted(Event, frozen=True, kw_only=True, tag="ranker.promoted"):
    container_tag: str | None
    digest: str
    replaced: str | None = None  # the digest serving before (None: the order without a model)
    metrics: dict[str, float] = {}


class RankerRolledBack(Event, frozen=True, kw_only=True, tag="ranker.rolled_back"):
    container_tag: str | None
    digest: str  # the model taken out of service
    restored: str | None = None  # what serves again (None: the order without a model)
    reason: str
    metrics: dict[str, float] = {}
