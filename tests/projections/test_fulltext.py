"""The tantivy full-text index: BM25, the uncommitted tail, recovery, erasure, hostile queries."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemolog.errors import DataDirLocked
from mnemolog.projections.fulltext.index import FullTextIndex, TextDoc
from mnemolog.projections.fulltext.shards import SHARDS_DIR, shard_key

WORDS = ["river", "stone", "garden", "lamp", "window", "orange", "violin", "paper", "tower"]


def corpus(count: int, container: str = "c1", start: int = 1000) -> list[TextDoc]:
    """Deterministic filler documents that never use the words the tests query for."""
    return [
        TextDoc(start + i, container, " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(8)))
        for i in range(count)
    ]


def labels(hits: list[tuple[int, float]]) -> list[int]:
    return [label for label, _ in hits]


def files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def shard_dir(root: Path, container: str = "c1") -> Path:
    return root / SHARDS_DIR / shard_key(container)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[FullTextIndex]:
    opened = FullTextIndex(tmp_path / "ft", background=False)
    yield opened
    opened.close()


def test_more_matching_terms_rank_first(index: FullTextIndex) -> None:
    index.add(corpus(50), seq=1)
    index.commit()
    docs = [
        TextDoc(1, "c1", "the kettle whistles while the falcon sleeps"),
        TextDoc(2, "c1", "a kettle on the stove"),
        TextDoc(3, "c1", "a falcon over the hills"),
    ]
    index.add(docs, seq=2)
    before = index.search("kettle falcon", 10)
    assert labels(before)[0] == 1
    assert set(labels(before)) == {1, 2, 3}
    index.commit()
    after = index.search("kettle falcon", 10)
    assert labels(after)[0] == 1
    assert set(labels(after)) == {1, 2, 3}


def test_tail_and_committed_documents_are_scored_alike(index: FullTextIndex) -> None:
    texts = ["teapot kettle kettle " + "lamp " * 45, "kettle teapot river tower", "kettle"]
    index.add(corpus(300), seq=1)
    index.add([TextDoc(10 + n, "c1", text) for n, text in enumerate(texts)], seq=2)
    index.commit()
    # The same texts under other labels, still in the tail: one scoring function for both.
    index.add([TextDoc(20 + n, "c1", text) for n, text in enumerate(texts)], seq=3)
    assert index.pending > 0
    scores = dict(index.search("kettle teapot", 20))
    assert set(scores) == {10, 11, 12, 20, 21, 22}
    for n in range(len(texts)):
        assert scores[20 + n] == pytest.approx(scores[10 + n], rel=1e-5)


def test_container_filter(index: FullTextIndex) -> None:
    index.add([TextDoc(1, "alice", "meeting notes"), TextDoc(2, "bob", "meeting notes")], seq=1)
    index.commit()
    index.add([TextDoc(3, "alice", "notes"), TextDoc(4, "bob", "notes")], seq=2)
    everyone = dict(index.search("notes", 10))
    alice = index.search("notes", 10, container="alice")
    assert set(labels(alice)) == {1, 3}
    assert all(score == pytest.approx(everyone[label]) for label, score in alice)
    assert set(labels(index.search("notes", 10, container="bob"))) == {2, 4}
    assert index.search("notes", 10, container="carol") == []


def test_search_rare_finds_the_thing_its_common_words_bury(index: FullTextIndex) -> None:
    # Forty facts of a large store share the correction's common words; one names its thing.
    crowd = [
        TextDoc(n, "c1", f"Priya Kor{n} moved to Lisbon last month and now works on Go")
        for n in range(40)
    ]
    index.add([*corpus(2000), *crowd, TextDoc(100, "c1", "Priya Shograi lives in Porto")], seq=1)
    index.commit()
    index.add([TextDoc(101, "c2", "Shograi moved to Lisbon last month")], seq=2)  # tail
    text = "Actually Priya Shograi moved to Lisbon last month"
    assert 100 not in labels(index.search(text, 16, container="c1"))
    assert labels(index.search_rare(text, 16, count=2, container="c1"))[0] == 100
    # Counted over every container, disk and tail alike; a term no document holds is skipped.
    assert labels(index.search_rare("Shograi Zyxwv", 5, count=1)) == [100, 101]
    assert index.search_rare("Zyxwv", 5, count=2) == []


def test_writes_are_read_before_any_disk_commit(index: FullTextIndex) -> None:
    index.add([TextDoc(1, "c1", "unpublished thought about tides")], seq=1)
    assert index.pending > 0
    assert labels(index.search("tides", 5)) == [1]
    assert not list(index.directory.rglob("*.store"))  # nothing committed yet
    assert index.last_seq == 0


def test_results_survive_commit_and_reopen(tmp_path: Path) -> None:
    with FullTextIndex(tmp_path, background=False) as first:
        first.add([TextDoc(1, "c1", "persistent lighthouse"), TextDoc(2, "c1", "other")], seq=5)
        first.commit()
        assert first.last_seq == 5
    with FullTextIndex(tmp_path, background=False) as second:
        assert second.last_seq == 5
        assert labels(second.search("lighthouse", 5)) == [1]
        second.add([TextDoc(3, "c1", "lighthouse keeper")], seq=6)
    with FullTextIndex(tmp_path, background=False) as third:  # close() committed the tail
        assert third.last_seq == 6
        assert set(labels(third.search("lighthouse", 5))) == {1, 3}


def test_dropping_without_close_loses_only_the_tail(tmp_path: Path) -> None:
    index = FullTextIndex(tmp_path, background=False)
    index.add([TextDoc(1, "c1", "committed harbour")], seq=3)
    index.commit()
    index.add([TextDoc(2, "c1", "uncommitted harbour")], seq=4)
    index.delete([1], seq=5)
    assert labels(index.search("harbour", 5)) == [2]
    del index
    gc.collect()
    with FullTextIndex(tmp_path, background=False) as reopened:
        assert reopened.last_seq == 3  # the owner replays the log from seq 4
        assert labels(reopened.search("harbour", 5)) == [1]


def test_a_killed_process_loses_only_the_tail(tmp_path: Path) -> None:
    child = textwrap.dedent(
        f"""
        from mnemolog.projections.fulltext.index import FullTextIndex, TextDoc
        index = FullTextIndex({str(tmp_path)!r}, commit_interval=3600.0)
        index.add([TextDoc(1, "c1", "durable anchor")], seq=10)
        index.commit()
        index.add([TextDoc(2, "c1", "volatile anchor")], seq=11)
        assert len(index.search("anchor", 5)) == 2
        print("ready", flush=True)
        import time
        time.sleep(60)
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", child], stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == -signal.SIGKILL
    with FullTextIndex(tmp_path, background=False) as reopened:
        assert reopened.last_seq == 10
        assert labels(reopened.search("anchor", 5)) == [1]


