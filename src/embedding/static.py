"""The fast tier: static token vectors distilled from the quality model (model2vec).

A text's vector is the mean of its tokens' vectors, L2-normalised: no neural network runs, so
it costs a fraction of a millisecond, and its vectors take ~31 MiB. The vectors are distilled once
from the quality model (``distill.py``, ~15-40 s) and cached in a folder in model2vec's format
(``StaticModel.save_pretrained``); a later start reads that folder itself (``read_model``),
never the network.

The cache folder is built beside its final place and renamed into it, so a crash mid-build
leaves no half cache. ``manifest.json``, written last, records the sha256 of every file; a
cache that fails it is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec
import numpy as np
import numpy.typing as npt
from safetensors import safe_open
from tokenizers import Tokenizer

from ..errors import EmbedderError
from .identity import EmbedderIdentity
from .port import check_texts
from .quality import QualityEmbedder
from .static_distill import PCA_DIMS, SIF_COEFFICIENT, SIGN_ROWS, ZIPF_OFFSET, distil
from .vocab import VOCAB_SHA256, VOCAB_SIZE, bert_tokenizer, load_vocab, notice_of, vocab_dir

logger = logging.getLogger(__name__)

RECIPE = "mnemolog-static/1"  # bump when anything in distill.py changes the vectors
STATIC_SUFFIX = f"-static{PCA_DIMS}"
STATIC_MAX_TOKENS = 512
SERIAL_TOKENIZE_MAX = 8  # up to this many texts are tokenized on the calling thread
MANIFEST = "manifest.json"
_STALE_BUILD_SECONDS = 3600


class Manifest(msgspec.Struct, frozen=True):
    """What a cache folder holds: the identity it was built for and each file's sha256."""

    identity: EmbedderIdentity
    recipe: dict[str, str | int | float]
    files: dict[str, str]
    build_seconds: float


def recipe(quality_digest: str) -> dict[str, str | int | float]:
    """Everything that decides the static vectors, and nothing measured from them."""
    return {
        "recipe": RECIPE,
        "base_model": quality_digest,
        "vocab": VOCAB_SHA256,
        "pca_dims": PCA_DIMS,
        "sif_coefficient": SIF_COEFFICIENT,
        "zipf_offset": ZIPF_OFFSET,
        "sign_rows": SIGN_ROWS,
        "max_tokens": STATIC_MAX_TOKENS,
    }


def static_name(base_name: str) -> str:
    """The fast tier's name for the encoder it is distilled from."""
    return base_name + STATIC_SUFFIX


