"""The pinning rule: one embedder per data dir, refused with a clear way forward."""

from __future__ import annotations

import pytest

from mnemolog.embedding import (
    E5_SMALL,
    QUALITY_NAME,
    EmbedderIdentity,
    check_pin,
    static_identity,
)
from mnemolog.errors import EmbedderMismatch
from mnemolog.eventlog.events import EmbedderPinned

QUALITY = EmbedderIdentity(QUALITY_NAME, 384, E5_SMALL.digest)
FAST = static_identity(QUALITY)


def pinned(identity: EmbedderIdentity) -> EmbedderPinned:
    return EmbedderPinned(name=identity.name, dimension=identity.dimension, digest=identity.digest)


def test_nothing_pinned_gives_the_event_to_append() -> None:
    event = check_pin(None, QUALITY)
    assert event == EmbedderPinned(name=QUALITY_NAME, dimension=384, digest=E5_SMALL.digest)


def test_same_identity_passes() -> None:
    assert check_pin(pinned(QUALITY), QUALITY) is None
    assert check_pin(pinned(FAST), FAST) is None


def test_dimension_mismatch_names_both_and_the_way_out() -> None:
    with pytest.raises(EmbedderMismatch) as caught:
        check_pin(pinned(QUALITY), FAST)
    message = str(caught.value)
    assert f"pinned to {QUALITY_NAME} (384-d)" in message
    assert f"would use {FAST.name} (256-d)" in message
    assert f"the embedder it is pinned to ({QUALITY_NAME}" in message
    assert "mnemolog reembed --embedder" in message
    with pytest.raises(EmbedderMismatch, match=rf"\(256-d\).*\(384-d\).*pinned to \({FAST.name}"):
        check_pin(pinned(FAST), QUALITY)


def test_same_dimension_other_embedder_is_refused_too() -> None:
    other = EmbedderIdentity(QUALITY_NAME, 384, "ab" * 32)
    with pytest.raises(EmbedderMismatch) as caught:
        check_pin(pinned(QUALITY), other)
    message = str(caught.value)
    assert "Both are 384-d" in message and "not comparable" in message
    assert E5_SMALL.digest[:12] in message and "abababababab" in message
    assert "mnemolog reembed" in message
    assert caught.value.code == "embedder_mismatch"


def test_unknown_pinned_embedder_still_gets_a_remedy() -> None:
    foreign = EmbedderIdentity("someone-elses-model", 768, "cd" * 32)
    with pytest.raises(
        EmbedderMismatch, match="start the server with the embedder it is pinned to"
    ):
        check_pin(pinned(foreign), QUALITY)