HOSTILE = [
    'AND OR ( " : *',
    '"',
    "(",
    "text:",
    "label:1 OR container:x",
    "[1 TO 2]",
    "a~2^3",
    "-",
    "+",
    "\\",
    "\x00",
    "\ud800 lone surrogate",
    "",
    "   \t\n",
    "x" * 100_000,
    " ".join(f"w{i}" for i in range(5000)),
]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FullTextIndex]:
    opened = FullTextIndex(tmp_path_factory.mktemp("hostile"), background=False)
    opened.add(corpus(100), seq=1)
    opened.commit()
    opened.add([TextDoc(1, "c1", 'and or " : * ( text label quoted')], seq=2)
    yield opened
    opened.close()


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(shared: FullTextIndex, query: str) -> None:
    hits = shared.search(query, 10, container=query)
    assert isinstance(hits, list)
    assert isinstance(shared.search(query, 10), list)
    assert isinstance(shared.search(query, 10**12), list)


@settings(max_examples=300, deadline=None)
@given(query=st.text(), k=st.integers(min_value=-3, max_value=50))
def test_any_text_is_a_query(shared: FullTextIndex, query: str, k: int) -> None:
    hits = shared.search(query, k)
    assert len(hits) <= max(k, 0)
    assert all(isinstance(label, int) and isinstance(score, float) for label, score in hits)


def test_empty_query_returns_nothing(shared: FullTextIndex) -> None:
    assert shared.search("", 10) == []
    assert shared.search(" ,.;! ", 10) == []


def test_delete_hides_a_document_at_once(index: FullTextIndex) -> None:
    index.add([TextDoc(1, "c1", "orchard apples"), TextDoc(2, "c1", "orchard pears")], seq=1)
    index.commit()
    index.add([TextDoc(3, "c1", "orchard plums")], seq=2)
    index.delete([1, 3], seq=3)
    assert labels(index.search("orchard", 10)) == [2]
    index.commit()
    assert labels(index.search("orchard", 10)) == [2]
    assert index.last_seq == 3


