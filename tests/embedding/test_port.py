"""The byte form of a vector, and the vocabulary shipped as package data."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

from mnemolog.embedding import QualityEmbedder, embed_bytes, from_bytes, vocab_dir
from mnemolog.embedding.vocab import VOCAB_SIZE, load_vocab
from mnemolog.errors import EmbedderError


def test_vector_bytes_round_trip(quality: QualityEmbedder) -> None:
    (vector,) = quality.embed(["John prefers dark mode"])
    data = embed_bytes(vector)
    assert len(data) == 384 * 4
    back = from_bytes(data, 384)
    assert back.dtype == np.float32 and back.flags.writeable
    assert np.array_equal(back, vector)


def test_vector_bytes_are_little_endian_float32() -> None:
    assert embed_bytes(np.array([1.0, -2.0])) == b"\x00\x00\x80\x3f\x00\x00\x00\xc0"
    assert np.array_equal(from_bytes(b"\x00\x00\x80\x3f"), np.array([1.0], dtype=np.float32))
    big_endian = np.array([0.5, 0.25], dtype=">f4")
    assert from_bytes(embed_bytes(big_endian)).tolist() == [0.5, 0.25]


def test_bad_vectors_and_bytes_are_refused() -> None:
    with pytest.raises(EmbedderError, match="one non-empty vector"):
        embed_bytes(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(EmbedderError, match="NaN"):
        embed_bytes(np.array([np.nan, 1.0], dtype=np.float32))
    with pytest.raises(EmbedderError, match="not a float32 vector"):
        from_bytes(b"\x00\x00\x80")
    with pytest.raises(EmbedderError, match="256 dimensions, expected 384"):
        from_bytes(bytes(1024), 384)


def test_vocabulary_licence_and_notice_ship_as_package_data() -> None:
    folder = resources.files("mnemolog.embedding") / "data" / "minilm-vocab"
    assert {p.name for p in folder.iterdir()} >= {"vocab.txt", "LICENSE", "NOTICE"}
    assert (folder / "LICENSE").read_text(encoding="utf-8").count("Apache License") >= 1
    assert "all-MiniLM-L6-v2" in (folder / "NOTICE").read_text(encoding="utf-8")
    assert str(vocab_dir()) == str(folder)
    vocab = load_vocab()
    assert len(vocab) == VOCAB_SIZE
    assert (vocab["[PAD]"], vocab["[UNK]"], vocab["[CLS]"], vocab["[SEP]"]) == (0, 100, 101, 102)
