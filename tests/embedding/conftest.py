"""Real models, loaded once per test run: the quality tier, and the fast tier built once."""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest

from mnemolog.embedding import FAST_BASE, QualityEmbedder, StaticEmbedder, load_or_build_static
from mnemolog.embedding.encoders import E5_FOLDER
from mnemolog.embedding.static import MANIFEST, Manifest, cache_folder, recipe, static_identity
from mnemolog.settings import default_model_cache

PARAPHRASE = ("John prefers dark mode", "John likes the dark theme")
UNRELATED = "The train leaves at noon"


@dataclass
class StaticBuild:
    """The fast tier of this run, and what its one build met and left behind."""

    embedder: StaticEmbedder
    cache_dir: Path
    warnings: list[str]
    stale_build: Path
    left_behind: list[str]
    said: list[str]  # what the build printed on standard error


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


@pytest.fixture(scope="session")
def quality() -> QualityEmbedder:
    return QualityEmbedder()


@pytest.fixture(scope="session")
def fast_base() -> QualityEmbedder:
    """The encoder the fast tier is distilled from."""
    return QualityEmbedder(spec=FAST_BASE)


@pytest.fixture(scope="session")
def static_build(
    fast_base: QualityEmbedder, tmp_path_factory: pytest.TempPathFactory
) -> StaticBuild:
    """Distil the fast tier once for the whole run (~15-90 s). Only ``test_static.py`` asks
    for it: the suite's workers each run a session of their own, so a second module asking for
    it would distil it again on another worker.

    The one build starts from a damaged cache, as a disk might leave one: the folder and its
    manifest are there, but the weights no longer match the digest the manifest recorded. A
    staging folder of a build that crashed two hours ago lies beside it.
    """
    cache_dir = tmp_path_factory.mktemp("embedding-cache")
    # The fetched encoders live in the model cache too: this one sees the real ones.
    (cache_dir / E5_FOLDER).symlink_to(default_model_cache() / E5_FOLDER)
    identity = static_identity(fast_base.identity)
    folder = cache_folder(cache_dir, identity)
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"\x00" * 4096)
    manifest = Manifest(
        identity=identity,
        recipe=recipe(fast_base.identity.digest),
        files={"model.safetensors": hashlib.sha256(b"the bytes it was built with").hexdigest()},
        build_seconds=1.0,
    )
    (folder / MANIFEST).write_bytes(msgspec.json.encode(manifest))
    stale = cache_dir / f".{folder.name}.build-crashed"
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"half")
    two_hours_ago = time.time() - 2 * 3600
    os.utime(stale, (two_hours_ago, two_hours_ago))

    warnings: list[str] = []
    logger = logging.getLogger("mnemolog.embedding.static")
    handler = _Collect(warnings)
    logger.addHandler(handler)
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            embedder = load_or_build_static(cache_dir, fast_base)
    finally:
        logger.removeHandler(handler)
    return StaticBuild(
        embedder=embedder,
        cache_dir=cache_dir,
        warnings=warnings,
        stale_build=stale,
        left_behind=sorted(p.name for p in cache_dir.iterdir()),
        said=said.getvalue().splitlines(),
    )


@pytest.fixture(scope="session")
def static(static_build: StaticBuild) -> StaticEmbedder:
    return static_build.embedder


@pytest.fixture(scope="session")
def static_cache(static_build: StaticBuild) -> Path:
    return static_build.cache_dir