def test_advance_records_a_seq_without_documents(tmp_path: Path) -> None:
    with FullTextIndex(tmp_path, background=False) as index:
        index.add([TextDoc(1, "c1", "first")], seq=3)
        index.advance(9)  # events 4..9 did not touch full text
        index.commit()
        assert index.last_seq == 9
    with FullTextIndex(tmp_path, background=False) as reopened:
        assert reopened.last_seq == 9


def test_replayed_adds_do_not_duplicate(index: FullTextIndex) -> None:
    doc = TextDoc(1, "c1", "idempotent compass")
    index.add([doc], seq=1)
    index.commit()
    index.add([doc], seq=1)  # a replay after a crash between commit and sidecar
    assert labels(index.search("compass", 10)) == [1]
    index.commit()
    assert labels(index.search("compass", 10)) == [1]
    index.add([TextDoc(1, "c1", "idempotent sextant")], seq=2)  # a newer text, same label
    assert labels(index.search("idempotent", 10)) == [1]
    assert index.search("compass", 10) == []
    index.commit()
    assert labels(index.search("idempotent", 10)) == [1]
    assert index.search("compass", 10) == []


def test_purge_leaves_no_trace_in_any_file(tmp_path: Path) -> None:
    root = tmp_path / "ft"
    canary = b"zanzibarquokka"
    with FullTextIndex(root, background=False) as index:
        index.add(corpus(200), seq=1)
        index.add([TextDoc(1, "c1", f"secret {canary.decode()} note")], seq=2)
        index.add([TextDoc(2, "c1", "survivor note")], seq=3)
        index.commit()
        index.delete([1], seq=4)
        index.commit()
        assert files_containing(root, canary)  # a delete is not erasure: the text is still there

        index.purge([1], seq=5)
        assert files_containing(root, canary) == []
        assert index.last_seq == 5
        assert labels(index.search("survivor", 5)) == [2]
        assert index.search(canary.decode(), 5) == []
        index.add([TextDoc(3, "c1", "written after the purge")], seq=6)
    assert sorted(p.name for p in root.iterdir()) == ["fulltext.json", "shards", "writer.lock"]
    assert sorted(p.name for p in shard_dir(root).iterdir()) == ["index"]
    with FullTextIndex(root, background=False) as reopened:
        assert reopened.last_seq == 6
        assert labels(reopened.search("survivor", 5)) == [2]
        assert labels(reopened.search("purge", 5)) == [3]
        rivers = sum("river" in doc.text.split() for doc in corpus(200))
        assert len(reopened.search("river", 500)) == rivers


def test_purge_of_an_uncommitted_document(index: FullTextIndex) -> None:
    index.add([TextDoc(1, "c1", "fleeting mongoosecanary")], seq=1)
    index.purge([1], seq=2)
    assert files_containing(index.directory, b"mongoosecanary") == []
    assert index.search("mongoosecanary", 5) == []


def test_a_purge_cut_short_between_its_renames_is_completed(tmp_path: Path) -> None:
    root = tmp_path / "ft"
    with FullTextIndex(root, background=False) as index:
        index.add([TextDoc(1, "c1", "kept record")], seq=1)
    shard = shard_dir(root)
    os.rename(shard / "index", shard / "index.old")
    shutil.copytree(shard / "index.old", shard / "index.new")
    with FullTextIndex(root, background=False) as reopened:
        assert labels(reopened.search("record", 5)) == [1]
    assert sorted(p.name for p in shard.iterdir()) == ["index"]


def test_a_damaged_index_is_wiped_and_replayed_from_zero(tmp_path: Path) -> None:
    with FullTextIndex(tmp_path, background=False) as index:
        index.add([TextDoc(1, "c1", "soon damaged")], seq=5)
    (shard_dir(tmp_path) / "index" / "meta.json").write_text("{not json")
    reopened = FullTextIndex(tmp_path, background=False)
    assert reopened.last_seq == 0  # the owner replays the whole log
    assert reopened.search("damaged", 5) == []
    del reopened  # a crash before the replay committed anything
    gc.collect()
    with FullTextIndex(tmp_path, background=False) as reopened:
        assert reopened.last_seq == 0
        reopened.add([TextDoc(1, "c1", "soon damaged")], seq=5)
        assert labels(reopened.search("damaged", 5)) == [1]


