"""The fast tier: distilled once per run, then loaded from its cache, offline."""

from __future__ import annotations

import os
import shutil
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from mnemolog.embedding import (
    FAST_BASE,
    MINILM_L6,
    EmbedderIdentity,
    QualityEmbedder,
    StaticEmbedder,
    load_or_build_static,
    static_identity,
    static_name,
)
from mnemolog.embedding.encoders import E5_FOLDER
from mnemolog.embedding.select import open_embedder, open_for_store, tier_identity
from mnemolog.embedding.static import MANIFEST, Manifest, cache_folder, check_cache
from mnemolog.embedding.static_distill import SIGN_ROWS, distil, fit_pca, set_aside, sif_weights
from mnemolog.embedding.vocab import load_vocab
from mnemolog.errors import InvalidInput
from mnemolog.eventlog.events import EmbedderPinned
from mnemolog.settings import default_model_cache

from .conftest import PARAPHRASE, UNRELATED, StaticBuild

# The fast tier's identity is a constant of the recipe: a change here is a new embedder, and
# every data dir pinned to the old one will refuse to start with it. Change it on purpose only.
FAST_BASE_IDENTITY = EmbedderIdentity(FAST_BASE.name, FAST_BASE.dimension, FAST_BASE.digest)
PINNED_STATIC_DIGEST = "3f06fb4381cc8a9a39513d33a63ec268e4e3ba405d55519918e6bcf442f3bf6f"


def test_vectors_are_unit_float32_256(static: StaticEmbedder) -> None:
    vectors = static.embed(["John prefers dark mode", "", "%%%", "北京", "a " * 2000])
    assert vectors.shape == (5, 256)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert static.embed([]).shape == (0, 256)


def test_paraphrase_is_closer_than_unrelated(static: StaticEmbedder) -> None:
    a, b, c = static.embed([*PARAPHRASE, UNRELATED])
    assert float(a @ b) > float(a @ c) + 0.2
    assert float(a @ b) > float(b @ c) + 0.2


def test_text_without_known_tokens_gets_the_empty_text_vector(static: StaticEmbedder) -> None:
    empty, unknown = static.embed(["", "\u0378\u0379"])  # unassigned code points: [UNK] only
    assert np.allclose(empty, unknown)


def test_batch_equals_one_by_one(static: StaticEmbedder) -> None:
    texts = ["John prefers dark mode", "", "The meeting moved to Tuesday.", "x" * 500]
    single = np.vstack([static.embed([t]) for t in texts])
    assert np.max(np.abs(static.embed(texts) - single)) < 1e-5


def test_vectors_equal_model2vec_encode_bit_for_bit(static: StaticEmbedder) -> None:
    """The embedder reads model2vec's folder and means token vectors itself; model2vec's own
    loading and ``encode`` must agree exactly, on the single-text path and the batched one,
    for texts long enough to be truncated."""
    texts = [
        "John prefers dark mode",
        "",
        "%%%",
        "北京 and Zürich",
        "a " * 2000,
        "tokens " * 700,
        *[f"memory {n}: Anna moved to Lisbon in {1990 + n}" for n in range(20)],
    ]
    from model2vec import StaticModel

    reference = StaticModel.from_pretrained(static.folder.resolve(), force_download=False)
    loaded = static.model
    assert np.array_equal(reference.embedding, loaded.embedding)
    assert (reference.unk_token_id, reference.max_length, reference.median_token_length) == (
        loaded.unk_token_id,
        loaded.max_length,
        loaded.median_token_length,
    )
    raw = reference.encode(
        texts, normalize=False, show_progress_bar=False, use_multiprocessing=False
    )
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    blank = norms[:, 0] <= 1e-12
    expected = (raw / np.where(blank[:, None], 1.0, norms)).astype(np.float32)
    expected[blank] = static.embed([""])[0]
    assert np.array_equal(static.embed(texts), expected)  # batched tokenizing
    one_by_one = np.stack([static.embed([t])[0] for t in texts])  # tokenized on this thread
    assert np.array_equal(one_by_one, expected)


