"""Concurrent embedding requests coalesced into one model run.

A transformer costs far less per text in a batch than one text at a time (MiniLM here: ~5 ms
for one short text, ~12 ms for eight), so when several writers or searches embed at once
their texts should share a run. One worker thread runs the model; while it runs, new requests
queue, and the next run takes all of them. A lone request pays only a thread hand-off.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from .identity import EmbedderIdentity
from .port import Embedder, check_texts

MAX_TEXTS_PER_RUN = 256  # the inner embedder still batches by padded tokens within a run


class _Request:
    __slots__ = ("done", "error", "queries", "result", "texts")

    def __init__(self, texts: Sequence[str], *, queries: bool) -> None:
        self.texts = texts
        self.queries = queries  # queries and stored texts are embedded in separate runs
        self.done = threading.Event()
        self.result: npt.NDArray[np.float32] | None = None
        self.error: BaseException | None = None


class CoalescingEmbedder:
    """An ``Embedder`` that runs ``inner`` for all requests pending at once."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._pending: list[_Request] = []
        self._wake = threading.Condition()
        self._closed = False
        self._worker = threading.Thread(target=self._run, name="mnemolog-embedder", daemon=True)
        self._worker.start()

    @property
    def identity(self) -> EmbedderIdentity:
        return self._inner.identity

    @property
    def inner(self) -> Embedder:
        return self._inner

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._submit(texts, queries=False)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._submit(texts, queries=True)

    def _submit(self, texts: Sequence[str], *, queries: bool) -> npt.NDArray[np.float32]:
        if not texts:
            return self._inner.embed_queries(texts) if queries else self._inner.embed(texts)
        check_texts(texts)  # here, so that one caller's bad text never fails a shared run
        request = _Request(list(texts), queries=queries)
        with self._wake:
            if self._closed:
                raise RuntimeError("the embedder is closed")
            self._pending.append(request)
            self._wake.notify()
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.result is not None
        return request.result

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._worker.join()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._closed:
                    self._wake.wait()
                if not self._pending:
                    return
                batch = self._take()
            self._serve(batch)

    def _take(self) -> list[_Request]:
        """The oldest requests of the oldest one's kind (queries or stored texts), up to
        ``MAX_TEXTS_PER_RUN`` texts (always at least one)."""
        kind = self._pending[0].queries
        taken: list[_Request] = []
        kept: list[_Request] = []
        count = 0
        for request in self._pending:
            fits = not taken or count + len(request.texts) <= MAX_TEXTS_PER_RUN
            if request.queries == kind and fits and len(kept) == 0:
                taken.append(request)
                count += len(request.texts)
            else:
                kept.append(request)
        self._pending = kept
        return taken

    def _serve(self, batch: list[_Request]) -> None:
        texts = [text for r in batch for text in r.texts]
        try:
            if batch[0].queries:
                vectors = self._inner.embed_queries(texts)
            else:
                vectors = self._inner.embed(texts)
        except BaseException as exc:
            if len(batch) > 1:  # find whose texts failed: each request alone
                for request in batch:
                    self._serve([request])
                return
            batch[0].error = exc
            batch[0].done.set()
            return
        start = 0
        for request in batch:
            request.result = vectors[start : start + len(request.texts)]
            start += len(request.texts)
            request.done.set()
