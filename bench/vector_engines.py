"""Vector index engines side by side, on real embeddings: hnswlib (what the vector index runs)
against indexes that keep compact vectors, usearch (float16, int8) and faiss (HNSW over float16
codes), at the sizes asked for, on the same vectors in the same run.

The vectors are texts embedded by the fast tier (the default), first the user turns of the
LongMemEval share in ``--bench-data`` (78k distinct real turns), then, past them, the distinct
facts of ``bench/factgen.py`` (what ``bench/scale.py`` writes). Every engine is built as the
vector index builds hnswlib: one thread, 16 links a node, a build list of 64, a search list
of 128. For each engine and size:

- *build*: inserts per second, one thread, 1,024 rows a call;
- *bytes/vector*: the saved file's size over the vectors;
- *search*: k=10 p50 and p99 over ``--queries`` held-out texts, and recall@10 against an
  exact float32 scan of the same vectors;
- *container*: the same, restricted to one label in ten (a container among several): hnswlib
  with its filter (a Python call per visited node, as the index does), faiss with a bitmap
  selector, usearch (whose Python API has no filter) by asking for 20x k and keeping the
  admitted ones;
- *deleted*: recall@10 after a tenth of the labels is removed (hnswlib ``mark_deleted``,
  usearch ``remove``, faiss has no removal from HNSW: a selector leaves them out);
- *erased*: whether a removed vector's bytes are still in the saved file, looked for as the
  engine stores them (erasure must reach the index: hnswlib keeps them, which is why the index
  overwrites erased labels with noise; int8 codes are not looked for).

usearch and faiss are no dependencies of mnemolog: ``pip install usearch faiss-cpu`` first.

    .venv/bin/python bench/vector_engines.py --sizes 77990,1000000 --json out.json \
        --out docs/benchmarks.md
    .venv/bin/python bench/vector_engines.py --from-json out.json --out docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))
from factgen import distinct_facts
from sections import write_section

from mnemolog.embedding.select import open_embedder
from mnemolog.settings import Settings

K = 10
M = 16
EF_CONSTRUCTION = 64
EF_SEARCH = 128
CHUNK = 1024
SHARE = 10  # a container holds one label in SHARE
OVERFETCH = 20  # usearch, unfiltered: asks for OVERFETCH * k, keeps the admitted
LME = "dev/longmemeval_s_useronly_dev.json.gz"
SECTION = "vector_engines.py"

Matrix = NDArray[np.float32]


def progress(message: str) -> None:
    print(f"[engines] {message}", file=sys.stderr, flush=True)


def texts(bench_data: Path, count: int) -> list[str]:
    """``count`` distinct texts: LongMemEval's user turns, then factgen's distinct facts."""
    with gzip.open(bench_data / LME) as file:
        found = json.load(file)
    turns = sorted({turn[1] for session in found["sessions"].values() for turn in session})
    if count <= len(turns):
        return turns[:count]
    return turns + [fact.text for fact in distinct_facts(count - len(turns), seed=1)]


def embedded(all_texts: list[str], cache: Path) -> Matrix:
    if cache.exists():
        loaded: Matrix = np.load(cache)
        if loaded.shape[0] == len(all_texts):
            return loaded
    embedder = open_embedder("fast", Settings().model_cache)
    rows = [embedder.embed(all_texts[i : i + 4096]) for i in range(0, len(all_texts), 4096)]
    matrix = np.ascontiguousarray(np.concatenate(rows), dtype=np.float32)
    np.save(cache, matrix)
    return matrix


class Engine(Protocol):
    def add(self, labels: NDArray[np.int64], rows: Matrix) -> None: ...
    def search(self, query: Matrix, k: int) -> list[int]: ...
    def search_in(self, query: Matrix, k: int, admitted: NDArray[np.bool_]) -> list[int]: ...
    def remove(self, labels: NDArray[np.int64]) -> None: ...
    def save(self, path: Path) -> None: ...


class Hnswlib:
    def __init__(self, dim: int, capacity: int) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="cosine", dim=dim)
        self.index.init_index(capacity, M=M, ef_construction=EF_CONSTRUCTION, random_seed=100)
        self.index.set_num_threads(1)
        self.index.set_ef(EF_SEARCH)

    def add(self, labels: NDArray[np.int64], rows: Matrix) -> None:
        self.index.add_items(rows, labels, num_threads=1)

    def search(self, query: Matrix, k: int) -> list[int]:
        found, _ = self.index.knn_query(query, k=k, num_threads=1)
        return [int(x) for x in found[0]]

    def search_in(self, query: Matrix, k: int, admitted: NDArray[np.bool_]) -> list[int]:
        found, _ = self.index.knn_query(
            query, k=k, num_threads=1, filter=lambda label: bool(admitted[label])
        )
        return [int(x) for x in found[0]]

    def remove(self, labels: NDArray[np.int64]) -> None:
        for label in labels.tolist():
            self.index.mark_deleted(label)

    def save(self, path: Path) -> None:
        self.index.save_index(str(path))


class Usearch:
    def __init__(self, dim: int, capacity: int, dtype: str) -> None:
        from usearch.index import Index

        self.index = Index(
            ndim=dim,
            metric="cos",
            dtype=dtype,
            connectivity=M,
            expansion_add=EF_CONSTRUCTION,
            expansion_search=EF_SEARCH,
        )

    def add(self, labels: NDArray[np.int64], rows: Matrix) -> None:
        self.index.add(labels.astype(np.uint64), rows, threads=1)

    def search(self, query: Matrix, k: int) -> list[int]:
        return [int(x) for x in self.index.search(query, k, threads=1).keys]

    def search_in(self, query: Matrix, k: int, admitted: NDArray[np.bool_]) -> list[int]:
        keys = self.index.search(query, OVERFETCH * k, threads=1).keys
        return [int(x) for x in keys if admitted[int(x)]][:k]

    def remove(self, labels: NDArray[np.int64]) -> None:
        self.index.remove(labels.astype(np.uint64))

    def save(self, path: Path) -> None:
        self.index.save(str(path))


class Faiss:
    def __init__(self, dim: int, capacity: int) -> None:
        import faiss

        self.faiss = faiss
        faiss.omp_set_num_threads(1)
        inner = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_fp16, M, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efConstruction = EF_CONSTRUCTION
        inner.hnsw.efSearch = EF_SEARCH
        self.index = faiss.IndexIDMap2(inner)
        self.removed = np.zeros(capacity, dtype=bool)

    def add(self, labels: NDArray[np.int64], rows: Matrix) -> None:
        self.index.add_with_ids(rows, labels)

    def _selected(self, admitted: NDArray[np.bool_], query: Matrix, k: int) -> list[int]:
        bits = np.packbits(admitted & ~self.removed[: admitted.size], bitorder="little")
        selector = self.faiss.IDSelectorBitmap(admitted.size, self.faiss.swig_ptr(bits))
        params = self.faiss.SearchParametersHNSW(sel=selector, efSearch=EF_SEARCH)
        _, found = self.index.search(query.reshape(1, -1), k, params=params)
        return [int(x) for x in found[0] if x >= 0]

    def search(self, query: Matrix, k: int) -> list[int]:
        if self.removed.any():
            return self._selected(np.ones(self.removed.size, dtype=bool), query, k)
        _, found = self.index.search(query.reshape(1, -1), k)
        return [int(x) for x in found[0] if x >= 0]

    def search_in(self, query: Matrix, k: int, admitted: NDArray[np.bool_]) -> list[int]:
        return self._selected(admitted, query, k)

    def remove(self, labels: NDArray[np.int64]) -> None:
        self.removed[labels] = True

    def save(self, path: Path) -> None:
        self.faiss.write_index(self.index, str(path))


ENGINES: dict[str, Callable[[int, int], Engine]] = {
    "hnswlib f32": Hnswlib,
    "usearch f16": lambda dim, n: Usearch(dim, n, "f16"),
    "usearch i8": lambda dim, n: Usearch(dim, n, "i8"),
    "faiss HNSW fp16": Faiss,
}


def exact(data: Matrix, query: Matrix, k: int, admitted: NDArray[np.bool_] | None) -> set[int]:
    scores = data @ query
    if admitted is not None:
        scores = np.where(admitted, scores, -np.inf)
    return {int(x) for x in np.argpartition(-scores, k)[:k]}


def timed_recall(
    ask: Callable[[Matrix], list[int]], probes: Matrix, truth: list[set[int]]
) -> dict[str, float]:
    took, hit = [], 0
    for probe, wanted in zip(probes, truth, strict=True):
        started = time.perf_counter()
        found = ask(probe)
        took.append((time.perf_counter() - started) * 1000)
        hit += len(wanted & set(found[:K]))
    ordered = sorted(took)
    return {
        "p50_ms": statistics.median(took),
        "p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "recall_at_10": hit / (K * len(truth)),
    }


def run(name: str, data: Matrix, probes: Matrix, workdir: Path) -> dict[str, Any]:
    size = data.shape[0]
    labels = np.arange(size, dtype=np.int64)
    rng = np.random.default_rng(7)
    container: NDArray[np.bool_] = np.asarray(rng.random(size) < 1 / SHARE, dtype=bool)
    removed = rng.choice(size, size // 10, replace=False)
    kept = np.ones(size, dtype=bool)
    kept[removed] = False
    engine = ENGINES[name](data.shape[1], size)
    started = time.perf_counter()
    for first in range(0, size, CHUNK):
        engine.add(labels[first : first + CHUNK], data[first : first + CHUNK])
    build_s = time.perf_counter() - started
    path = workdir / "index.bin"
    engine.save(path)
    out: dict[str, Any] = {
        "build_per_s": size / build_s,
        "bytes_per_vector": path.stat().st_size / size,
    }
    plain = [exact(data, p, K, None) for p in probes]
    inside = [exact(data, p, K, container) for p in probes]
    out["search"] = timed_recall(lambda q: engine.search(q, K), probes, plain)
    out["container"] = timed_recall(lambda q: engine.search_in(q, K, container), probes, inside)
    engine.remove(removed)
    left = [exact(data, p, K, kept) for p in probes]
    out["deleted"] = timed_recall(lambda q: engine.search(q, K), probes, left)
    engine.save(path)
    out["erased_bytes_kept"] = _holds_vector(path, data[removed[:20]], name)
    path.unlink()
    return out


def _holds_vector(path: Path, rows: Matrix, name: str) -> str:
    """How many of ``rows`` (removed vectors) the saved file still holds, looked for as the
    engine stores them: float32 scaled to unit length as hnswlib does, or float16."""
    if "i8" in name:
        return "not looked for (int8 codes)"
    blob = path.read_bytes()
    held = 0
    for row in rows:
        if "f32" in name:
            scale = np.float32(1.0) / (np.sqrt(np.sum(row * row, dtype=np.float32)) + 1e-30)
            stored = (row * np.float32(scale)).astype(np.float32).tobytes()
        else:
            stored = row.astype(np.float16).tobytes()
        held += stored in blob
    return f"at least {held} of {len(rows)}"  # a bit of rounding hides the others


def section(report: dict[str, Any]) -> str:
    """The page's section: one row per engine and size."""
    rows = [
        "| engine @ vectors | build/s | bytes/vector | search p50 / p99 ms | recall@10 |"
        " 1 label in 10: p50 ms, recall@10 | recall@10, a tenth removed |"
        " removed vectors found in the file |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key, found in report["engines"].items():
        plain, inside, left = found["search"], found["container"], found["deleted"]
        rows.append(
            f"| {key} | {found['build_per_s']:,.0f} | {found['bytes_per_vector']:,.0f} |"
            f" {plain['p50_ms']:.2f} / {plain['p99_ms']:.2f} | {plain['recall_at_10']:.3f} |"
            f" {inside['p50_ms']:.2f}, {inside['recall_at_10']:.3f} |"
            f" {left['recall_at_10']:.3f} | {found['erased_bytes_kept']} |"
        )
    return (
        "## Vector index engines side by side\n\n"
        f"Written by `{report['command']}` on {report['date']} (code {report['code']});"
        " `bench/vector_engines.py` says how each figure is taken. Vectors of the fast tier:"
        " LongMemEval's user turns (77,990), then the distinct facts of `bench/factgen.py`"
        " (1,000,000); one thread, 16 links a node, build list 64, search list 128.\n\n"
        + "\n".join(rows)
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="77990,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--bench-data", type=Path, default=Path("../shared/bench-data"))
    parser.add_argument("--cache", type=Path, help="where the embedded vectors are kept (.npy)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--out", type=Path, help="write the section into this page")
    parser.add_argument("--from-json", type=Path, help="only write the section of a saved run")
    args = parser.parse_args()
    if args.from_json is not None:
        saved: dict[str, Any] = json.loads(args.from_json.read_text())
        if args.out is not None:
            write_section(args.out, SECTION, section(saved))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    everything = texts(args.bench_data, max(sizes) + args.queries)
    # The queries of a size are the texts just past it: left out of the index, and of the
    # same source (78,290 real turns: at 77,990 every query is a real turn too).
    cache = args.cache or Path(tempfile.gettempdir()) / f"engines-{len(everything)}.npy"
    progress(f"embedding {len(everything):,} texts (cache {cache})")
    matrix = embedded(everything, cache)
    report: dict[str, Any] = {
        "command": "python bench/vector_engines.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "code": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip(),
        "engines": {},
    }
    found_of: dict[str, Any] = report["engines"]
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            for name in args.engines.split(","):
                progress(f"{name} at {size:,}")
                probes = matrix[size : size + args.queries]
                found = run(name, matrix[:size], probes, Path(tmp))
                found_of[f"{name} @ {size:,}"] = found
                progress(json.dumps(found))
    for key, found in found_of.items():
        plain, inside = found["search"], found["container"]
        print(
            f"{key}: build {found['build_per_s']:,.0f}/s,"
            f" {found['bytes_per_vector']:,.0f} B/vector, search p50 {plain['p50_ms']:.2f} ms"
            f" p99 {plain['p99_ms']:.2f} recall {plain['recall_at_10']:.3f}; container p50"
            f" {inside['p50_ms']:.2f} ms recall {inside['recall_at_10']:.3f};"
            f" after deletes recall {found['deleted']['recall_at_10']:.3f};"
            f" removed vectors in the file: {found['erased_bytes_kept']}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    if args.out is not None:
        write_section(args.out, SECTION, section(report))


if __name__ == "__main__":
    main()
