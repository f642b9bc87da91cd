"""Correction correctness (the Bellamente paper, §6.3): once a fact is corrected, is the
correction what recall serves, and do forget and restore act on it?

For each embedder tier one ``mnemolog serve`` child is started on a fresh data directory, and
every probe runs in a fresh container of it. A probe seeds a fact F1 ("Kim's favourite colour
is blue."), then corrects it d times (F2 .. F(d+1), each correcting the latest), then checks:

(a) the top result of the family's question ("What is Kim's favourite colour?", limit 10)
    holds the latest value, and no earlier value is among the served results;
(b) after forgetting the latest's chain, no value of the family is served;
(c) after restoring that chain, the top result holds the latest value again.

Corrections come at three paraphrase distances from the text they correct: ``restatement``
(the same sentence, only the value changes), ``close`` (a small change of wording: "... is
now green") and ``loose`` (other words: "These days Kim likes green best."); at depths d =
1..10; and in two modes: ``explicit`` (each correction names the chain in ``supersedes``; the
chain is forgotten and restored by that id) and ``automatic`` (plain writes: the server's
write decision alone makes them a new version, a linked new memory or an unrelated one; the
id the latest write was answered with is forgotten and restored). Every family runs once in
every cell (mode x distance x depth). The memtrust contradiction cases, read at run time from
``/work/shared/bench-data/correction/memtrust/contradiction_cases.json``, run in both modes
with the same checks (a served text contains ``updated_value``; ``initial_value`` is not
served). Prints a pass-rate grid; asserts nothing.

    .venv/bin/python bench/corrections.py [--tiers fast,quality] [--depths 1,...,10]
                                          [--families N] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keepalive import KeepAlive
from recall import MNEMOLOG, SEARCH_LIMIT, TIERS, Server, client, parse_list, progress, server_env

DEFAULT_TIERS = ("fast", "quality")
MODES = ("explicit", "automatic")
DISTANCES = ("restatement", "close", "loose")
DEPTHS = tuple(range(1, 11))
QUICK_DEPTHS = (1, 3, 10)
QUICK_FAMILIES = 4
CHECKS = ("a", "a_top", "a_flagged", "b", "c", "all")
KINDS = ("superseded", "linked", "created", "deduplicated")  # linked: created + possiblyUpdates
MEMTRUST = Path("/work/shared/bench-data/correction/memtrust/contradiction_cases.json")
FORGET_REASON = "correction probe"


# --- the facts --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """One fact with 11 values, its question, and templates per paraphrase distance. ``{v}``
    is the value, ``{a}`` the value with its article ("an architect")."""

    key: str
    query: str
    values: tuple[str, ...]
    restatement: tuple[str, ...]  # F1 of every chain; each is a chain's only sentence there
    close: tuple[str, ...]  # small changes of restatement[0]
    loose: tuple[str, ...]  # other words


def _article(value: str) -> str:
    return ("an " if value[0].lower() in "aeiou" else "a ") + value


def values(text: str) -> tuple[str, ...]:
    return tuple(text.split())


def fill(template: str, value: str) -> str:
    return template.format(v=value, a=_article(value))


FAMILIES: tuple[Family, ...] = (
    Family(
        "colour",
        "What is Kim's favourite colour?",
        values("blue green red yellow purple orange teal black white grey pink"),
        (
            "Kim's favourite colour is {v}.",
            "The colour Kim likes most is {v}.",
            "Kim says her favourite colour is {v}.",
        ),
        (
            "Kim's favourite colour is now {v}.",
            "Kim's favourite colour these days is {v}.",
            "Kim's favourite colour is {v} now.",
        ),
        (
            "These days Kim likes {v} best.",
            "Ask Kim and she will tell you {v} is the colour she loves most.",
            "Kim has switched to {v} as the shade she prefers over all others.",
        ),
    ),
    Family(
        "city",
        "Where does Dana live?",
        values("Lisbon Osaka Nairobi Montreal Tallinn Porto Hanoi Seoul Bergen Quito Riga"),
        (
            "Dana lives in {v}.",
            "Dana's home is in {v}.",
            "Dana has a flat in {v} where she lives.",
        ),
        (
            "Dana now lives in {v}.",
            "Dana lives in {v} now.",
            "Dana currently lives in {v}.",
        ),
        (
            "Dana has moved house and is settled in {v}.",
            "These days you will find Dana at home in {v}.",
            "Dana relocated; {v} is where she is based.",
        ),
    ),
    Family(
        "job",
        "What is Omar's job?",
        values(
            "nurse architect pilot teacher chef plumber journalist pharmacist"
            " librarian dentist electrician"
        ),
        (
            "Omar works as {a}.",
            "Omar's job title is {v}.",
            "Omar is employed as {a}.",
        ),
        (
            "Omar now works as {a}.",
            "Omar works as {a} now.",
            "Omar currently works as {a}.",
        ),
        (
            "Omar changed careers and is {a} these days.",
            "For a living, Omar is {a} at the moment.",
            "Omar retrained; he earns his wage as {a}.",
        ),
    ),
    Family(
        "meeting",
        "What time is the weekly standup?",
        values("7:30 8:15 9:45 10:20 11:10 12:40 13:25 14:50 15:35 16:05 17:55"),
        (
            "The weekly standup is at {v}.",
            "The weekly standup meeting starts at {v}.",
            "Our weekly standup happens at {v} every Monday.",
        ),
        (
            "The weekly standup is now at {v}.",
            "The weekly standup is at {v} from now on.",
            "The weekly standup has been moved to {v}.",
        ),
        (
            "We rescheduled: the team gathers for its weekly check-in at {v}.",
            "From this week on, the morning sync starts at {v}.",
            "Everyone meets for the Monday team call at {v} instead.",
        ),
    ),
    Family(
        "pet",
        "What is Lena's dog called?",
        values("Biscuit Pepper Mango Rex Luna Ziggy Waffles Nacho Pickle Bruno Olive"),
        (
            "Lena's dog is called {v}.",
            "Lena's dog is named {v}.",
            "The name of Lena's dog is {v}.",
        ),
        (
            "Lena's dog is now called {v}.",
            "Lena's dog is called {v} now.",
            "Lena's new dog is called {v}.",
        ),
        (
            "Lena adopted a puppy and named it {v}.",
            "The pup that lives with Lena answers to {v}.",
            "Lena renamed her pet; it goes by {v} these days.",
        ),
    ),
    Family(
        "lead",
        "Who leads the billing team?",
        values("Aisha Ben Carla Dmitri Elena Farid Grace Hiro Ines Jonas Kemi"),
        (
            "The billing team is led by {v}.",
            "{v} leads the billing team.",
            "The lead of the billing team is {v}.",
        ),
        (
            "The billing team is now led by {v}.",
            "The billing team is led by {v} now.",
            "The billing team's new lead is {v}.",
        ),
        (
            "{v} took over running billing.",
            "Leadership of billing changed hands; {v} is in charge.",
            "Anyone with a billing question should go to {v}, who heads it now.",
        ),
    ),
    Family(
        "price",
        "How much does the gym membership cost?",
        values("29 34 41 47 52 58 63 69 74 86 95"),
        (
            "The gym membership costs {v} euros a month.",
            "A monthly gym membership is {v} euros.",
            "Kim pays {v} euros a month for the gym membership.",
        ),
        (
            "The gym membership now costs {v} euros a month.",
            "The gym membership costs {v} euros a month now.",
            "The gym membership went up to {v} euros a month.",
        ),
        (
            "The fitness club changed its fees: {v} euros monthly.",
            "Working out there sets you back {v} euros each month these days.",
            "Membership at the sports centre is billed at {v} euros per month.",
        ),
    ),
    Family(
        "database",
        "Which database does project Falcon use?",
        values(
            "PostgreSQL MySQL SQLite MongoDB Cassandra Redis DynamoDB"
            " CockroachDB MariaDB Firestore ClickHouse"
        ),
        (
            "Project Falcon uses {v} as its database.",
            "Project Falcon stores its data in {v}.",
            "The database behind project Falcon is {v}.",
        ),
        (
            "Project Falcon now uses {v} as its database.",
            "Project Falcon uses {v} as its database now.",
            "Project Falcon switched to {v} as its database.",
        ),
        (
            "The Falcon team migrated their storage over to {v}.",
            "Falcon's records live in {v} after the migration.",
            "For persistence, Falcon runs on {v} these days.",
        ),
    ),
    Family(
        "book",
        "What is the book club reading?",
        values(
            "Dune Middlemarch Beloved Emma Ulysses Rebecca Persuasion"
            " Frankenstein Dracula Kindred Solaris"
        ),
        (
            "The book club is reading {v}.",
            "This month the book club is reading {v}.",
            "The book club's current pick is {v}.",
        ),
        (
            "The book club is now reading {v}.",
            "The book club is reading {v} now.",
            "The book club has moved on to reading {v}.",
        ),
        (
            "At the next meeting the readers will discuss {v}.",
            "Everyone in the reading group has started {v}.",
            "{v} was chosen as the club's new novel.",
        ),
    ),
    Family(
        "language",
        "Which language is the payments service written in?",
        values("Rust Python Java Kotlin Elixir Haskell Ruby Scala Swift Clojure OCaml"),
        (
            "The payments service is written in {v}.",
            "The payments service's code is {v}.",
            "We wrote the payments service in {v}.",
        ),
        (
            "The payments service is now written in {v}.",
            "The payments service is written in {v} now.",
            "The payments service was rewritten in {v}.",
        ),
        (
            "Engineers ported payments over to {v} last quarter.",
            "The payments codebase is {v} after the rewrite.",
            "Open the payments repository and you will find {v} code.",
        ),
    ),
)


def has_value(value: str, text: str) -> bool:
    """``value`` as a word of ``text`` (case folded): "red" is not in "preferred"."""
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE) is not None


def has_substring(value: str, text: str) -> bool:
    return value.lower() in text.lower()


def check_families(families: Sequence[Family]) -> None:
    """The probe is only sound if a value is found in its own texts and in no other text."""
    for f in families:
        if len(set(f.values)) != 11:
            raise ValueError(f"{f.key}: 11 distinct values are needed")
        for template in (*f.restatement, *f.close, *f.loose):
            for value in f.values:
                text = fill(template, value)
                found = [v for v in f.values if has_value(v, text)]
                if found != [value]:
                    raise ValueError(f"{f.key}: {text!r} holds the values {found}")


def chain_texts(family: Family, distance: str, depth: int) -> list[tuple[str, str]]:
    """(text, value) of F1 .. F(depth + 1). The values and the restatement sentence rotate
    with the depth, so every depth does not test the same pair."""
    values = [family.values[(depth + k) % len(family.values)] for k in range(depth + 1)]
    if distance == "restatement":
        template = family.restatement[(depth - 1) % len(family.restatement)]
        return [(fill(template, v), v) for v in values]
    templates = family.close if distance == "close" else family.loose
    first = (fill(family.restatement[0], values[0]), values[0])
    return [first] + [
        (fill(templates[(k - 1) % len(templates)], v), v) for k, v in enumerate(values) if k
    ]


# --- one probe --------------------------------------------------------------------------------


class ProbeError(Exception):
    pass


def _call(http: KeepAlive, path: str, body: Any = None) -> Any:
    response = http.post(path, json=body)
    if response.status_code != 200:
        raise ProbeError(f"POST {path}: {response.status_code} {response.content[:300]!r}")
    return response.json()


def served(http: KeepAlive, tag: str, query: str) -> list[dict[str, Any]]:
    answer = _call(http, "/search", {"q": query, "containerTag": tag, "limit": SEARCH_LIMIT})
    results: list[dict[str, Any]] = answer["results"]
    return results


def kind(answer: dict[str, Any]) -> str:
    if answer["status"] == "created":
        return "linked" if answer.get("possiblyUpdates") else "created"
    return str(answer["status"])


def probe(
    http: KeepAlive,
    tag: str,
    mode: str,
    texts: Sequence[str],
    query: str,
    latest: str,
    earlier: Sequence[str],
    has: Callable[[str, str], bool],
) -> dict[str, Any]:
    """Write ``texts`` (F1, then each correction of the latest) into the fresh container
    ``tag`` and run checks (a), (b), (c). ``latest`` is the value the last text holds,
    ``earlier`` those the others hold."""
    out: dict[str, Any] = {check: False for check in CHECKS}
    out["kinds"] = []
    try:
        (first,) = _call(
            http, "/memories", {"containerTag": tag, "memories": [{"content": texts[0]}]}
        )["memories"]
        chain = first["id"]
        last = first
        for text in texts[1:]:
            item: dict[str, Any] = {"content": text}
            if mode == "explicit":
                item["supersedes"] = chain
            (last,) = _call(http, "/memories", {"containerTag": tag, "memories": [item]})[
                "memories"
            ]
            out["kinds"].append(kind(last))
        target = chain if mode == "explicit" else last["id"]

        results = served(http, tag, query)
        top = results[0]["content"] if results else ""
        stale = [r for r in results if any(has(v, r["content"]) for v in earlier)]
        out["a_top"] = bool(results) and has(latest, top)
        out["a"] = out["a_top"] and not stale
        # Diagnostic: the latest on top and every stale result flagged possiblyOutdatedBy.
        out["a_flagged"] = out["a_top"] and all(r.get("possiblyOutdatedBy") for r in stale)
        out["served"] = [r["content"] for r in results]

        _call(http, f"/memories/{target}/forget", {"reason": FORGET_REASON})
        after_forget = served(http, tag, query)
        out["b"] = not any(has(v, r["content"]) for r in after_forget for v in (latest, *earlier))
        out["served_after_forget"] = [r["content"] for r in after_forget]

        _call(http, f"/memories/{target}/restore")
        after_restore = served(http, tag, query)
        out["c"] = bool(after_restore) and has(latest, after_restore[0]["content"])
        out["all"] = out["a"] and out["b"] and out["c"]
    except (ProbeError, OSError, KeyError, ValueError) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


# --- a tier -----------------------------------------------------------------------------------


def empty_cell() -> dict[str, Any]:
    return {"families": 0, "errors": 0, **{c: 0 for c in CHECKS}, "kinds": Counter()}


def run_grid(
    http: KeepAlive, tier: str, families: Sequence[Family], depths: Sequence[int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cells: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    for mode in MODES:
        for distance in DISTANCES:
            began = time.perf_counter()
            for depth in depths:
                cell = {"mode": mode, "distance": distance, "depth": depth, **empty_cell()}
                cell["by_family"] = {}
                for family in families:
                    chain = chain_texts(family, distance, depth)
                    values = [v for _, v in chain]
                    result = probe(
                        http,
                        f"{tier}-{mode}-{distance}-d{depth}-{family.key}",
                        mode,
                        [t for t, _ in chain],
                        family.query,
                        values[-1],
                        values[:-1],
                        has_value,
                    )
                    cell["families"] += 1
                    cell["errors"] += "error" in result
                    for check in CHECKS:
                        cell[check] += result[check]
                    cell["kinds"].update(result["kinds"])
                    cell["by_family"][family.key] = result["all"]
                    if not result["all"]:
                        failures.append(
                            {
                                "mode": mode,
                                "distance": distance,
                                "depth": depth,
                                "family": family.key,
                                "failed": [c for c in ("a", "b", "c") if not result[c]],
                                "kinds": result["kinds"],
                                "texts": [t for t, _ in chain],
                                **{
                                    k: result[k]
                                    for k in ("served", "served_after_forget", "error")
                                    if k in result
                                },
                            }
                        )
                cell["kinds"] = dict(cell["kinds"])
                cells.append(cell)
            progress(f"  {tier}: {mode} {distance} done in {time.perf_counter() - began:.1f} s")
    return cells, failures


def load_memtrust() -> list[dict[str, Any]] | None:
    try:
        cases: list[dict[str, Any]] = json.loads(MEMTRUST.read_text())["cases"]
    except FileNotFoundError:
        return None
    return cases


def run_memtrust(
    http: KeepAlive, tier: str, cases: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    rows = []
    for case in cases:
        row: dict[str, Any] = {"case_id": case["case_id"], "subject": case["subject"]}
        for mode in MODES:
            result = probe(
                http,
                f"{tier}-memtrust-{mode}-{case['case_id']}",
                mode,
                [case["initial_fact"], case["contradicting_fact"]],
                case["query"],
                case["updated_value"],
                [case["initial_value"]],
                has_substring,
            )
            row[mode] = {
                k: result[k]
                for k in (*CHECKS, "kinds", "served", "served_after_forget", "error")
                if k in result
            }
        rows.append(row)
    return rows


def run_tier(
    workdir: Path,
    tier: str,
    env: dict[str, str],
    families: Sequence[Family],
    depths: Sequence[int],
    cases: Sequence[dict[str, Any]] | None,
) -> dict[str, Any]:
    data_dir = workdir / f"{tier}-data"
    server = Server(data_dir, env, workdir / f"{tier}.log")
    out: dict[str, Any] = {"tier": tier}
    try:
        began = time.perf_counter()
        out["boot_s"] = server.start()
        progress(f"{tier}: server up in {out['boot_s']:.1f} s (pid {server.pid})")
        with client(server.base_url) as http:
            out["cells"], out["failures"] = run_grid(http, tier, families, depths)
            if cases is not None:
                out["memtrust"] = run_memtrust(http, tier, cases)
        out["seconds"] = time.perf_counter() - began
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc} {server.log_tail(5)}"
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    return out


# --- the report -------------------------------------------------------------------------------


def _pct(n: int, total: int) -> str:
    return "-" if not total else f"{n * 100 / total:.0f}"


def _sum(cells: Sequence[dict[str, Any]], key: str) -> int:
    return sum(c[key] for c in cells)


def render_tier(run: dict[str, Any], depths: Sequence[int]) -> list[str]:
    tier = run["tier"]
    if "error" in run:
        return [f"{tier} tier: FAILED: {run['error']}"]
    cells = run["cells"]
    n = cells[0]["families"] if cells else 0
    lines = [
        f"{tier} tier ({n} families a cell, one container each; server boot"
        f" {run['boot_s']:.1f} s, probes {run['seconds']:.1f} s)",
        "",
        "  all three checks passed, % of families",
        f"  {'mode':<10}{'distance':<13}"
        + "".join(f"{'d=' + str(d):>6}" for d in depths)
        + f"{'all':>7}",
    ]

    def rows(mode: str, distance: str) -> list[dict[str, Any]]:
        return [c for c in cells if c["mode"] == mode and c["distance"] == distance]

    for mode in MODES:
        for distance in DISTANCES:
            row = rows(mode, distance)
            by_depth = {c["depth"]: c for c in row}
            lines.append(
                f"  {mode:<10}{distance:<13}"
                + "".join(f"{_pct(by_depth[d]['all'], by_depth[d]['families']):>6}" for d in depths)
                + f"{_pct(_sum(row, 'all'), _sum(row, 'families')):>7}"
            )
    lines += [
        "",
        "  per check, over all depths (passed/probes): (a) latest on top, no earlier value served;",
        "  a:top = the latest on top; a:flagged = on top, and every earlier value served carries"
        " possiblyOutdatedBy;",
        "  (b) nothing served after forget; (c) latest on top after restore",
        f"  {'mode':<10}{'distance':<13}{'(a)':>9}{'a:top':>9}{'a:flagged':>11}{'(b)':>9}"
        f"{'(c)':>9}{'all':>9}{'errors':>8}",
    ]
    for mode in MODES:
        for distance in DISTANCES:
            row = rows(mode, distance)
            total = _sum(row, "families")
            lines.append(
                f"  {mode:<10}{distance:<13}"
                + "".join(
                    f"{f'{_sum(row, k)}/{total}':>{w}}"
                    for k, w in (
                        ("a", 9),
                        ("a_top", 9),
                        ("a_flagged", 11),
                        ("b", 9),
                        ("c", 9),
                        ("all", 9),
                    )
                )
                + f"{_sum(row, 'errors'):>8}"
            )
    lines += [
        "",
        "  what the server answered each correction (linked = created with possiblyUpdates)",
        f"  {'mode':<10}{'distance':<13}"
        + "".join(f"{k:>14}" for k in KINDS)
        + f"{'corrections':>13}",
    ]
    for mode in MODES:
        for distance in DISTANCES:
            kinds: Counter[str] = Counter()
            for c in rows(mode, distance):
                kinds.update(c["kinds"])
            total = sum(kinds.values())
            lines.append(
                f"  {mode:<10}{distance:<13}"
                + "".join(f"{f'{kinds[k]} ({_pct(kinds[k], total)}%)':>14}" for k in KINDS)
                + f"{total:>13}"
            )
    families = list(cells[0]["by_family"]) if cells else []
    lines += [
        "",
        f"  automatic mode: depths (of {len(depths)}) at which a family passed all three",
        f"  {'distance':<13}" + "".join(f"{f[:9]:>10}" for f in families),
    ]
    for distance in DISTANCES:
        row = rows("automatic", distance)
        lines.append(
            f"  {distance:<13}"
            + "".join(f"{sum(c['by_family'][f] for c in row):>10}" for f in families)
        )
    memtrust = run.get("memtrust")
    if memtrust is None:
        lines += ["", f"  memtrust cases: skipped ({MEMTRUST} is absent)"]
        return lines
    lines += [
        "",
        "  memtrust contradiction cases (a/b/c: + passed, - failed)",
        f"  {'case':<15}{'subject':<24}{'explicit':>10}{'automatic':>11}  answered (automatic)",
    ]

    def marks(result: dict[str, Any]) -> str:
        return "".join("+" if result[c] else "-" for c in ("a", "b", "c"))

    for row in memtrust:
        auto = row["automatic"]
        lines.append(
            f"  {row['case_id']:<15}{row['subject']:<24}{marks(row['explicit']):>10}"
            f"{marks(auto):>11}  {', '.join(auto['kinds']) or auto.get('error', '')}"
        )
    for mode in MODES:
        lines.append(
            f"  {mode}: all three passed in"
            f" {sum(r[mode]['all'] for r in memtrust)}/{len(memtrust)} cases"
        )
    return lines


def render(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "mnemolog: correction correctness (seed F1, correct it d times; then (a) recall,"
        " (b) forget, (c) restore)",
        f"  {env['cpus']} CPUs  |  Python {env['python']}  |  families:"
        f" {', '.join(report['families'])}  |  total {report['total_seconds']:.1f} s",
    ]
    if report["memtrust_cases"] is None:
        lines.append(f"  memtrust: {MEMTRUST} is absent, its cases are skipped")
    for run in report["runs"]:
        lines += ["", *render_tier(run, report["depths"])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tiers", default=None, help="embedder tiers (default fast,quality; --quick: fast)"
    )
    parser.add_argument(
        "--depths", default=None, help="correction depths (default 1..10; --quick: 1,3,10)"
    )
    parser.add_argument(
        "--families",
        type=int,
        default=None,
        help=f"how many fact families (default all {len(FAMILIES)}; --quick: {QUICK_FAMILIES})",
    )
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
    parser.add_argument("--quick", action="store_true", help="depths 1,3,10, 4 families, fast tier")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    tiers = parse_list(args.tiers or ("fast" if args.quick else ",".join(DEFAULT_TIERS)))
    if not tiers or any(t not in TIERS for t in tiers):
        parser.error(f"--tiers takes a comma-separated subset of {', '.join(TIERS)}")
    try:
        depths = (
            [int(d) for d in parse_list(args.depths)]
            if args.depths
            else list(QUICK_DEPTHS if args.quick else DEPTHS)
        )
    except ValueError:
        parser.error("--depths takes comma-separated integers")
    if not depths or any(not 1 <= d <= 10 for d in depths):
        parser.error("depths run from 1 to 10")
    count = args.families or (QUICK_FAMILIES if args.quick else len(FAMILIES))
    if not 1 <= count <= len(FAMILIES):
        parser.error(f"--families takes 1 to {len(FAMILIES)}")
    families = FAMILIES[:count]
    check_families(families)
    if not MNEMOLOG.exists():
        parser.error(f"{MNEMOLOG} not found: run from the project's virtualenv")
    cases = load_memtrust()
    if cases is None:
        progress(f"memtrust: {MEMTRUST} is absent: its cases are skipped")

    started = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="mnemolog-corrections-", dir=args.dir)).resolve()
    runs = []
    try:
        for tier in tiers:
            runs.append(
                run_tier(
                    workdir, tier, server_env(tier, args.model_cache_dir), families, depths, cases
                )
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report: dict[str, Any] = {
        "benchmark": "corrections",
        "depths": depths,
        "families": [f.key for f in families],
        "memtrust_cases": None if cases is None else len(cases),
        "total_seconds": time.perf_counter() - started,
        "environment": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": runs,
    }
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
