"""Imported chains in the memories projection: a rebuild equals the incremental fold."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemolog.eventlog import Draft
from mnemolog.eventlog.events import ChainForgotten, ChainRestored, ImportedChain, MemoryImported

from ..projections.test_memories import (
    ACTOR,
    World,
    _world,
    assert_live_in_step,
    assert_rebuild_equals,
    erase,
    supersede,
    write,
)

DAY = 86_400 * 10**9


def import_chain(w: World, memory_id: str, versions: int, forgotten: bool) -> None:
    """One chain's versions in one append, as the importer writes them."""
    subject = f"memory:{memory_id}"
    events = [
        MemoryImported(
            memory_id=memory_id,
            version_id=f"{memory_id}-v{n}",
            version=n,
            container_tag="c1",
            content=w.sealer.seal_text(subject, f"{memory_id} version {n}"),
            valid_from=n * DAY,
            valid_to=None if n == versions else (n + 1) * DAY,
            source_memory_id=f"src-{memory_id}",
            chain=None
            if n > 1
            else ImportedChain(
                digest=w.sealer.seal_text(subject, "digest"),
                created_at=DAY,
                forgotten=forgotten,
                forgotten_at=2 * DAY if forgotten else None,
                forgotten_reason=w.sealer.seal_text(subject, "stale") if forgotten else None,
            ),
        )
        for n in range(1, versions + 1)
    ]
    appended = w.log.append([Draft(ACTOR, e) for e in events])
    w.runner.sync_to(appended.seqs[-1])
    w.chains[memory_id] = versions


ops = st.lists(
    st.tuples(
        st.sampled_from(["write", "import", "supersede", "forget", "restore", "erase"]),
        st.integers(0, 4),
        st.integers(1, 3),
        st.booleans(),
    ),
    max_size=20,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops)
def test_incremental_equals_rebuild_with_imports(ops: list[tuple[str, int, int, bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for w in _world(Path(tmp)):
            erased: set[str] = set()
            for kind, target, versions, flag in ops:
                memory_id = f"m{target}"
                exists = memory_id in w.chains and memory_id not in erased
                if kind == "write" and memory_id not in w.chains:
                    write(w, memory_id, f"text {target}", vector=flag)
                elif kind == "import" and memory_id not in w.chains:
                    import_chain(w, memory_id, versions, flag)
                elif kind == "supersede" and exists:
                    supersede(w, memory_id, f"newer {target}", edit=flag)
                elif kind == "forget" and exists:
                    w.append(ChainForgotten(memory_id=memory_id, reason=w.seal(memory_id, "x")))
                elif kind == "restore" and exists:
                    w.append(ChainRestored(memory_id=memory_id))
                elif kind == "erase" and exists:
                    erase(w, memory_id)
                    erased.add(memory_id)
                assert_live_in_step(w)
            assert_rebuild_equals(w, Path(tmp))
            for memory_id, version in w.chains.items():
                latest = w.projection.latest(memory_id)
                assert latest is not None and latest.version == version
                chain = w.projection.chain(memory_id)
                assert chain is not None
                opens = [v for v in chain.versions if v.valid_to is None]
                assert len(opens) == 1  # never two latest versions
                assert (memory_id in erased) == all(v.content is None for v in chain.versions)


def test_an_imported_chain_keeps_its_windows_and_forgotten_reason(tmp_path: Path) -> None:
    for w in _world(tmp_path):
        import_chain(w, "m1", 3, True)
        chain = w.projection.chain("m1")
        assert chain is not None
        assert [(v.valid_from, v.valid_to) for v in chain.versions] == [
            (DAY, 2 * DAY),
            (2 * DAY, 3 * DAY),
            (3 * DAY, None),
        ]
        assert (chain.created_at, chain.forgotten, chain.forgotten_at) == (DAY, True, 2 * DAY)
        assert chain.forgotten_reason == "stale"
        assert [r.source_id for r in w.projection.imports_of("memory", "m1")] == ["src-m1"] * 3
