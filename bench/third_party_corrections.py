"""Corrections and distinct facts on third-party text: is the newer value served first, and is
every distinct fact still served?

The pairs come from ``third_party_pairs.py`` (its JSON file, ``--pairs``; built afresh from
``--data`` when that file is absent). For each embedder tier one ``mnemolog serve`` child is
started on a free loopback port with a fresh data directory, and every pair goes into a
container of its own: the older text, then the newer one, as two ``POST /memories`` calls whose
``observedAt`` are 30 seconds apart (the older first, no ``supersedes``: the server's write
decision alone says what the newer one is). Then the question is asked with ``POST /search`` at
limit 10, and the served list is read, text by text:

- a ``correction`` pair is *newer first at k* (k = 3, 5, 10) when the newer text is among the
  first k results and the older one is not, or ranks below it. The older text is *hidden* when
  it is not served at all: that is allowed only when the newer text is served first, so a
  pair whose older text is hidden and whose newer text is not on top is counted apart
  (*hidden, newer not first*);
- a ``distinct`` pair is *kept* when each fact's own text is among the first 3 results for its
  own question (with one question for both, both texts among its first 3), and *hidden* when
  either text is served by none of its searches at limit 10.

Beside them, what the server answered the newer write (``created``, ``linked``: created with
``possiblyUpdates``, ``superseded``, ``deduplicated``). Prints a table per source and split
(``dev``: the half a rule may be designed on; ``heldout``: the half it is checked on), or JSON
with ``--json``; asserts nothing.

    .venv/bin/python bench/third_party_corrections.py [--pairs FILE] [--data DIR]
        [--tiers fast,quality] [--sources NAME,...] [--limit N] [--code DIR] [--json]

``--code DIR`` runs the server on the code of another checkout (``DIR/src``, say an export of
the last commit), so that one sitting measures before and after a change.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from keepalive import KeepAlive
from recall import MNEMOLOG, SEARCH_LIMIT, TIERS, Server, client, parse_list, progress, server_env
from third_party_pairs import DEFAULT_DATA, DEFAULT_OUT, SPLITS, build

DEFAULT_TIERS = ("fast", "quality")
CUTS = (3, 5, 10)
DISTINCT_TOP = 3
GAP = timedelta(seconds=30)
STATUSES = ("created", "linked", "superseded", "deduplicated")


class ProbeError(Exception):
    pass


def _post(http: KeepAlive, path: str, body: Any) -> Any:
    response = http.post(path, json=body)
    if response.status_code != 200:
        raise ProbeError(f"POST {path}: {response.status_code} {response.content[:300]!r}")
    return response.json()


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _write(http: KeepAlive, tag: str, text: str, observed: datetime) -> dict[str, Any]:
    body = {"containerTag": tag, "memories": [{"content": text, "observedAt": _stamp(observed)}]}
    (answer,) = _post(http, "/memories", body)["memories"]
    result: dict[str, Any] = answer
    return result


def _status(answer: dict[str, Any]) -> str:
    if answer["status"] == "created" and answer.get("possiblyUpdates"):
        return "linked"
    return str(answer["status"])


def _rank(served: Sequence[str], text: str) -> int | None:
    """1-based rank of ``text`` among the served contents (None: not served)."""
    wanted = text.strip()
    for n, content in enumerate(served, 1):
        if content.strip() == wanted:
            return n
    return None


def _search(http: KeepAlive, tag: str, question: str) -> list[str]:
    body = {"q": question, "containerTag": tag, "limit": SEARCH_LIMIT}
    return [r["content"] for r in _post(http, "/search", body)["results"]]


def probe(
    http: KeepAlive, tag: str, pair: dict[str, Any], fillers: Sequence[str] = ()
) -> dict[str, Any]:
    """Write ``fillers`` and then the pair into the fresh container ``tag``, ask, and judge
    what was served."""
    out: dict[str, Any] = {"id": pair["id"], "source": pair["source"], "split": pair["split"]}
    out["kind"] = pair["kind"]
    try:
        now = datetime.now(UTC).replace(microsecond=0)
        if fillers:
            # Said before the pair, 30 seconds apart, as earlier turns of one conversation.
            said = [
                {"content": text, "observedAt": _stamp(now - (len(fillers) + 2 - n) * GAP)}
                for n, text in enumerate(fillers)
            ]
            _post(http, "/memories", {"containerTag": tag, "memories": said})
        _write(http, tag, pair["older"], now - 2 * GAP)
        out["status"] = _status(_write(http, tag, pair["newer"], now - GAP))
        served = _search(http, tag, pair["question"])
        if pair["kind"] == "correction":
            older, newer = _rank(served, pair["older"]), _rank(served, pair["newer"])
            out["older_rank"], out["newer_rank"] = older, newer
            for k in CUTS:
                out[f"newer_first@{k}"] = (
                    newer is not None and newer <= k and (older is None or newer < older)
                )
            out["older_hidden"] = older is None
            out["hidden_newer_not_first"] = older is None and newer != 1
        else:
            second = pair.get("newer_question")
            if second:
                other = _search(http, tag, second)
                older, newer = _rank(served, pair["older"]), _rank(other, pair["newer"])
            else:
                older, newer = _rank(served, pair["older"]), _rank(served, pair["newer"])
            out["older_rank"], out["newer_rank"] = older, newer
            out["kept"] = all(r is not None and r <= DISTINCT_TOP for r in (older, newer))
            if second:
                # Each fact first for its own question: neither taken for a new value of the
                # other.
                out["own_first"] = older == 1 and newer == 1
            out["hidden"] = older is None or newer is None
    except (ProbeError, OSError, KeyError, ValueError) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def filler_texts(pairs: Sequence[dict[str, Any]], n: int, count: int) -> list[str]:
    """``count`` texts of other pairs, the same for pair ``n`` in every run: each pair's
    container then also holds what other people said, which the pair's texts must stand out
    from."""
    if count <= 0:
        return []
    own = {pairs[n]["older"], pairs[n]["newer"]}
    texts = sorted({t for p in pairs for t in (p["older"], p["newer"])} - own)
    return random.Random(n).sample(texts, min(count, len(texts)))


def run_tier(
    workdir: Path,
    tier: str,
    env: dict[str, str],
    pairs: Sequence[dict[str, Any]],
    fillers: int = 0,
) -> dict[str, Any]:
    data_dir = workdir / f"{tier}-data"
    server = Server(data_dir, env, workdir / f"{tier}.log")
    out: dict[str, Any] = {"tier": tier}
    try:
        out["boot_s"] = server.start()
        progress(f"{tier}: server up in {out['boot_s']:.1f} s (pid {server.pid})")
        began = time.perf_counter()
        results = []
        with client(server.base_url) as http:
            for n, pair in enumerate(pairs, 1):
                said = filler_texts(pairs, n - 1, fillers)
                results.append(probe(http, f"{tier}-{n}", pair, said))
                if n % 100 == 0:
                    progress(f"  {tier}: {n}/{len(pairs)} pairs")
        out["seconds"] = time.perf_counter() - began
        out["results"] = results
        out["summary"] = summarise(results)
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc} {server.log_tail(5)}"
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    return out


# --- the figures ------------------------------------------------------------------------------


def _group(results: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """(kind, source, split) -> results, with ``all`` rows for every source and split."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in results:
        for source in (r["source"], "all"):
            for split in (r["split"], "all"):
                groups.setdefault((r["kind"], source, split), []).append(r)
    return groups


