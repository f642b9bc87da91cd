"""The hnswlib vector index: correctness against brute force, persistence, erasure, threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from mnemolog.projections.vectors.files import sidecar_path
from mnemolog.projections.vectors.index import VectorIndex

DIM = 64


def unit_rows(rows: int, dim: int = DIM, seed: int = 0) -> NDArray[np.float32]:
    data = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return data / np.sqrt(np.einsum("ij,ij->i", data, data))[:, None]


def canary(seed: int) -> NDArray[np.float32]:
    """A unit vector of entries ±1/8: hnswlib's normalisation leaves it bit for bit as it is,
    so its float32 bytes are exactly what the index file would hold."""
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=DIM)
    return (signs / 8.0).astype(np.float32)


def built(path: Path, rows: int = 300, seed: int = 0) -> VectorIndex:
    index = VectorIndex(path, DIM)
    index.add(list(range(rows)), unit_rows(rows, seed=seed))
    return index


def test_nearest_neighbours_match_brute_force(tmp_path: Path) -> None:
    data = unit_rows(2000)
    index = VectorIndex(tmp_path / "v.bin", DIM)
    index.add(list(range(2000)), data)
    queries = unit_rows(50, seed=1)
    found = 0
    for query in queries:
        exact = set(np.argsort(-np.einsum("ij,j->i", data, query))[:10].tolist())
        hits = index.search(query, 10)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        found += len(exact & {label for label, _ in hits})
    assert found / (10 * len(queries)) >= 0.95
    label, similarity = index.search(data[123], 1)[0]
    assert label == 123
    assert similarity == pytest.approx(1.0, abs=1e-5)


def test_k_beyond_the_element_count_is_clamped(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / "v.bin", DIM)
    assert index.search(unit_rows(1)[0], 10) == []
    index.add([7, 8, 9, 10, 11], unit_rows(5))
    assert sorted(label for label, _ in index.search(unit_rows(1, seed=5)[0], 50)) == [
        7,
        8,
        9,
        10,
        11,
    ]
    index.remove([7, 8])
    assert len(index.search(unit_rows(1, seed=5)[0], 50)) == 3
    assert index.search(unit_rows(1)[0], 0) == []
    assert len(index.search(unit_rows(1)[0], 10**9)) == 3


def test_filter_restricts_results(tmp_path: Path) -> None:
    data = unit_rows(500)
    index = VectorIndex(tmp_path / "v.bin", DIM)
    index.add(list(range(500)), data)
    hits = index.search(data[10], 20, allowed=lambda label: label % 10 == 0)
    assert len(hits) == 20
    assert all(label % 10 == 0 for label, _ in hits)
    assert hits[0][0] == 10
    # Fewer admitted labels than k: every one of them, best first, no error.
    few = index.search(data[3], 10, allowed=lambda label: label in {3, 250, 499})
    assert few[0][0] == 3
    assert few[0][1] >= few[1][1] >= few[2][1]
    assert sorted(label for label, _ in few) == [3, 250, 499]
    assert index.search(data[3], 10, allowed=lambda label: False) == []


def exact_top(
    data: NDArray[np.float32], query: NDArray[np.float32], labels: set[int], k: int
) -> list[int]:
    ranked = sorted(labels, key=lambda label: (-float(np.dot(data[label], query)), label))
    return ranked[:k]


@pytest.mark.parametrize("order", ["ascending", "shuffled"])
def test_a_set_filter_is_scanned_exactly(tmp_path: Path, order: str) -> None:
    data = unit_rows(3000)
    index = VectorIndex(tmp_path / "v.bin", DIM)
    labels = list(range(3000))
    if order == "shuffled":
        np.random.default_rng(8).shuffle(labels)
    for start in range(0, 3000, 700):
        batch = labels[start : start + 700]
        index.add(batch, data[batch])
    index.remove([30])
    scope = set(range(0, 3000, 6))
    for query in unit_rows(20, seed=2):
        hits = index.search(query, 25, allowed=scope)
        assert [label for label, _ in hits] == exact_top(data, query, scope - {30}, 25)
        for label, similarity in hits:
            assert similarity == pytest.approx(float(np.dot(data[label], query)), abs=1e-5)
    assert index.search(data[0], 5, allowed=set()) == []
    assert [label for label, _ in index.search(data[0], 5, allowed={0, 7})] == [0, 7]


def test_a_loaded_index_scans_exactly_once_its_vectors_are_copied(tmp_path: Path) -> None:
    path = tmp_path / "v.bin"
    data = unit_rows(2500)
    index = VectorIndex(path, DIM)
    index.add(list(range(2500)), data)
    index.remove([12])
    index.save(last_seq=1)
    loaded = VectorIndex.load(path, dim=DIM)
    assert loaded is not None
    scope = set(range(0, 2500, 5))
    query = unit_rows(1, seed=9)[0]
    during = loaded.search(query, 10, allowed=scope)  # the graph answers until the copy ends
    assert {label for label, _ in during} <= scope - {12}
    for thread in threading.enumerate():
        if thread.name == "vector-mirror":
            thread.join(timeout=30)
    loaded.add([2500], unit_rows(1, seed=3))
    assert [label for label, _ in loaded.search(query, 10, allowed=scope)] == exact_top(
        data, query, scope - {12}, 10
    )
    assert loaded.search(unit_rows(1, seed=3)[0], 1, allowed={2500, 1})[0][0] == 2500


def test_a_set_filter_survives_a_set_growing_in_another_thread(tmp_path: Path) -> None:
    data = unit_rows(4000)
    index = VectorIndex(tmp_path / "v.bin", DIM)
    index.add(list(range(4000)), data)
    scope: set[int] = set(range(1000))
    stop = threading.Event()

    def grow() -> None:
        label = 1000
        while not stop.is_set():
            scope.add(label % 4000)
            scope.discard((label - 500) % 4000)
            label += 1

    thread = threading.Thread(target=grow)
    thread.start()
    try:
        for query in unit_rows(200, seed=4):
            assert len(index.search(query, 10, allowed=scope)) == 10
    finally:
        stop.set()
        thread.join()


def test_remove_hides_and_add_restores(tmp_path: Path) -> None:
    data = unit_rows(100)
    index = VectorIndex(tmp_path / "v.bin", DIM)
    index.add(list(range(100)), data)
    index.remove([5, 5, 999])  # repeated and unknown labels are ignored
    assert len(index) == 99
    assert 5 not in {label for label, _ in index.search(data[5], 10)}
    index.add([5], data[5:6])
    assert len(index) == 100
    assert index.search(data[5], 1)[0][0] == 5


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "v.bin"
    index = built(path)
    index.remove([4])
    index.save(last_seq=42)
    loaded = VectorIndex.load(path, dim=DIM)
    assert loaded is not None
    assert loaded.last_seq == 42
    assert len(loaded) == len(index) == 299
    query = unit_rows(1, seed=9)[0]
    assert loaded.search(query, 10) == index.search(query, 10)
    assert 4 not in {label for label, _ in loaded.search(unit_rows(300)[4], 5)}
    loaded.add([1000], unit_rows(1, seed=3))
    assert loaded.search(unit_rows(1, seed=3)[0], 1)[0][0] == 1000
    assert VectorIndex.load(path, dim=DIM + 1) is None  # another embedder: rebuild


@pytest.mark.parametrize("damage", ["flip", "truncate", "sidecar", "no_sidecar", "no_file"])
def test_damaged_or_missing_files_load_as_none(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "v.bin"
    built(path).save(last_seq=1)
    meta = sidecar_path(path)
    if damage == "flip":
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0x40
        path.write_bytes(bytes(raw))
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:-100])
    elif damage == "sidecar":
        meta.write_bytes(b'{"format": 1, "dim": ')
    elif damage == "no_sidecar":
        meta.unlink()
    else:
        path.unlink()
    assert VectorIndex.load(path) is None


def test_builds_from_the_same_input_are_byte_identical(tmp_path: Path) -> None:
    data = unit_rows(1500)
    items = [(label, data[label]) for label in range(1500)]
    first, second = VectorIndex(tmp_path / "a.bin", DIM), VectorIndex(tmp_path / "b.bin", DIM)
    first.rebuild(iter(items))
    second.rebuild(iter(items))
    first.save(last_seq=3)
    second.save(last_seq=3)
    assert (tmp_path / "a.bin").read_bytes() == (tmp_path / "b.bin").read_bytes()
    third = VectorIndex(tmp_path / "c.bin", DIM)
    third.add(list(range(1500)), data)
    fourth = VectorIndex(tmp_path / "d.bin", DIM)
    fourth.add(list(range(1500)), data)
    third.save(last_seq=3)
    fourth.save(last_seq=3)
    assert (tmp_path / "c.bin").read_bytes() == (tmp_path / "d.bin").read_bytes()


def test_rebuild_after_remove_leaves_no_bytes_of_the_removed_vector(tmp_path: Path) -> None:
    path = tmp_path / "v.bin"
    secret = canary(77)
    data = unit_rows(200)
    index = VectorIndex(path, DIM)
    index.add([*range(200), 500], np.vstack([data, secret]))
    index.save(last_seq=10)
    assert secret.tobytes() in path.read_bytes()  # the probe sees the vector when it is there

    index.remove([500])
    index.save(last_seq=11)
    assert secret.tobytes() in path.read_bytes()  # mark_deleted is not erasure

    index.rebuild((label, data[label]) for label in range(200))
    index.save(last_seq=12)
    assert secret.tobytes() not in path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.bin", "v.bin.meta.json"]
    loaded = VectorIndex.load(path)
    assert loaded is not None
    assert len(loaded) == 200
    assert 500 not in {label for label, _ in loaded.search(secret, 200)}


def test_searches_run_while_another_thread_adds(tmp_path: Path) -> None:
    data = unit_rows(3100)
    index = VectorIndex(tmp_path / "v.bin", DIM)
    index.add(list(range(100)), data[:100])
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for start in range(100, 3100, 150):  # crosses several capacity doublings
                index.add(list(range(start, start + 150)), data[start : start + 150])
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=writer)
    thread.start()
    searches = 0
    while thread.is_alive() or searches < 50:
        hits = index.search(data[searches % 100], 5, allowed=lambda label: label % 2 == 0)
        assert hits and all(label % 2 == 0 for label, _ in hits)
        searches += 1
    thread.join()
    assert not errors
    assert len(index) == 3100
    assert index.search(data[3099], 1)[0][0] == 3099


def test_bad_vectors_are_refused(tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / "v.bin", DIM)
    with pytest.raises(ValueError, match="shape"):
        index.add([1], np.ones((1, DIM + 1), dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        index.add([1], np.full((1, DIM), np.nan, dtype=np.float32))
    with pytest.raises(ValueError, match="zero"):
        index.add([1], np.zeros((1, DIM), dtype=np.float32))
    with pytest.raises(ValueError, match="labels"):
        index.add([-1], unit_rows(1))
    with pytest.raises(ValueError, match="dimensions"):
        index.search(np.ones(DIM - 1, dtype=np.float32), 3)
    assert len(index) == 0
    assert index.search(np.zeros(DIM, dtype=np.float32), 3) == []


def test_scrub_overwrites_erased_vectors_in_memory_and_file(tmp_path: Path) -> None:
    path = tmp_path / "v.hnsw"
    secret = canary(78)
    data = unit_rows(300)
    index = VectorIndex(path, DIM)
    index.add([*range(300), 1000], np.vstack([data, secret]))
    index.save(last_seq=1)
    assert secret.tobytes() in path.read_bytes()  # the probe sees the vector when it is there

    index.scrub([1000, 5])
    index.save(last_seq=2)
    assert secret.tobytes() not in path.read_bytes()
    hits = [label for label, _ in index.search(secret, 50)]
    assert 1000 not in hits and 5 not in hits
    assert len(index) == 299
    assert index.search(data[7], 1)[0][0] == 7
    reloaded = VectorIndex.load(path, dim=DIM)
    assert reloaded is not None
    assert 1000 not in [label for label, _ in reloaded.search(secret, 50)]


def test_vectors_are_found_before_their_graph_insert_is_made(tmp_path: Path) -> None:
    """Graph inserts are queued for a background thread; until it makes them, every search
    (exact scans and graph searches alike) and the count already see the new vectors, and a
    save makes them first."""
    from mnemolog.projections.vectors import index as vectors

    data = unit_rows(600)
    index = VectorIndex(tmp_path / "v.bin", DIM)
    index.add(list(range(300)), data[:300])
    index.save(1)  # drained: the first 300 are in the graph
    hold = threading.Event()
    busy = vectors._GRAPH_WORKER.submit(hold.wait, 30)  # the worker cannot start the inserts
    try:
        index.add(list(range(300, 600)), data[300:])
        index.add([7], -data[7:8])  # a replaced vector: the graph still holds the old one
        assert len(index) == 600
        for label in (310, 599):
            assert index.search(data[label], 1)[0][0] == label  # the graph path, merged
            assert index.search(data[label], 1, allowed={label, 1, 2})[0][0] == label
        assert 7 not in {label for label, _ in index.search(data[7], 5)}
        assert index.search(-data[7], 1)[0][0] == 7
        index.save(2)  # waits for nothing: it makes the queued inserts itself
    finally:
        hold.set()
        busy.result(30)
    loaded = VectorIndex.load(tmp_path / "v.bin", dim=DIM)
    assert loaded is not None and len(loaded) == 600
    assert loaded.search(data[599], 1)[0][0] == 599
    assert loaded.search(-data[7], 1)[0][0] == 7


def test_a_loaded_index_fills_its_matrix_from_the_stored_vectors_when_they_match(
    tmp_path: Path,
) -> None:
    from mnemolog.projections.vectors.exact import StoredVectors

    data = unit_rows(400)
    index = VectorIndex(tmp_path / "v.bin", DIM)
    index.add(list(range(400)), data)
    index.remove([7])
    scope = set(range(0, 400, 3))
    before = [index.search(q, 10, allowed=scope) for q in unit_rows(5, seed=4)]
    index.save(400)
    live = [n for n in range(400) if n != 7]
    asked: list[int] = []

    def stored(through: int) -> StoredVectors:
        asked.append(through)
        return StoredVectors(np.asarray(live, dtype=np.int64), data[live])

    loaded = VectorIndex.load(tmp_path / "v.bin", dim=DIM, stored=stored)
    assert loaded is not None and asked == [400]
    assert loaded._mirror.ready  # filled at once, no copy from the graph in the background
    assert [loaded.search(q, 10, allowed=scope) for q in unit_rows(5, seed=4)] == before

    def wrong(through: int) -> StoredVectors:  # one label short: the graph is the truth
        return StoredVectors(np.asarray(live[:-1], dtype=np.int64), data[live[:-1]])

    fallback = VectorIndex.load(tmp_path / "v.bin", dim=DIM, stored=wrong)
    assert fallback is not None
    deadline = time.monotonic() + 30
    while not fallback._mirror.ready and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fallback._mirror.row_of.keys() == set(live)


def test_a_save_on_the_graph_worker_lets_adds_and_searches_go_on_and_saves_keep_their_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemolog.projections.vectors import files as vector_files

    path = tmp_path / "v.bin"
    data = unit_rows(400)
    secret = canary(91)
    index = VectorIndex(path, DIM)
    index.add([*range(300), 1000], np.vstack([data[:300], secret]))
    index.save(1)  # the matrix is ready: later adds leave their graph insert to the worker
    checksum = vector_files.file_sha256
    inside = threading.Event()
    release = threading.Event()

    def held(file: Path) -> str:  # the first save stops inside, after its graph is written
        if not release.is_set():
            inside.set()
            release.wait(30)
        return checksum(file)

    monkeypatch.setattr(vector_files, "file_sha256", held)
    first = index.save_later(2)
    try:
        assert inside.wait(30)
        index.add(list(range(300, 400)), data[300:])  # not held up by the save under way
        assert index.search(data[350], 1)[0][0] == 350
        scrubbed = threading.Thread(target=lambda: (index.scrub([1000]), index.save(3)))
        scrubbed.start()  # an erasure's save waits for the one under way, then writes its own
        time.sleep(0.05)
        assert not first.done() and scrubbed.is_alive()
    finally:
        release.set()
    first.result(30)
    scrubbed.join(30)
    assert secret.tobytes() not in path.read_bytes()  # the last save asked is the one on disk
    loaded = VectorIndex.load(path, dim=DIM)
    assert loaded is not None and loaded.last_seq == 3 and len(loaded) == 400
    assert loaded.search(data[399], 1)[0][0] == 399


def test_a_matrix_adopted_at_load_serves_and_grows_like_one_built_by_adds(tmp_path: Path) -> None:
    """The boot fill takes the decoded matrix as the mirror (no copy): the rows are the unit
    vectors a build makes, bit for bit, and later adds grow it as usual."""
    from mnemolog.projections.vectors.exact import StoredVectors, unit

    raw = np.random.default_rng(3).standard_normal((300, DIM)).astype(np.float32) * 3
    index = VectorIndex(tmp_path / "v.bin", DIM)
    index.add(list(range(0, 600, 2)), raw)
    index.save(1000)
    loaded = VectorIndex.load(
        tmp_path / "v.bin",
        dim=DIM,
        stored=lambda _: StoredVectors(np.arange(0, 600, 2, dtype=np.int64), raw.copy()),
    )
    assert loaded is not None and loaded._mirror.ready and loaded._mirror.ascending
    assert np.array_equal(loaded._mirror.matrix[:300], unit(raw))
    more = unit_rows(50, seed=9)
    loaded.add(list(range(600, 650)), more)
    index.add(list(range(600, 650)), more)
    scope = set(range(0, 650, 3))
    for query in unit_rows(10, seed=11):
        assert loaded.search(query, 10, allowed=scope) == index.search(query, 10, allowed=scope)
    assert loaded._mirror.row_of[648] == 348 and np.array_equal(
        loaded._mirror.matrix[348], index._mirror.matrix[index._mirror.row_of[648]]
    )