def test_embedders_can_be_shared_between_threads(
    static: StaticEmbedder, quality: QualityEmbedder
) -> None:
    texts = [f"note {i}: " + "the quick brown fox " * (i % 7) for i in range(64)]
    for embedder in (static, quality):
        expected = embedder.embed(texts)
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(embedder.embed, [texts[i : i + 8] for i in range(0, 64, 8)]))
        assert np.max(np.abs(np.vstack(results) - expected)) < 1e-5


def test_identity_is_a_constant_of_the_recipe(static: StaticEmbedder) -> None:
    identity = static_identity(FAST_BASE_IDENTITY)
    assert identity == static_identity(FAST_BASE_IDENTITY)
    assert identity == static.identity
    assert identity.name == static_name(FAST_BASE.name)
    assert identity.dimension == 256
    assert identity.digest == PINNED_STATIC_DIGEST
    other = EmbedderIdentity(FAST_BASE.name, FAST_BASE.dimension, "0" * 64)
    assert static_identity(other).digest != identity.digest


def _no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


def test_second_load_uses_the_cache_offline(
    static: StaticEmbedder,
    fast_base: QualityEmbedder,
    static_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = cache_folder(static_cache, static.identity)
    assert static.folder == folder
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    # A build that crashed leaves only a hidden staging folder: it is never read.
    (static_cache / f".{folder.name}.build-interrupted").mkdir()
    attempts = _no_network(monkeypatch)
    started = time.perf_counter()
    again = load_or_build_static(static_cache, fast_base)
    assert time.perf_counter() - started < 5
    assert attempts == []
    assert again.from_cache
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before
    texts = [*PARAPHRASE, UNRELATED]
    assert np.array_equal(again.embed(texts), static.embed(texts))


def test_cache_ships_the_licence_and_a_manifest(static: StaticEmbedder) -> None:
    names = {p.name for p in static.folder.iterdir()}
    assert {"LICENSE", "NOTICE", MANIFEST, "model.safetensors", "tokenizer.json"} <= names
    assert "README.md" not in names  # model2vec's card names the wrong licence
    manifest = msgspec.json.decode((static.folder / MANIFEST).read_bytes(), type=Manifest)
    assert manifest.identity == static.identity
    assert set(manifest.files) == names - {MANIFEST}
    assert check_cache(static.folder, static.identity) is None


def _copy_cache(static: StaticEmbedder, cache_dir: Path) -> Path:
    folder = cache_folder(cache_dir, static.identity)
    shutil.copytree(static.folder, folder)
    return folder


def test_check_cache_finds_every_kind_of_damage(static: StaticEmbedder, tmp_path: Path) -> None:
    folder = _copy_cache(static, tmp_path)
    identity = static.identity
    assert check_cache(folder, identity) is None
    (folder / "stray.bin").write_bytes(b"x")
    assert "manifest lists" in (check_cache(folder, identity) or "")
    (folder / "stray.bin").unlink()
    weights = folder / "model.safetensors"
    with weights.open("r+b") as file:  # one flipped bit in the vectors
        file.seek(weights.stat().st_size - 4096)
        byte = file.read(1)
        file.seek(-1, os.SEEK_CUR)
        file.write(bytes([byte[0] ^ 0x10]))
    assert "model.safetensors does not match" in (check_cache(folder, identity) or "")
    shutil.copyfile(static.folder / "model.safetensors", weights)
    assert check_cache(folder, identity) is None
    (folder / "tokenizer.json").unlink()
    assert "manifest lists" in (check_cache(folder, identity) or "")
    other = static_identity(EmbedderIdentity(FAST_BASE.name, FAST_BASE.dimension, "0" * 64))
    assert "built for" in (check_cache(folder, other) or "")
    (folder / MANIFEST).unlink()  # a build that died before its last step
    assert "no readable manifest" in (check_cache(folder, identity) or "")


def test_damaged_cache_is_detected_and_rebuilt(static_build: StaticBuild) -> None:
    # The run's one build started from a cache whose weights no longer match its manifest.
    static = static_build.embedder
    assert not static.from_cache
    assert any("model.safetensors does not match" in w for w in static_build.warnings)
    assert check_cache(static.folder, static.identity) is None
    assert not static_build.stale_build.exists()
    assert static_build.left_behind == sorted([E5_FOLDER, static.folder.name])


def test_the_first_build_says_how_far_it_is(static_build: StaticBuild) -> None:
    # 15 to 40 s of work on a first start: a line per tenth, on standard error.
    said = [line for line in static_build.said if "distilling the fast tier" in line]
    percents = [int(line.split(": ")[-1].split("%")[0]) for line in said]
    assert percents == list(range(0, 101, 10)) or percents == list(range(10, 101, 10))


def test_distillation_is_deterministic(quality: QualityEmbedder) -> None:
    # The first 1,600 ids: the special tokens, the [unusedN] placeholders, then 601 tokens.
    vocab = {t: i for t, i in load_vocab().items() if i < 1600}
    first = distil(quality.mean_pooled, vocab, dims=64)
    assert np.array_equal(first, distil(quality.mean_pooled, vocab, dims=64))
    aside = set_aside(vocab)
    assert aside.sum() == 999
    assert first.shape == (1600, 64) and first.dtype == np.float32
    nonzero = np.linalg.norm(first, axis=1) > 0
    assert np.array_equal(nonzero, ~aside | (np.arange(1600) == vocab["[CLS]"]))


def test_pca_signs_are_fixed_by_the_largest_scores() -> None:
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((2000, 24)) @ rng.standard_normal((24, 24))
    mean, components, eigenvalues = fit_pca(rows, 8)
    assert components.shape == (8, 24)
    assert np.all(np.diff(eigenvalues) <= 1e-9)
    assert np.allclose(components @ components.T, np.eye(8), atol=1e-9)
    scores = (rows - mean) @ components.T
    top = np.argsort(-np.abs(scores), axis=0)[:SIGN_ROWS]
    assert np.all(np.take_along_axis(scores, top, axis=0).sum(axis=0) > 0)
    _, mirrored, _ = fit_pca(-rows, 8)  # the same data, reflected: the same axes, flipped
    assert np.allclose(np.abs(mirrored @ components.T), np.eye(8), atol=1e-6)


def test_sif_weights_grow_with_rank() -> None:
    weights = sif_weights(30_000)
    assert np.all(np.diff(weights) > 0)
    assert 0 < weights[0] < 0.1 and 0.9 < weights[-1] < 1


# Choosing a tier, with this run's fast tier (here, beside the other tests of its one build).


def test_open_embedder_by_tier(static: StaticEmbedder, static_cache: Path) -> None:
    before = sorted(default_model_cache().iterdir())
    quality = open_embedder("quality", default_model_cache(), threads=1)
    assert isinstance(quality, QualityEmbedder) and quality.identity == tier_identity("quality")
    assert sorted(default_model_cache().iterdir()) == before  # read, never written
    fast = open_embedder("fast", static_cache)
    assert isinstance(fast, StaticEmbedder) and fast.from_cache
    assert fast.identity == static.identity == tier_identity("fast")
    with pytest.raises(InvalidInput, match="use one of auto, quality, fast"):
        open_embedder("bogus", static_cache)


def test_a_store_pinned_to_an_older_embedder_opens_on_it(static_cache: Path) -> None:
    """With ``auto``, a data dir keeps the embedder it is pinned to while this build has it
    (until ``mnemolog reembed`` moves it); an explicit tier is opened as asked."""
    minilm = MINILM_L6
    pin = EmbedderPinned(name=minilm.name, dimension=minilm.dimension, digest=minilm.digest)
    opened = open_for_store("auto", pin, static_cache, threads=1)
    assert isinstance(opened, QualityEmbedder) and opened.spec == minilm
    assert open_for_store("quality", pin, static_cache).identity == tier_identity("quality")
    foreign = EmbedderPinned(name="someone-elses", dimension=768, digest="ab" * 32)
    assert open_for_store("auto", foreign, static_cache).identity == tier_identity("fast")
