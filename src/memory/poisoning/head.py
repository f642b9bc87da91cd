"""The poisoning detector as a write sees it: the rules, and a learned head on the text's own
embedding where this build ships one for the store's embedder.

Why a head beside the rules: rules catch what their authors thought of. On attack batches
written apart from the project's corpora the rules flagged 51% to 56%, while a logistic
regression over the write's embedding and the rules' reasons, fitted to the project's corpora,
flagged about 70% of the same batches at the same benign budget (``bench/poisoning_head.py``).
An embedding carries what a text is about (an order to the reading agent) whatever its words,
which is what paraphrases, other languages and buried instructions keep.

The head reads the vector the write already made, so it costs a dot product. A head belongs
to one embedder identity (its vectors mean nothing to another): a store whose embedder has no
head here is judged by the rules alone, and says so in ``Detector.name``. The heads are JSON
files in ``data/poisoning_heads/``, made by ``tools/train_poisoning_head.py`` from the labelled
corpora, deterministically; their cut is the score that flags 1% of the training benign texts
held out in cross-validation.

Where a head ships: a text no rule flags is flagged when its score reaches the head's cut
(reason ``learned_instruction``, the score as evidence); a rule hit stands unless the head
leans benign, under its balanced decision boundary (``VETO``, 0.5), which clears the rules'
near misses the head learned from the benign corpora. Without a head, or without a vector,
the rules decide.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib import resources
from typing import Final

import msgspec
import numpy as np
from numpy.typing import NDArray

from ...embedding.identity import EmbedderIdentity
from .evidence import Evidence
from .rules import DETECTOR, REASONS, Verdict, detect

__all__ = ["LEARNED", "Detector", "Head", "head_features", "load_head"]

LEARNED: Final = "learned_instruction"
HEADS_PACKAGE = "mnemolog.memory"
HEADS_DIR = "data/poisoning_heads"
HEAD_FORMAT = 1
# A rule hit stands unless the head leans benign: below its balanced decision boundary.
VETO: Final = 0.5


class Head(msgspec.Struct, frozen=True, kw_only=True):
    """A logistic regression over ``[vector, rule reasons]``: flagged at ``score >= cut``."""

    format: int
    version: int
    embedder: EmbedderIdentity
    reasons: list[str]  # the rule reasons that are features, in this order
    weights: list[float]  # one per vector dimension, then one per reason
    bias: float
    cut: float
    trained_on: dict[str, int]  # texts per labelled set

    @property
    def name(self) -> str:
        return f"{self.embedder.name}/{self.version}"


class _Scorer:
    """A head's weights laid out for one dot product per text (a write's hot path)."""

    def __init__(self, head: Head) -> None:
        dimension = head.embedder.dimension
        self._vector = np.asarray(head.weights[:dimension], dtype=np.float32)
        self._reasons = dict(zip(head.reasons, head.weights[dimension:], strict=True))
        self._bias = head.bias

    def __call__(self, vector: NDArray[np.floating], verdict: Verdict) -> float:
        z = float(np.dot(self._vector, vector)) + self._bias
        z += sum(self._reasons.get(r, 0.0) for r in verdict.reasons)
        return 1.0 / (1.0 + math.exp(-z))


def head_features(
    vector: NDArray[np.floating], verdict: Verdict, reasons: Sequence[str]
) -> NDArray[np.float64]:
    """A text's features: its unit vector, then 1 for each of ``reasons`` the rules gave."""
    found = np.array([1.0 if r in verdict.reasons else 0.0 for r in reasons])
    return np.concatenate([np.asarray(vector, dtype=np.float64), found])


def head_file(identity: EmbedderIdentity) -> str:
    return f"{identity.name}-{identity.digest[:16]}.json"


def load_head(identity: EmbedderIdentity) -> Head | None:
    """The head this build ships for ``identity``, if any."""
    folder = resources.files(HEADS_PACKAGE).joinpath(HEADS_DIR)
    path = folder.joinpath(head_file(identity))
    if not path.is_file():
        return None
    head = msgspec.json.decode(path.read_bytes(), type=Head)
    if head.format != HEAD_FORMAT or head.embedder != identity:
        return None
    if len(head.weights) != identity.dimension + len(head.reasons):
        return None
    return head


class Detector:
    """The rules, and the head for the store's embedder when there is one."""

    def __init__(self, head: Head | None) -> None:
        self.head = head
        self._score = None if head is None else _Scorer(head)
        # Named in each ``memory.flagged`` event: which rules, and which head, judged.
        self.name = DETECTOR if head is None else f"{DETECTOR}+{head.name}"

    @property
    def reads_vectors(self) -> bool:
        """Whether a verdict uses the text's vector: only then is one worth making for it."""
        return self.head is not None

    @classmethod
    def for_embedder(cls, identity: EmbedderIdentity) -> Detector:
        return cls(load_head(identity))

    def verdict(self, text: str, vector: NDArray[np.floating] | None) -> Verdict:
        """Whether ``text`` (with ``vector``, its embedding) is flagged, and why.

        With a head and a vector: a text no rule flags is flagged when its score reaches the
        head's cut (reason ``learned_instruction``); a rule hit stands unless the head leans
        benign (score under ``VETO``), which clears the rules' near misses the head learned
        from the benign corpora. Without, the rules decide."""
        ruled = msgspec.structs.replace(detect(text), detector=self.name)
        if self.head is None or self._score is None or vector is None:
            return ruled
        score = self._score(vector, ruled)
        if ruled.flagged:
            if score >= VETO:
                return ruled
            return Verdict(flagged=False, reasons=[], evidence=[], detector=self.name)
        if score < self.head.cut:
            return ruled
        return Verdict(
            flagged=True,
            reasons=[LEARNED],
            evidence=[Evidence(reason=LEARNED, span=f"score {score:.3f} >= {self.head.cut:.3f}")],
            detector=self.name,
        )

    def flags_of(
        self,
        texts: Sequence[str],
        vectors: Sequence[NDArray[np.floating] | None] | None = None,
    ) -> list[str]:
        """The reasons any of ``texts`` is flagged for (each with its vector, if given), in
        the order of ``REASONS``, each once."""
        given = list(vectors) if vectors is not None else [None] * len(texts)
        found = {
            reason
            for text, vector in zip(texts, given, strict=True)
            for reason in self.verdict(text, vector).reasons
        }
        return [r for r in REASONS if r in found]