def summarise(results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for (kind, source, split), group in sorted(_group(results).items()):
        ok = [r for r in group if "error" not in r]
        statuses = Counter(r["status"] for r in ok)
        row: dict[str, Any] = {
            "kind": kind,
            "source": source,
            "split": split,
            "pairs": len(group),
            "errors": len(group) - len(ok),
            "statuses": {s: statuses.get(s, 0) for s in STATUSES},
        }
        if kind == "correction":
            for k in CUTS:
                row[f"newer_first@{k}"] = sum(r[f"newer_first@{k}"] for r in ok)
            row["older_hidden"] = sum(r["older_hidden"] for r in ok)
            row["hidden_newer_not_first"] = sum(r["hidden_newer_not_first"] for r in ok)
        else:
            row["kept@3"] = sum(r["kept"] for r in ok)
            own = [r for r in ok if "own_first" in r]
            row["own_questions"] = len(own)
            row["own_first@1"] = sum(r["own_first"] for r in own)
            row["hidden"] = sum(r["hidden"] for r in ok)
        rows.append(row)
    return rows


def _share(n: int, total: int) -> str:
    return "-" if not total else f"{n * 100 / total:.0f}%"


def _order(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    def key(row: dict[str, Any]) -> tuple[bool, str, int]:
        split = (*SPLITS, "all").index(row["split"])
        return row["source"] == "all", row["source"], split

    return sorted(rows, key=key)


def render_tier(run: dict[str, Any]) -> list[str]:
    tier = run["tier"]
    if "error" in run:
        return [f"{tier} tier: FAILED: {run['error']}"]
    rows = run["summary"]
    lines = [
        f"{tier} tier: {len(run['results'])} pairs, one container each (server boot"
        f" {run['boot_s']:.1f} s, pairs {run['seconds']:.1f} s)",
        "",
        "  corrections: newer text ranked above the older (or the older not served) at k;"
        " older hidden: not served at all",
        f"  {'source':<20}{'split':<9}{'pairs':>6}{'@3':>7}{'@5':>7}{'@10':>7}"
        f"{'hidden':>8}{'hid,!1st':>9}  newer write: created/linked/superseded/dedup",
    ]
    for row in _order([r for r in rows if r["kind"] == "correction"]):
        n = row["pairs"] - row["errors"]
        s = row["statuses"]
        lines.append(
            f"  {row['source']:<20}{row['split']:<9}{n:>6}"
            + "".join(f"{_share(row[f'newer_first@{k}'], n):>7}" for k in CUTS)
            + f"{row['older_hidden']:>8}{row['hidden_newer_not_first']:>9}  "
            + "/".join(str(s[x]) for x in STATUSES)
            + (f"  errors {row['errors']}" if row["errors"] else "")
        )
    lines += [
        "",
        f"  distinct facts: each text in the top {DISTINCT_TOP} for its own question;"
        " hidden: a text served by none of its searches; own@1: of the pairs with a question"
        " for each fact, both first for their own",
        f"  {'source':<20}{'split':<9}{'pairs':>6}{'kept@3':>8}{'hidden':>8}{'own@1':>12}"
        "  newer write: created/linked/superseded/dedup",
    ]
    for row in _order([r for r in rows if r["kind"] == "distinct"]):
        n = row["pairs"] - row["errors"]
        s = row["statuses"]
        own = row["own_questions"]
        lines.append(
            f"  {row['source']:<20}{row['split']:<9}{n:>6}{_share(row['kept@3'], n):>8}"
            f"{row['hidden']:>8}{_share(row['own_first@1'], own) if own else '-':>12}  "
            + "/".join(str(s[x]) for x in STATUSES)
            + (f"  errors {row['errors']}" if row["errors"] else "")
        )
    return lines


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "mnemolog: corrections and distinct facts on third-party text (older, then newer 30 s"
        f" later; one container a pair, after {report.get('fillers', 0)} texts of other pairs)",
        f"  {env['cpus']} CPUs  |  Python {env['python']}  |  pairs from {report['pairs_from']}"
        f"  |  total {report['total_seconds']:.1f} s  |  code: {report['code']}",
    ]
    for run in report["runs"]:
        lines += ["", *render_tier(run)]
    return "\n".join(lines)


def load_pairs(path: Path, data: Path) -> tuple[list[dict[str, Any]], str]:
    if path.exists():
        pairs: list[dict[str, Any]] = json.loads(path.read_text())
        return pairs, str(path)
    built, missing = build(data)
    for name in missing:
        progress(f"{name}: its data was not found under {data}, skipped")
    return [
        {k: getattr(p, k) for k in p.__dataclass_fields__} for p in built
    ], f"{data} (built now)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pairs", type=Path, default=DEFAULT_OUT, help="the pairs' JSON (third_party_pairs.py)"
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="built from here when --pairs is absent"
    )
    parser.add_argument("--tiers", default=",".join(DEFAULT_TIERS), help="embedder tiers")
    parser.add_argument("--sources", default=None, help="only these sources (comma-separated)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N pairs")
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where the temporary data directory is made (default: the system's temp dir)",
    )
    parser.add_argument(
        "--model-cache-dir",
        type=Path,
        default=None,
        help="MNEMOLOG_MODEL_CACHE_DIR for the server (default: the server's own setting)",
    )
    parser.add_argument("--code", type=Path, help="run the server on DIR/src (another checkout)")
    parser.add_argument(
        "--fillers",
        type=int,
        default=0,
        help="texts of other pairs written before each pair, 30 s apart (default 0)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    tiers = parse_list(args.tiers)
    if not tiers or any(t not in TIERS for t in tiers):
        parser.error(f"--tiers takes a comma-separated subset of {', '.join(TIERS)}")
    if not MNEMOLOG.exists():
        parser.error(f"{MNEMOLOG} not found: run from the project's virtualenv")
    pairs, pairs_from = load_pairs(args.pairs, args.data)
    if args.sources:
        wanted = set(parse_list(args.sources))
        pairs = [p for p in pairs if p["source"] in wanted]
    pairs = pairs[: args.limit]
    if not pairs:
        parser.error("no pairs to run")

    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="mnemolog-third-party-", dir=args.dir)).resolve()
    runs = []
    try:
        for tier in tiers:
            env = server_env(tier, args.model_cache_dir)
            if args.code is not None:
                # The server imports ``mnemolog`` from this path before the installed one.
                shim = workdir / "code"
                shim.mkdir(exist_ok=True)
                if not (shim / "mnemolog").exists():
                    (shim / "mnemolog").symlink_to(args.code.resolve() / "src")
                env["PYTHONPATH"] = os.pathsep.join(
                    p for p in (str(shim), env.get("PYTHONPATH")) if p
                )
            runs.append(run_tier(workdir, tier, env, pairs, args.fillers))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report: dict[str, Any] = {
        "benchmark": "third_party_corrections",
        "pairs_from": pairs_from,
        "code": str(args.code.resolve() / "src") if args.code else "the installed mnemolog",
        "fillers": args.fillers,
        "total_seconds": time.perf_counter() - started,
        "environment": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": runs,
    }
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
