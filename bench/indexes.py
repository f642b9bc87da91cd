"""The two search indexes: hnswlib vectors and tantivy full text, at 10k and 100k documents.

Vectors: random unit 256-d float32 vectors under integer labels. Build (single-threaded
inserts, as the index always does), k=10 search latency without a filter and with a filter
admitting one label in ten, recall@10 against an exact scan, save (graph + fsync + checksum)
and load (checksum + parse) times, file size. Isotropic random vectors are the hardest case
for HNSW, so recall and latency are also shown with a wider candidate list (ef=400), and the
same runs are made on ``low-rank`` vectors (a 32-d subspace plus noise), which are closer to
what embedding models produce.

Full text: short synthetic documents (8 to 24 words drawn from a Zipf-like vocabulary of 20k
words). Add + commit throughput in batches of ``--batch`` documents, commit latency, search
latency for 1 to 4 word queries with an empty tail and with 500 uncommitted documents in the
tail, and the time a purge (erase one document, rebuild the files) takes.

    .venv/bin/python bench/indexes.py [--sizes 10000 100000] [--queries 500] [--dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from latency import latency_summary

from mnemolog.projections.fulltext.index import FullTextIndex, TextDoc
from mnemolog.projections.vectors.files import sidecar_path
from mnemolog.projections.vectors.index import VectorIndex

DIM = 256
K = 10
TAIL_DOCS = 500
VOCABULARY = 20_000
RECALL_QUERIES = 50
LOW_RANK = 32  # intrinsic dimension of the ``low-rank`` vectors, nearer to real embeddings
WIDE_EF = 400  # isotropic random 256-d vectors are the worst case for HNSW recall

Vectors = np.ndarray[Any, np.dtype[np.float32]]


def unit_rows(rows: int, seed: int, kind: str) -> Vectors:
    """``rows`` unit vectors: isotropic (``random``) or near a 32-d subspace (``low-rank``)."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        data = rng.standard_normal((rows, DIM)).astype(np.float32)
    else:
        basis = np.random.default_rng(0).standard_normal((LOW_RANK, DIM))
        data = rng.standard_normal((rows, LOW_RANK)) @ basis
        data = (data + 0.1 * rng.standard_normal((rows, DIM)) * np.sqrt(LOW_RANK)).astype(
            np.float32
        )
    return data / np.sqrt(np.einsum("ij,ij->i", data, data))[:, None]


def bench_vectors(workdir: Path, size: int, queries: int, kind: str) -> dict[str, Any]:
    data = unit_rows(size, seed=size, kind=kind)
    probes = unit_rows(queries, seed=1, kind=kind)
    path = workdir / f"vectors-{kind}-{size}.bin"
    index = VectorIndex(path, DIM)
    start = time.perf_counter()
    index.add(list(range(size)), data)
    build_s = time.perf_counter() - start

    def timed(allowed: Any) -> list[float]:
        samples = []
        for probe in probes:
            start = time.perf_counter()
            index.search(probe, K, allowed=allowed)
            samples.append(time.perf_counter() - start)
        return samples

    plain = timed(None)
    filtered = timed(lambda label: label % 10 == 0)
    exact = [
        set(np.argsort(-np.einsum("ij,j->i", data, probe))[:K].tolist())
        for probe in probes[:RECALL_QUERIES]
    ]

    def recall() -> float:
        found = sum(
            len(truth & {label for label, _ in index.search(probe, K)})
            for truth, probe in zip(exact, probes, strict=False)
        )
        return found / (K * len(exact))

    recall_default = recall()
    default_ef = index.ef_search
    index.ef_search = WIDE_EF
    recall_wide = recall()
    wide = timed(None)
    index.ef_search = default_ef
    start = time.perf_counter()
    index.save(last_seq=size)
    save_s = time.perf_counter() - start
    start = time.perf_counter()
    loaded = VectorIndex.load(path, dim=DIM)
    load_s = time.perf_counter() - start
    assert loaded is not None
    return {
        "data": kind,
        "size": size,
        "build_s": build_s,
        "inserts_per_s": size / build_s,
        "search": latency_summary(plain),
        "search_filtered_10pct": latency_summary(filtered),
        "recall_at_10": recall_default,
        "recall_at_10_wide_ef": recall_wide,
        "search_wide_ef": latency_summary(wide),
        "save_s": save_s,
        "load_s": load_s,
        "file_mib": (path.stat().st_size + sidecar_path(path).stat().st_size) / 2**20,
    }