def static_identity(base: EmbedderIdentity) -> EmbedderIdentity:
    """The fast tier's identity: a digest of its recipe, the same on every machine."""
    canonical = json.dumps(recipe(base.digest), sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return EmbedderIdentity(static_name(base.name), PCA_DIMS, digest)


class StaticEmbedder:
    """Mean of static token vectors (256-d). Thread-safe.

    ``from_cache`` tells whether this instance was loaded from an existing cache folder
    (True) or distilled just now (False).
    """

    def __init__(
        self, model: StaticVectors, identity: EmbedderIdentity, *, folder: Path, from_cache: bool
    ) -> None:
        self.model = model
        self.identity = identity
        self.folder = folder
        self.from_cache = from_cache
        cls_id = model.tokenizer.token_to_id("[CLS]")
        empty = np.asarray(model.embedding[cls_id if cls_id is not None else 0], np.float32)
        norm = float(np.linalg.norm(empty))
        if cls_id is None or not norm > 0:
            raise EmbedderError(f"the static model in {folder} has no vector for empty text")
        # A text with no known token (empty, or only unknown characters) gets the vector of
        # the empty text, as the quality tier does, never a zero row.
        self._empty = empty / norm
        # Truncation as model2vec applies it: the tokenizer stops at ``max_length`` tokens and
        # the text is first cut to that many times the median token length in characters.
        model.tokenizer.enable_truncation(model.max_length)
        self._max_chars = model.max_length * model.median_token_length

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """A query's vector is made as a stored text's: static vectors know no prefix."""
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit float32 vectors, shape ``(len(texts), 256)``."""
        check_texts(texts)
        if len(texts) == 0:
            return np.zeros((0, PCA_DIMS), dtype=np.float32)
        vectors = self._means(texts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        blank = norms[:, 0] <= 1e-12
        out: npt.NDArray[np.float32] = (vectors / np.where(blank[:, None], 1.0, norms)).astype(
            np.float32
        )
        out[blank] = self._empty
        return out

    def _means(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The mean token vector of each text, computed exactly as ``StaticModel.encode``
        does (same truncation, unknown tokens dropped, texts of equal token count averaged
        together), so that a vector never depends on which of the two made it.

        Called directly because ``encode`` re-configures the shared tokenizer and builds a
        progress bar on every call, and always tokenizes on the tokenizer's thread pool: for
        the one text of a search, waking that pool cost several times the tokenizing.
        """
        model = self.model
        cut = [text[: self._max_chars] for text in texts]
        tokenizer = model.tokenizer
        if len(cut) <= SERIAL_TOKENIZE_MAX:
            encodings = [tokenizer.encode(text, add_special_tokens=False) for text in cut]
        else:
            encodings = tokenizer.encode_batch_fast(cut, add_special_tokens=False)
        unknown = model.unk_token_id
        ids = [[i for i in e.ids if i != unknown] for e in encodings]
        out = np.zeros((len(ids), PCA_DIMS), dtype=np.float32)
        by_length: dict[int, list[int]] = {}
        for row, token_ids in enumerate(ids):
            if token_ids:
                by_length.setdefault(len(token_ids), []).append(row)
        for rows in by_length.values():
            matrix = np.array([ids[row] for row in rows], dtype=np.int64)
            out[rows] = model.embedding[matrix].mean(axis=1)
        return out


def cache_folder(cache_dir: Path, identity: EmbedderIdentity) -> Path:
    """The folder a static model with this identity is cached in."""
    return cache_dir / f"{identity.name}-{identity.digest[:16]}"


def load_or_build_static(cache_dir: Path, quality: QualityEmbedder) -> StaticEmbedder:
    """Load the fast tier from ``cache_dir``, distilling it from ``quality`` first if needed.

    A cache folder that fails its manifest (a changed, missing or extra file) is rebuilt.
    """
    identity = static_identity(quality.identity)
    folder = cache_folder(cache_dir, identity)
    if folder.exists():
        problem = check_cache(folder, identity)
        if problem is None:
            try:
                return _load(folder, identity, from_cache=True)
            except EmbedderError as exc:
                problem = str(exc)
        logger.warning("rebuilding the static embedder cache %s: %s", folder, problem)
    _build(cache_dir, folder, quality, identity)
    return _load(folder, identity, from_cache=False)


def check_cache(folder: Path, identity: EmbedderIdentity) -> str | None:
    """None if ``folder`` holds exactly the files its manifest lists, else what is wrong."""
    try:
        manifest = msgspec.json.decode((folder / MANIFEST).read_bytes(), type=Manifest)
    except (OSError, msgspec.DecodeError) as exc:
        return f"no readable manifest ({exc})"
    if manifest.identity != identity:
        return f"it was built for {manifest.identity.describe()}"
    present = {p.name for p in folder.iterdir()} - {MANIFEST}
    if present != set(manifest.files):
        return f"it holds {sorted(present)}, its manifest lists {sorted(manifest.files)}"
    for name, expected in manifest.files.items():
        if _sha256_file(folder / name) != expected:
            return f"{name} does not match the sha256 recorded when it was built"
    return None


def _load(folder: Path, identity: EmbedderIdentity, *, from_cache: bool) -> StaticEmbedder:
    try:
        model = read_model(folder)
    except Exception as exc:  # safetensors and tokenizers raise many kinds
        raise EmbedderError(f"cannot load the static model in {folder}: {exc}") from exc
    if model.embedding.shape != (VOCAB_SIZE, PCA_DIMS) or model.embedding.dtype != np.float32:
        raise EmbedderError(
            f"the static model in {folder} has vectors of shape {model.embedding.shape} "
            f"({model.embedding.dtype}), expected ({VOCAB_SIZE}, {PCA_DIMS}) float32"
        )
    return StaticEmbedder(model, identity, folder=folder, from_cache=from_cache)


class StaticVectors(NamedTuple):
    """What a model2vec folder holds that embedding needs, as ``StaticModel`` reads it."""

    tokenizer: Tokenizer
    embedding: npt.NDArray[np.float32]
    unk_token_id: int | None
    max_length: int
    median_token_length: int


def read_model(folder: Path) -> StaticVectors:
    """Read a model2vec folder the way ``StaticModel.from_pretrained`` does, without model2vec
    (its import and load cost ~0.4 s of every start): the ``embeddings`` tensor, the tokenizer
    with padding off, ``max_length`` from the config, the unknown token's id and the median
    length of the vocabulary's tokens (which sets how far a text is cut before tokenizing)."""
    with safe_open(str(folder / "model.safetensors"), framework="numpy") as tensors:
        if set(tensors.keys()) != {"embeddings"}:
            raise EmbedderError(f"{folder} holds tensors {sorted(tensors.keys())}, not embeddings")
        embedding = tensors.get_tensor("embeddings")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    padding = tokenizer.padding
    if padding is not None:
        tokenizer.enable_padding(
            pad_id=padding["pad_id"],
            pad_token=padding["pad_token"],
            pad_type_id=padding["pad_type_id"],
            length=0,
        )
    config = json.loads((folder / "config.json").read_text())
    unknown = getattr(tokenizer.model, "unk_token", None)
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    return StaticVectors(
        tokenizer=tokenizer,
        embedding=embedding,
        unk_token_id=None if unknown is None else tokenizer.token_to_id(unknown),
        max_length=int(config["max_length"]),
        median_token_length=int(np.median([len(token) for token, _ in vocab])),
    )


def _build(
    cache_dir: Path, folder: Path, quality: QualityEmbedder, identity: EmbedderIdentity
) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_builds(cache_dir, folder.name)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.build-", dir=cache_dir))
    try:
        started = time.perf_counter()
        vocab = load_vocab()
        say = _Said(f"distilling the fast tier from {quality.spec.base_model}, once")
        matrix = distil(quality.mean_pooled, vocab, progress=say.progress)
        from model2vec import StaticModel  # only to build: loading reads the files itself

        model = StaticModel(
            vectors=matrix,
            tokenizer=bert_tokenizer(vocab),
            normalize=True,
            max_length=STATIC_MAX_TOKENS,
            base_model_name=quality.spec.base_model,
        )
        model.save_pretrained(staging)
        # model2vec's generated model card names its own licence: the vectors derive from
        # the encoder, so the card goes and the encoder's notice (and the vocabulary's
        # Apache-2.0 licence) come in.
        (staging / "README.md").unlink(missing_ok=True)
        (staging / "LICENSE").write_bytes((vocab_dir() / "LICENSE").read_bytes())
        (staging / "NOTICE").write_bytes(notice_of(quality.spec).read_bytes())
        files = {p.name: _sha256_file(p) for p in sorted(staging.iterdir())}
        manifest = Manifest(
            identity=identity,
            recipe=recipe(quality.identity.digest),
            files=files,
            build_seconds=round(time.perf_counter() - started, 3),
        )
        (staging / MANIFEST).write_bytes(msgspec.json.format(msgspec.json.encode(manifest)))
        _install(staging, folder, identity)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _install(staging: Path, folder: Path, identity: EmbedderIdentity) -> None:
    """Rename the finished build into place, replacing a broken cache folder."""
    if folder.exists():
        if check_cache(folder, identity) is None:
            return  # another process installed a sound cache meanwhile: keep it
        doomed = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=folder.parent))
        os.rename(folder, doomed / folder.name)
        shutil.rmtree(doomed, ignore_errors=True)
    try:
        os.rename(staging, folder)
    except OSError:
        # Another process installed the same cache meanwhile: keep theirs if it is sound.
        if not folder.exists() or check_cache(folder, identity) is not None:
            raise


def _remove_stale_builds(cache_dir: Path, name: str) -> None:
    """Delete leftovers of builds that crashed (old enough not to be running now)."""
    cutoff = time.time() - _STALE_BUILD_SECONDS
    for leftover in cache_dir.glob(f".{name}.*"):
        try:
            if leftover.stat().st_mtime < cutoff:
                shutil.rmtree(leftover, ignore_errors=True)
        except OSError:
            continue


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _Said:
    """Progress of the first start's distillation on standard error, a line per tenth: the
    first start is otherwise silent for 15 to 40 s. (Standard output may be a protocol
    stream: ``mnemolog mcp`` speaks MCP on it.)"""

    def __init__(self, what: str) -> None:
        self._what = what
        self._shown = -1
        self._started = time.perf_counter()

    def progress(self, done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth == self._shown:
            return
        self._shown = tenth
        took = time.perf_counter() - self._started
        print(f"mnemolog: {self._what}: {tenth * 10}% ({took:.0f} s)", file=sys.stderr, flush=True)
