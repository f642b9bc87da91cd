"""Concurrent embeddings share model runs, and each caller gets exactly its own vectors."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from mnemolog.embedding import EmbedderIdentity, QualityEmbedder
from mnemolog.embedding.coalescing import CoalescingEmbedder
from mnemolog.errors import InvalidInput


class Counting:
    """The real quality model, counting its runs; a run blocks until ``gate`` is set."""

    def __init__(self, inner: QualityEmbedder) -> None:
        self.inner = inner
        self.runs: list[int] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    @property
    def identity(self) -> EmbedderIdentity:
        return self.inner.identity

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.entered.set()
        self.gate.wait()
        self.runs.append(len(texts))
        return self.inner.embed(texts)


def test_waiting_requests_share_one_run_and_get_their_own_vectors(
    quality: QualityEmbedder,
) -> None:
    counting = Counting(quality)
    embedder = CoalescingEmbedder(counting)
    texts = [[f"fact number {i} about the garden", f"another {i}"] for i in range(8)]
    results: dict[int, npt.NDArray[np.float32]] = {}
    try:
        counting.gate.clear()  # the first run waits, so the others pile up behind it
        threads = [
            threading.Thread(target=lambda i=i: results.__setitem__(i, embedder.embed(texts[i])))
            for i in range(8)
        ]
        threads[0].start()
        assert counting.entered.wait(30)
        for thread in threads[1:]:
            thread.start()
        while len(embedder._pending) < 7:
            threading.Event().wait(0.001)  # until the seven wait behind the blocked run
        counting.gate.set()
        for thread in threads:
            thread.join()
    finally:
        embedder.close()
    assert sum(counting.runs) == 16
    assert len(counting.runs) <= 2  # the first request alone, then the seven that waited
    for i in range(8):
        np.testing.assert_allclose(results[i], quality.embed(texts[i]), atol=1e-5)


def test_a_bad_text_fails_only_its_own_caller(quality: QualityEmbedder) -> None:
    embedder = CoalescingEmbedder(quality)
    try:
        with pytest.raises(InvalidInput):
            embedder.embed(["fine", "bad \ud800 surrogate"])
        assert embedder.embed(["fine"]).shape == (1, 384)
        assert embedder.embed([]).shape == (0, 384)
        assert embedder.identity == quality.identity
    finally:
        embedder.close()