class Corpus:
    """Short documents over a Zipf-like vocabulary, reproducible from a seed."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        ranks = np.arange(1, VOCABULARY + 1, dtype=np.float64)
        self.weights = (1.0 / ranks) / (1.0 / ranks).sum()
        self.words = np.array([f"w{n}" for n in range(VOCABULARY)])

    def text(self, words: int) -> str:
        return " ".join(self.words[self.rng.choice(VOCABULARY, size=words, p=self.weights)])

    def docs(self, start: int, count: int) -> list[TextDoc]:
        lengths = self.rng.integers(8, 25, size=count)
        return [
            TextDoc(start + n, f"user{(start + n) % 50}", self.text(int(length)))
            for n, length in enumerate(lengths)
        ]


def bench_fulltext(workdir: Path, size: int, queries: int, batch: int) -> dict[str, Any]:
    corpus = Corpus(seed=size)
    docs = corpus.docs(0, size)
    directory = workdir / f"fulltext-{size}"
    index = FullTextIndex(directory, background=False)
    commits: list[float] = []
    adds: list[float] = []
    start = time.perf_counter()
    for offset in range(0, size, batch):
        began = time.perf_counter()
        index.add(docs[offset : offset + batch], seq=offset + batch)
        added = time.perf_counter()
        index.commit()
        adds.append(added - began)
        commits.append(time.perf_counter() - added)
    load_s = time.perf_counter() - start
    probes = [corpus.text(int(n)) for n in corpus.rng.integers(1, 5, size=queries)]

    def timed(container: bool) -> list[float]:
        samples = []
        for n, probe in enumerate(probes):
            start = time.perf_counter()
            index.search(probe, K, container=f"user{n % 50}" if container else None)
            samples.append(time.perf_counter() - start)
        return samples

    empty_tail = timed(container=False)
    index.add(corpus.docs(size, TAIL_DOCS), seq=size + TAIL_DOCS)
    with_tail = timed(container=False)
    with_tail_container = timed(container=True)
    index.commit()
    start = time.perf_counter()
    index.purge([size // 2], seq=size + TAIL_DOCS + 1)
    purge_s = time.perf_counter() - start
    index.close()
    disk = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    return {
        "size": size,
        "load_s": load_s,
        "docs_per_s": size / load_s,
        "batch": batch,
        "add_per_batch": latency_summary(adds),
        "commit": latency_summary(commits),
        "search_empty_tail": latency_summary(empty_tail),
        "search_tail_500": latency_summary(with_tail),
        "search_tail_500_container": latency_summary(with_tail_container),
        "purge_s": purge_s,
        "disk_mib": disk / 2**20,
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"machine: {report['machine']}",
        "",
        "vectors (hnswlib, cosine, 256-d, M=16, ef_c=200)",
    ]
    lines.append(
        f"{'data':>8} {'n':>7} {'build s':>8} {'ins/s':>7} {'k10 p50':>8} {'p99':>6} "
        f"{'10% p50':>8} {'p99':>6} {'recall':>6} {'save s':>7} {'load s':>7} {'MiB':>6}"
        f" | ef={WIDE_EF}: {'recall':>6} {'p50':>7} {'p99':>6}"
    )
    for run in report["vectors"]:
        lines.append(
            f"{run['data']:>8} {run['size']:>7} {run['build_s']:>8.1f} "
            f"{run['inserts_per_s']:>7.0f} "
            f"{run['search']['p50_ms']:>6.3f}ms {run['search']['p99_ms']:>6.3f} "
            f"{run['search_filtered_10pct']['p50_ms']:>6.3f}ms "
            f"{run['search_filtered_10pct']['p99_ms']:>6.3f} {run['recall_at_10']:>6.3f} "
            f"{run['save_s']:>7.3f} {run['load_s']:>7.3f} {run['file_mib']:>6.1f}"
            f" |         {run['recall_at_10_wide_ef']:>6.3f}"
            f" {run['search_wide_ef']['p50_ms']:>5.3f}ms {run['search_wide_ef']['p99_ms']:>6.3f}"
        )
    lines += ["", "full text (tantivy BM25 + in-memory tail)"]
    lines.append(
        f"{'n':>7} {'docs/s':>7} {'commit p50':>10} {'max':>7} {'q p50':>7} {'p99':>6} "
        f"{'tail500 p50':>11} {'p99':>6} {'+container p50':>14} {'p99':>6} "
        f"{'purge s':>7} {'MiB':>6}"
    )
    for run in report["fulltext"]:
        lines.append(
            f"{run['size']:>7} {run['docs_per_s']:>7.0f} "
            f"{run['commit']['p50_ms']:>8.1f}ms {run['commit']['max_ms']:>7.1f} "
            f"{run['search_empty_tail']['p50_ms']:>5.2f}ms "
            f"{run['search_empty_tail']['p99_ms']:>6.2f} "
            f"{run['search_tail_500']['p50_ms']:>9.2f}ms {run['search_tail_500']['p99_ms']:>6.2f} "
            f"{run['search_tail_500_container']['p50_ms']:>12.2f}ms "
            f"{run['search_tail_500_container']['p99_ms']:>6.2f} "
            f"{run['purge_s']:>7.2f} {run['disk_mib']:>6.1f}"
        )
    if report["fulltext"]:
        lines.append(f"(add + commit in batches of {report['fulltext'][0]['batch']} documents)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=500, help="searches per measurement")
    parser.add_argument("--batch", type=int, default=1000, help="documents per commit")
    parser.add_argument("--dir", type=Path, default=Path.cwd(), help="disk to run on")
    parser.add_argument(
        "--vectors",
        nargs="+",
        choices=["random", "low-rank"],
        default=["random", "low-rank"],
        help="vector data sets to run",
    )
    parser.add_argument("--skip-vectors", action="store_true")
    parser.add_argument("--skip-fulltext", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="mnemolog-bench-", dir=args.dir))
    try:
        report: dict[str, Any] = {
            "machine": f"{platform.python_implementation()} {platform.python_version()}, "
            f"{platform.machine()}",
            "vectors": []
            if args.skip_vectors
            else [
                bench_vectors(workdir, size, args.queries, kind)
                for kind in args.vectors
                for size in args.sizes
            ],
            "fulltext": []
            if args.skip_fulltext
            else [bench_fulltext(workdir, size, args.queries, args.batch) for size in args.sizes],
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