def test_words_match_by_their_stem_and_stop_words_match_nothing(index: FullTextIndex) -> None:
    index.add(corpus(20), seq=1)
    index.add([TextDoc(1, "c1", "She was researching adoption agencies")], seq=2)
    index.commit()
    index.add([TextDoc(2, "c1", "the agency researched it")], seq=3)  # still in the tail
    assert set(labels(index.search("what did she research?", 5))) == {1, 2}
    assert set(labels(index.search("agencies", 5))) == {1, 2}
    assert index.search("the", 5) == []  # only stop words: no term to search
    assert index.search("it was the", 5) == []


def test_question_words_are_left_out_of_queries(index: FullTextIndex) -> None:
    index.add(corpus(20), seq=1)
    index.add(
        [TextDoc(1, "c1", "When did you move? How did it go?"), TextDoc(2, "c1", "Rosa moved")],
        seq=2,
    )
    # Searched for, "when" and "did" would rank the question above the answer.
    assert labels(index.search("When did Rosa move?", 5)) == [2, 1]
    assert index.search("what did she do", 5) == []
    index.add([TextDoc(3, "c1", "We moved in May")], seq=3)
    assert labels(index.search("What happened in May?", 5)) == [3]  # a month, kept


def test_an_index_of_the_first_format_is_rebuilt_from_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Format 1 analysed text with tantivy's default tokenizer (no stemming): its terms are
    # not the terms queries now search for, so the index is dropped and the log replayed.
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("label", stored=True, indexed=True, fast=True)
    builder.add_text_field("container", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=True)
    (tmp_path / "index").mkdir()
    old = tantivy.Index(builder.build(), path=str(tmp_path / "index"), reuse=False)
    writer = old.writer(heap_size=15_000_000, num_threads=1)
    writer.add_document(tantivy.Document(label=1, container="c1", text="researching agencies"))
    writer.commit()
    writer.wait_merging_threads()
    del old, writer
    (tmp_path / "fulltext.json").write_text('{"format": 1, "last_seq": 5}')
    with FullTextIndex(tmp_path, background=False) as reopened:
        assert "has another format: it is rebuilt from the log" in caplog.text
        assert reopened.last_seq == 0  # the owner replays the whole log
        assert reopened.search("researching", 5) == []
        reopened.add([TextDoc(1, "c1", "researching agencies")], seq=5)
        reopened.commit()
        assert labels(reopened.search("research", 5)) == [1]


def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    with (
        FullTextIndex(tmp_path, background=False),
        pytest.raises(DataDirLocked, match="already open"),
    ):
        FullTextIndex(tmp_path, background=False)
    with FullTextIndex(tmp_path, background=False) as again:  # released on close
        assert again.search("anything", 3) == []


def test_the_background_committer_flushes_the_tail(tmp_path: Path) -> None:
    with FullTextIndex(tmp_path, commit_interval=0.05) as index:
        index.add([TextDoc(1, "c1", "background swallow")], seq=8)
        deadline = time.monotonic() + 10
        while index.pending and time.monotonic() < deadline:
            time.sleep(0.01)
        assert index.pending == 0
        assert index.last_seq == 8
        assert labels(index.search("swallow", 3)) == [1]


def test_a_full_batch_commits_without_waiting_for_the_interval(tmp_path: Path) -> None:
    with FullTextIndex(tmp_path, commit_interval=3600.0, commit_docs=5) as index:
        index.add([TextDoc(n, "c1", "batch wren") for n in range(4)], seq=1)
        time.sleep(0.2)
        assert index.pending == 4
        index.add([TextDoc(4, "c1", "batch wren")], seq=2)
        deadline = time.monotonic() + 10
        while index.pending and time.monotonic() < deadline:
            time.sleep(0.01)
        assert index.pending == 0
        assert index.last_seq == 2
        assert len(index.search("wren", 10)) == 5


