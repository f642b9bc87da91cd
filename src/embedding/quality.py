"""The quality tier: a pinned transformer encoder (e5-small-v2 int8), run by onnxruntime.

``encoders.py`` says which encoders exist and where their files are; this runs one. The model
file's sha256 is checked on the exact bytes handed to onnxruntime, so a changed file is refused
before anything runs it. Nothing is downloaded: the vocabulary ships with mnemolog
(``vocab.py``), and the model comes from the model cache or an installed package.

Pipeline: ``[CLS] prefix text [SEP]`` (at most 256 tokens) → the ONNX model →
``last_hidden_state`` → mean over the attention mask → L2 normalisation → float32 ``(n, 384)``.
A search's query gets the encoder's query prefix, everything stored its passage prefix.
Batches are padded only to their longest member (the model's own ``tokenizer.json`` would pad
every text to 512 tokens: it is not used).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from ..errors import EmbedderError
from ..settings import default_model_cache
from .encoders import E5_SMALL, EncoderSpec
from .identity import EmbedderIdentity
from .port import check_texts
from .vocab import bert_tokenizer, load_vocab

MODEL_SHA256 = E5_SMALL.sha256
QUALITY_NAME = E5_SMALL.name
QUALITY_DIMENSION = E5_SMALL.dimension
MAX_TOKENS = E5_SMALL.max_tokens
DEFAULT_THREADS = 2
DEFAULT_BATCH_SIZE = 32
DEFAULT_BATCH_TOKENS = 2048

_OUTPUT = "last_hidden_state"


def read_verified(path: Path, spec: EncoderSpec = E5_SMALL) -> bytes:
    """The model file's bytes, refused unless their sha256 is the pinned one."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise EmbedderError(
            f"the {spec.name} encoder is not installed: no {path}. {spec.install_hint()}"
        ) from None
    except OSError as exc:
        raise EmbedderError(f"cannot read the embedding model {path}: {exc}") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != spec.sha256:
        raise EmbedderError(
            f"refusing to load the embedding model {path}: its sha256 is {digest}, "
            f"expected {spec.sha256}. The file is damaged or not the pinned {spec.name} "
            f"export; {spec.install_hint()}"
        )
    return raw


class QualityEmbedder:
    """One pinned encoder (e5-small-v2 int8 unless told another), 384-d. Thread-safe.

    A run of the model takes at most ``batch_size`` texts and ``batch_tokens`` padded tokens.

    The file is verified when the embedder is made; the onnxruntime session is created on
    first use (from bytes verified again), so an embedder kept only for its identity, as the
    fast tier's source, costs no model memory.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        spec: EncoderSpec = E5_SMALL,
        model_cache: Path | None = None,
        threads: int = DEFAULT_THREADS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
    ) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        if batch_size < 1 or batch_tokens < spec.max_tokens:
            raise ValueError(
                f"batch_size must be at least 1, batch_tokens at least {spec.max_tokens}"
            )
        self.spec = spec
        cache = model_cache if model_cache is not None else default_model_cache()
        self.model_path = model_path if model_path is not None else spec.locate(cache)
        read_verified(self.model_path, spec)
        self.identity = EmbedderIdentity(spec.name, spec.dimension, spec.digest)
        self.threads = threads
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.vocab = load_vocab()
        self.tokenizer = bert_tokenizer(self.vocab)
        self.tokenizer.enable_truncation(spec.max_tokens)
        self._session: Any = None
        self._workers: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def session(self) -> Any:
        """The onnxruntime session, created on first call."""
        with self._lock:
            if self._session is None:
                raw = read_verified(self.model_path, self.spec)
                # Run alone, a text is too small to split well across threads: the
                # parallelism is across texts, one thread each.
                threads = 1 if self.spec.one_text_per_run else self.threads
                self._session = _open_session(raw, threads)
            return self._session

    def token_ids(self, texts: Sequence[str], prefix: str = "") -> list[list[int]]:
        """``[CLS] prefix text [SEP]`` ids of each text, truncated to the encoder's limit."""
        check_texts(texts)
        return [e.ids for e in self.tokenizer.encode_batch([prefix + t for t in texts])]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit float32 vectors of texts to store, shape ``(len(texts), 384)``."""
        return self._encode(self.token_ids(texts, self.spec.passage_prefix))

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit float32 vectors of search queries, shape ``(len(texts), 384)``."""
        return self._encode(self.token_ids(texts, self.spec.query_prefix))

    def _encode(self, ids: list[list[int]]) -> npt.NDArray[np.float32]:
        """Runs the model over token ids: batched by token length, or one text per run on
        ``threads`` workers of one onnxruntime thread each for a model whose vectors would
        depend on their batch (longest first, so the workers finish together)."""
        out = np.zeros((len(ids), self.spec.dimension), dtype=np.float32)
        if self.spec.one_text_per_run:
            order = sorted(range(len(ids)), key=lambda i: (-len(ids[i]), i))
            vectors = self._pool().map(self._alone, [ids[i] for i in order])
            for i, vector in zip(order, vectors, strict=True):
                out[i] = vector
            return _normalise(out)
        for chosen in self._batches(ids):
            width = max(len(ids[i]) for i in chosen)
            input_ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, i in enumerate(chosen):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            out[chosen] = self.mean_pooled(input_ids, mask)
        return _normalise(out)

    def _alone(self, ids: list[int]) -> npt.NDArray[np.float32]:
        row = np.asarray([ids], dtype=np.int64)
        pooled: npt.NDArray[np.float32] = self.mean_pooled(row, np.ones_like(row))[0]
        return pooled

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(self.threads, thread_name_prefix="embed")
            return self._workers

    def _batches(self, ids: list[list[int]]) -> list[list[int]]:
        """Indices grouped by similar length, each group within both batch limits.

        Texts of similar length waste less work on padding, and the model's output for a text
        does not depend on what else is in its batch (checked by the tests). The token limit
        bounds memory: onnxruntime keeps the peak of its arena for the session's lifetime,
        and 32 texts of 256 tokens in one run took ~1.4 GiB here, against ~0.5 GiB at 2,048.
        """
        batches: list[list[int]] = []
        current: list[int] = []
        for i in sorted(range(len(ids)), key=lambda i: len(ids[i])):
            rows = len(current) + 1
            if current and (rows > self.batch_size or rows * len(ids[i]) > self.batch_tokens):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def mean_pooled(
        self, input_ids: npt.NDArray[np.int64], attention_mask: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float32]:
        """Mean of ``last_hidden_state`` over the attention mask, not normalised."""
        feeds = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        try:
            (hidden,) = self.session().run([_OUTPUT], feeds)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderError(f"the embedding model failed: {exc}") from exc
        weights = attention_mask.astype(np.float32)[:, :, None]
        summed = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        counts = np.maximum(weights.sum(axis=1), 1.0)
        pooled: npt.NDArray[np.float32] = (summed / counts).astype(np.float32)
        return pooled


def _open_session(model: bytes, threads: int) -> Any:
    ort.disable_telemetry_events()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if threads == 1:  # spin-waiting burnt the cores the other workers needed
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: no warnings on stderr at every start
    # An int8 model's matrix products are exact on a CPU with VNNI or AMX; on one with AVX2
    # alone onnxruntime's default kernel saturates its sums, and e5-small-v2 int8 vectors then
    # differed (cosine 0.998) from those of the machines the thresholds were derived on: a
    # replay on another machine must embed the same vector. Ignored where exact already.
    options.add_session_config_entry("session.x64quantprecision", "1")
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise EmbedderError(f"onnxruntime cannot load the embedding model: {exc}") from exc


def _normalise(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit
