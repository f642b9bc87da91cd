"""The byte form of a vector, and the vocabulary shipped as package data."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

from mnemolog.embedding import QualityEmbedder, embed_bytes, embed_rows_bytes, from_bytes, vocab_dir
from mnemolog.embedding.port import row_count, rows_from_bytes, split_rows, stacked_vectors
from mnemolog.embedding.vocab import VOCAB_SIZE, load_vocab
from mnemolog.errors import EmbedderError


def test_vector_bytes_round_trip(quality: QualityEmbedder) -> None:
    vectors = quality.embed(["John prefers dark mode", "the deploy key rotates on Fridays"])
    data = embed_bytes(vectors[0])
    assert len(data) == 1 + 384 * 2  # the format byte, then float16
    back = from_bytes(data, 384)
    assert back.dtype == np.float32 and back.flags.writeable
    assert np.abs(back - vectors[0]).max() < 1e-3
    # What ranking reads: cosines move by far less than any gap acted on.
    other = from_bytes(embed_bytes(vectors[1]), 384)
    assert abs(float(back @ other) - float(vectors[0] @ vectors[1])) < 1e-3
    assert from_bytes(embed_bytes(back), 384).tolist() == back.tolist()  # stable once stored


def test_vector_bytes_are_a_format_byte_then_little_endian_float16() -> None:
    assert embed_bytes(np.array([1.0, -2.0])) == b"\x02\x00\x3c\x00\xc0"
    big_endian = np.array([0.5, 0.25], dtype=">f4")
    assert from_bytes(embed_bytes(big_endian)).tolist() == [0.5, 0.25]


def test_float32_vectors_of_older_stores_are_read_as_they_are() -> None:
    assert from_bytes(b"\x00\x00\x80\x3f\x00\x00\x00\xc0").tolist() == [1.0, -2.0]
    old = np.array([0.1, -0.3, 0.7], dtype="<f4").tobytes()
    assert np.array_equal(from_bytes(old, 3), np.array([0.1, -0.3, 0.7], dtype=np.float32))
    # A matrix of both formats, as a store written across the change holds.
    new = embed_bytes(np.array([0.5, 0.25, -1.0]))
    matrix = stacked_vectors([new, new])
    assert matrix is not None and matrix.tolist() == [[0.5, 0.25, -1.0]] * 2
    assert stacked_vectors([old, new]) is None  # one length at a time


def test_several_vectors_in_one_field_split_into_single_ones() -> None:
    rows = np.array([[0.5, -0.5], [0.25, 1.0], [0.0, 2.0]])
    field = embed_rows_bytes(rows)
    assert len(field) == 1 + 3 * 2 * 2 and row_count(field, 2) == 3
    assert rows_from_bytes(field, 2).tolist() == rows.tolist()
    singles = split_rows(field, 3)
    assert singles is not None and [from_bytes(s).tolist() for s in singles] == rows.tolist()
    old = rows.astype("<f4").tobytes()
    assert row_count(old, 2) == 3
    singles = split_rows(old, 3)
    assert singles is not None and [from_bytes(s).tolist() for s in singles] == rows.tolist()
    assert split_rows(field, 4) is None and split_rows(field, 0) is None


def test_bad_vectors_and_bytes_are_refused() -> None:
    with pytest.raises(EmbedderError, match="one non-empty vector"):
        embed_bytes(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(EmbedderError, match="NaN"):
        embed_bytes(np.array([np.nan, 1.0], dtype=np.float32))
    with pytest.raises(EmbedderError, match="beyond float16's range"):
        embed_bytes(np.array([1e6, 1.0], dtype=np.float32))
    with pytest.raises(EmbedderError, match="not a stored vector"):
        from_bytes(b"\x00\x00\x80\x3f\x00\x00")
    with pytest.raises(EmbedderError, match="unknown vector format byte 07"):
        from_bytes(b"\x07\x00\x3c")
    with pytest.raises(EmbedderError, match="256 dimensions, expected 384"):
        from_bytes(bytes(1024), 384)
    with pytest.raises(EmbedderError, match="256 dimensions, expected 384"):
        from_bytes(b"\x02" + bytes(512), 384)


def test_vocabulary_licence_and_notice_ship_as_package_data() -> None:
    folder = resources.files("mnemolog.embedding") / "data" / "minilm-vocab"
    assert {p.name for p in folder.iterdir()} >= {"vocab.txt", "LICENSE", "NOTICE"}
    assert (folder / "LICENSE").read_text(encoding="utf-8").count("Apache License") >= 1
    assert "all-MiniLM-L6-v2" in (folder / "NOTICE").read_text(encoding="utf-8")
    assert str(vocab_dir()) == str(folder)
    vocab = load_vocab()
    assert len(vocab) == VOCAB_SIZE
    assert (vocab["[PAD]"], vocab["[UNK]"], vocab["[CLS]"], vocab["[SEP]"]) == (0, 100, 101, 102)