def test_every_write_stays_visible_across_background_commits(tmp_path: Path) -> None:
    """Writers read their own writes while the committer moves documents from tail to disk."""
    failures: list[str] = []

    with FullTextIndex(tmp_path, commit_interval=0.005, commit_docs=7) as index:

        def writer(offset: int) -> None:
            for n in range(offset, offset + 150):
                index.add([TextDoc(n, "c1", f"shared token{n}")], seq=n)
                if labels(index.search(f"token{n}", 3)) != [n]:
                    failures.append(f"add {n}")
                if n % 3 == 0:
                    index.delete([n], seq=n)
                    if index.search(f"token{n}", 3):
                        failures.append(f"delete {n}")
                time.sleep(0.001)  # let commits land between the writes

        threads = [threading.Thread(target=writer, args=(o,)) for o in (1000, 2000)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        assert len(index.search("shared", 1000)) == 200
    with FullTextIndex(tmp_path, background=False) as reopened:
        assert len(reopened.search("shared", 1000)) == 200


def test_a_containers_scores_are_its_own(tmp_path: Path) -> None:
    """BM25 statistics are per container: another container's writes and erasure leave every
    score of this one unchanged, in the tail and on disk."""
    mine = [
        TextDoc(1, "mine", "the lighthouse keeper paints the tower"),
        TextDoc(2, "mine", "a tower of paper by the window"),
        *corpus(30, "mine", start=1000),
    ]
    theirs = [
        *corpus(300, "theirs", start=5000),
        *(TextDoc(9000 + i, "theirs", "tower tower lighthouse") for i in range(40)),
    ]
    query = "lighthouse tower paper"
    with (
        FullTextIndex(tmp_path / "alone", background=False) as alone,
        FullTextIndex(tmp_path / "shared", background=False) as shared,
    ):
        alone.add(mine, seq=1)
        shared.add(mine, seq=1)
        shared.add(theirs, seq=2)
        expected = alone.search(query, 10, container="mine")
        assert labels(expected)[:2] == [1, 2]
        assert shared.search(query, 10, container="mine") == expected  # both in the tail
        alone.commit()
        shared.commit()
        expected = alone.search(query, 10, container="mine")
        assert shared.search(query, 10, container="mine") == expected
        assert shared.search_rare(query, 10, count=1, container="mine") == alone.search_rare(
            query, 10, count=1, container="mine"
        )
        # Across containers the lists are merged: theirs are there too.
        assert {9000, 1} <= set(labels(shared.search(query, 60)))

        shared.purge([doc.label for doc in theirs], seq=3, container="theirs")
        assert shared.search(query, 10, container="mine") == expected
        assert not shard_dir(shared.directory, "theirs").exists()
        assert shared.search(query, 10, container="theirs") == []


def test_an_index_shared_by_every_container_is_rebuilt_from_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Format 2 kept one index for every container, scored with statistics of them all.
    with FullTextIndex(tmp_path, background=False) as index:
        index.add([TextDoc(1, "c1", "researching agencies")], seq=5)
    shutil.move(shard_dir(tmp_path) / "index", tmp_path / "index")
    shutil.rmtree(tmp_path / SHARDS_DIR)
    (tmp_path / "fulltext.json").write_text('{"format": 2, "last_seq": 5}')
    with FullTextIndex(tmp_path, background=False) as reopened:
        assert "has another format: it is rebuilt from the log" in caplog.text
        assert reopened.last_seq == 0
        assert not (tmp_path / "index").exists()
        reopened.add([TextDoc(1, "c1", "researching agencies")], seq=5)
        assert labels(reopened.search("research", 5)) == [1]


@pytest.mark.parametrize("container", [None, "c1"])
def test_a_tie_at_the_cut_goes_by_label_however_the_index_was_committed(
    tmp_path: Path, container: str | None
) -> None:
    """A replay commits an index at other points than the live one did: the top ``k`` of equal
    scores must not depend on the order documents reached the disk in."""
    tied = [TextDoc(label, "c1", "the kettle sings") for label in range(100, 112)]
    one_by_one = FullTextIndex(tmp_path / "a", background=False)
    at_once = FullTextIndex(tmp_path / "b", background=False)
    try:
        for seq, doc in enumerate(reversed(tied), start=1):  # the highest labels first on disk
            one_by_one.add([doc], seq=seq)
            one_by_one.commit()
        at_once.add(tied, seq=1)
        at_once.commit()
        for k in (1, 3, 5):
            hits = one_by_one.search("kettle", k, container=container)
            assert labels(hits) == list(range(100, 100 + k))
            assert hits == at_once.search("kettle", k, container=container)
    finally:
        one_by_one.close()
        at_once.close()
