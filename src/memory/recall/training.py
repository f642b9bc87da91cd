"""Training the learned ranker from the log's feedback, and deciding what serves.

A training run (``train``) takes the feedback applied so far. Of each container's labelled
recalls, the newest ``VALIDATION`` share is held out; the rest train a model pulled towards the
global one (trained first, from every container's training share). A model is logged as
``ranker.trained`` with its digest and figures, and promoted (``ranker.promoted``) only when,
on the held-out recalls, it beats what serves now by more than twice the standard error of the
difference (the inverse-propensity DCG@5 of ``projections/ranker/evaluation.py``).

A promoted model is watched (``watch``): once ``LIVE_MIN`` labelled recalls were served by it,
their DCG@5 as shown is compared with that of the same number served just before it; when it
is lower by more than twice the standard error, it is rolled back (``ranker.rolled_back``) to
what it replaced.

A thread (``Training``) runs both in the background, as feedback arrives (every
``MNEMOLOG_RANKER_TRAIN_EVERY`` events counted in a container); ``POST /ranker/train`` runs a
training at once.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence

import msgspec
import numpy as np

from ...eventlog import Actor, Draft
from ...eventlog.events import RankerPromoted, RankerRolledBack, RankerTrained
from ...projections.ranker import kernels
from ...projections.ranker.evaluation import Comparison, compare, shown_dcg
from ...projections.ranker.examples import Example, counted_only, pairs_of
from ...projections.ranker.model import Model, train
from ...projections.ranker.projection import RankerProjection
from ...projections.ranker.propensity import NONE as NO_CORRECTION
from ...projections.ranker.propensity import Propensity, estimate
from ..record import Recorder

log = logging.getLogger(__name__)

VALIDATION = 0.2  # the newest share of a container's labelled recalls, held out
MIN_EXAMPLES = 20  # labelled recalls a model needs, training and held-out share together
LIVE_MIN = 30  # labelled recalls served by a promoted model before it is judged live
POLL_S = 2.0
TRAINER = Actor(agent_id="mnemolog-ranker", protocol="cli")


class Trained(msgspec.Struct, frozen=True, kw_only=True):
    """What one training did for one container (None: the global model)."""

    container_tag: str | None
    digest: str | None  # None: too few labelled recalls to train
    promoted: bool
    examples: int
    metrics: dict[str, float]
    reason: str


class Trainer:
    def __init__(
        self,
        *,
        recorder: Recorder,
        ranker: RankerProjection,
        standing: Callable[[str], float],
        train_every: int = 50,
    ) -> None:
        self.train_every = train_every  # feedback events in a container that ask for training
        # Off, uses weigh 1 wherever they were shown (for the measure of what the correction
        # buys, ``bench/feedback.py --no-propensity``).
        self.correct_position = True
        self._recorder = recorder
        self._ranker = ranker
        self._standing = standing
        self._lock = threading.Lock()  # one training at a time
        # container -> the feedback seq its last training saw (a restart does not train again)
        self._trained_at: dict[str | None, int] = ranker.trained_through()

    def train(self, container_tag: str | None = None) -> list[Trained]:
        """Train the global model and each container's (or only ``container_tag``'s), now."""
        with self._lock:
            self._recorder.apply_all()
            through = self._recorder.runner.position()
            everything = self._ranker.examples(None, through)
            standing = self._standings(everything)
            counted = [counted_only(e, lambda a: standing.get(a, 0.0)) for e in everything]
            propensity = (
                estimate(s for e in counted for s in e.shown())
                if self.correct_position
                else NO_CORRECTION
            )
            results: list[Trained] = []
            drafts: list[Draft] = []
            prior = self._fit(None, counted, None, standing, propensity, through, drafts, results)
            tags = sorted({e.container_tag for e in counted if e.container_tag is not None})
            for tag in tags if container_tag is None else [container_tag]:
                own = [e for e in counted if e.container_tag == tag]
                self._fit(tag, own, prior, standing, propensity, through, drafts, results)
                self._trained_at[tag] = through
            if drafts:
                self._recorder.record(drafts)
            return results

    def _fit(
        self,
        tag: str | None,
        examples: Sequence[Example],
        prior: Model | None,
        standing: dict[str, float],
        propensity: Propensity,
        through: int,
        drafts: list[Draft],
        results: list[Trained],
    ) -> Model | None:
        labelled = [e for e in examples if e.used or e.grades or e.examined]
        if len(labelled) < MIN_EXAMPLES:
            why = f"{len(labelled)} labelled recalls; a model needs {MIN_EXAMPLES}"
            results.append(_untrained(tag, len(labelled), why))
            return None
        cut = len(labelled) - max(1, int(len(labelled) * VALIDATION))
        split_seq = labelled[cut - 1].seq
        pairs = pairs_of(labelled[:cut], propensity, lambda agent: standing.get(agent, 0.0))
        if len(pairs.weight) == 0:
            why = "no result was preferred to another in the training share"
            results.append(_untrained(tag, len(labelled), why))
            return None
        model = train(pairs, through_seq=through, prior=prior)
        serving = self._serving(tag)
        held_out = labelled[cut:]
        against = compare(held_out, model, serving, propensity)
        metrics = against.figures()
        self._ranker.hand_over(model)
        drafts.append(
            Draft(
                TRAINER,
                RankerTrained(
                    container_tag=tag,
                    digest=model.digest,
                    through_seq=through,
                    split_seq=split_seq,
                    prior=None if prior is None else prior.digest,
                    standing=standing,
                    eta=propensity.eta,
                    propensity_swaps=propensity.swaps,
                    examples=len(labelled),
                    pairs=len(pairs.weight),
                    metrics=metrics,
                ),
            )
        )
        promote = against.better and (serving is None or serving.digest != model.digest)
        if promote:
            drafts.append(
                Draft(
                    TRAINER,
                    RankerPromoted(
                        container_tag=tag,
                        digest=model.digest,
                        replaced=None if serving is None else serving.digest,
                        metrics=metrics,
                    ),
                )
            )
        results.append(
            Trained(
                container_tag=tag,
                digest=model.digest,
                promoted=promote,
                examples=len(labelled),
                metrics=metrics,
                reason=_why(against, promote),
            )
        )
        return model

    def _serving(self, tag: str | None) -> Model | None:
        digests = self._ranker.serving_digests()
        digest = digests.get(tag)
        return None if digest is None else self._ranker.model(digest)

    def _standings(self, examples: Sequence[Example]) -> dict[str, float]:
        agents = sorted(
            {a for e in examples for a in e.examined}
            | {a for e in examples for a in e.used.values()}
            | {a for e in examples for _, a in e.grades.values()}
        )
        return {agent: round(self._standing(agent), 6) for agent in agents}

    def has_feedback(self) -> bool:
        """Whether any container has feedback (its recalls run the learned stage)."""
        return self._ranker.has_feedback()

    def due(self) -> list[str]:
        """The containers with ``train_every`` feedback events counted since their last
        training."""
        out = []
        for tag in self._ranker.containers():
            if self._ranker.counted_since(tag, self._trained_at.get(tag, 0)) >= self.train_every:
                out.append(tag)
        return out

    def watch(self) -> list[str]:
        """Roll back each promoted model whose live figures fell; the containers rolled back."""
        rolled: list[str] = []
        drafts: list[Draft] = []
        for tag, digest in self._ranker.serving_digests().items():
            if tag is None:
                continue
            row = self._ranker.promotion(tag)
            if row is None:
                continue
            promoted_seq, replaced = row
            served = self._ranker.examples(tag, 2**62, after_seq=promoted_seq, ranker=digest)
            if len(served) < LIVE_MIN:
                continue
            before = self._ranker.labelled_before(tag, promoted_seq, len(served))
            if len(before) < LIVE_MIN:
                continue
            propensity = self._ranker.propensity_of(digest)
            live = _live(served, before, propensity)
            if live.difference < -2.0 * live.standard_error:
                drafts.append(
                    Draft(
                        TRAINER,
                        RankerRolledBack(
                            container_tag=tag,
                            digest=digest,
                            restored=replaced,
                            reason=(
                                f"live DCG@5 {live.new:.4f} over {live.examples} recalls against"
                                f" {live.old:.4f} before it"
                            ),
                            metrics=live.figures(),
                        ),
                    )
                )
                rolled.append(tag)
        if drafts:
            self._recorder.record(drafts)
        return rolled


def _live(served: Sequence[Example], before: Sequence[Example], p: Propensity) -> Comparison:
    """The DCG@5 of what was shown, by the model against before it (two samples)."""
    a = [shown_dcg(e, p) for e in served]
    b = [shown_dcg(e, p) for e in before]
    spread = math.sqrt(np.var(a, ddof=1) / len(a) + np.var(b, ddof=1) / len(b))
    return Comparison(
        examples=len(a),
        new=float(np.mean(a)),
        old=float(np.mean(b)),
        difference=float(np.mean(a) - np.mean(b)),
        standard_error=float(spread),
    )


def _untrained(tag: str | None, examples: int, reason: str) -> Trained:
    return Trained(
        container_tag=tag,
        digest=None,
        promoted=False,
        examples=examples,
        metrics={},
        reason=reason,
    )


def _why(against: Comparison, promoted: bool) -> str:
    if promoted:
        return (
            f"promoted: DCG@5 {against.new:.4f} against {against.old:.4f} on"
            f" {against.examples} held-out recalls"
        )
    return (
        f"kept what serves: a difference of {against.difference:+.4f} (standard error"
        f" {against.standard_error:.4f}) on {against.examples} held-out recalls"
    )


class Training:
    """The background thread: trains the containers that are due and watches what serves."""

    def __init__(self, trainer: Trainer) -> None:
        self._trainer = trainer
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ranker-training", daemon=True)

    def start(self) -> None:
        if self._trainer.train_every > 0:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        warm = False
        while True:
            try:
                if not warm and self._trainer.has_feedback():
                    # The learned stage's loops are compiled (or loaded) here, at once, not in
                    # the first recall that needs them.
                    kernels.warm()
                    warm = True
            except Exception:  # tried again at the next poll; a recall would compile them
                log.exception("compiling the learned stage failed")
            if self._stop.wait(POLL_S):
                return
            try:
                due = self._trainer.due()
                if due:
                    self._trainer.train()
                self._trainer.watch()
            except Exception:  # a failed run is retried at the next poll
                log.exception("ranker training failed")
