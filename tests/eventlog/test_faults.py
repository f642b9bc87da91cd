"""Fault injection against the LMDB log: failed fsyncs and writes, bit flips, truncations.

Write faults are injected with ``strace -e inject`` into a child that appends one draft at a
time (``children/sequential_appender.py``). The log must stop taking writes at the first
failure (fail-stop: LMDB itself carries on after a failed fsync), never acknowledge a failed
append, and reopen with every acknowledged record in place.

Damage to ``data.mdb`` is checked by a child (``children/check_log.py``) so that a reader
killed by SIGBUS or SIGSEGV fails the test instead of the test run: every bit flip or
truncation must be either reported by ``verify_log`` or harmless to what the log reads back.
"""

from __future__ import annotations

import json
import mmap
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import lmdb
import pytest

from mnemolog.errors import CorruptLog
from mnemolog.eventlog import LmdbEventLog, verify_log
from mnemolog.eventlog.events import AgentSignal
from tests.factories import signal_draft

CHILDREN = Path(__file__).parent / "children"
APPENDER = CHILDREN / "sequential_appender.py"
CHECKER = CHILDREN / "check_log.py"
APPENDS = 20
NOTE_SIZE = 1000  # as in sequential_appender.py
# A hung child fails its test instead of hanging CI (a liveness guard, not a timing check).
CHILD_TIMEOUT = 60.0
CHECKS_PER_CHILD = 10
STRACE = shutil.which("strace")
needs_strace = pytest.mark.skipif(
    STRACE is None, reason="strace is not on PATH (CI installs the Debian package `strace`)"
)


def _seed() -> int:
    """A fresh seed each run, named in every message; MNEMOLOG_TEST_SEED replays one."""
    fixed = os.environ.get("MNEMOLOG_TEST_SEED")
    return int(fixed) if fixed else random.randrange(2**32)


# --- write faults --------------------------------------------------------------------------


@dataclass
class InjectedRun:
    """What the appender child reported while strace failed one of its syscalls."""

    label: str
    returncode: int
    stdout: str
    stderr: str
    injected: list[str]  # the strace lines of the calls that were made to fail
    acks: dict[int, int] = field(default_factory=dict)  # n -> seq
    fails: dict[int, str] = field(default_factory=dict)  # n -> error code
    outcomes: list[str] = field(default_factory=list)  # "ACK" / "FAIL", in append order

    def __str__(self) -> str:
        injected = "\n".join(self.injected) or "(nothing injected)"
        return (
            f"{self.label} (rc {self.returncode})\n--- injected:\n{injected}\n"
            f"--- stdout:\n{self.stdout}--- stderr:\n{self.stderr}"
        )


def _run_injected(log_dir: Path, syscall: str, errno_name: str, when: int) -> InjectedRun:
    """Run the appender under strace, failing the ``when``-th ``syscall`` with ``errno_name``."""
    assert STRACE is not None
    log_dir.parent.mkdir(parents=True, exist_ok=True)
    trace = log_dir.with_name(f"{log_dir.name}.strace")
    # Own session, so a hung run can be killed with its tracee (strace -f may leave it behind).
    proc = subprocess.Popen(
        [
            STRACE,
            "-f",
            "-o",
            str(trace),
            "-e",
            f"trace={syscall}",
            "-e",
            f"inject={syscall}:error={errno_name}:when={when}",
            sys.executable,
            str(APPENDER),
            str(log_dir),
            str(APPENDS),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=CHILD_TIMEOUT)
    finally:
        if proc.returncode is None:  # timed out (or interrupted): kill strace and the tracee
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    injected = [line for line in trace.read_text().splitlines() if "(INJECTED)" in line]
    run = InjectedRun(
        f"{syscall}:error={errno_name}:when={when}",
        proc.returncode,
        stdout,
        stderr,
        injected,
    )
    for line in stdout.splitlines():
        word, *rest = line.split()
        if word == "ACK":
            run.acks[int(rest[0])] = int(rest[1])
        elif word == "FAIL":
            run.fails[int(rest[0])] = rest[1]
        if word in ("ACK", "FAIL"):
            run.outcomes.append(word)
    return run


def _assert_fail_stop(run: InjectedRun, log_dir: Path, code: str) -> bool:
    """Check one injected run end to end; return whether any append failed."""
    assert run.returncode == 0, f"the appender crashed: {run}"
    assert run.stdout.startswith("READY\n"), f"the log did not open: {run}"
    assert len(run.outcomes) == APPENDS, f"every append must be answered once: {run}"
    assert not run.acks.keys() & run.fails.keys(), f"an append both ACKed and FAILed: {run}"
    if "FAIL" in run.outcomes:
        first_fail = run.outcomes.index("FAIL")
        assert "ACK" not in run.outcomes[first_fail:], f"ACK after a failure: {run}"
        assert set(run.fails.values()) == {code}, f"every failure must be {code}: {run}"
    # One draft per append on a fresh log: append n gets seq n + 1.
    assert run.acks == {n: n + 1 for n in range(len(run.acks))}, f"unexpected seqs: {run}"

    with LmdbEventLog(log_dir) as log:
        records = list(log.read())
        head = log.head().seq
    last_acked = max(run.acks.values(), default=0)
    for n, seq in run.acks.items():
        event = records[seq - 1].record.event if seq <= len(records) else None
        want = signal_draft(f"draft-{n}", size=NOTE_SIZE).event
        assert isinstance(event, AgentSignal) and isinstance(want, AgentSignal), run
        assert event.label == want.label, f"ACKed draft {n} is not at seq {seq}: {run}"
    # The append whose write failed may or may not have reached the file; nothing after it.
    assert head <= last_acked + 1, f"head {head} is past the failed append: {run}"
    report = verify_log(log_dir)
    assert report.ok, f"verify_log after reopening: {report}\n{run}"
    return bool(run.fails)


# The log's open makes its first calls on the main thread (one commit creating its
# sub-databases: 1 fdatasync, a few page writes, 1 meta write); the writer thread makes every
# later one. strace numbers the
# calls per thread, and `when` below stays clear of the open either way (numbering per process
# would only shift which append fails). Failures during the open are tested separately.


@needs_strace
def test_failed_fsync_stops_writes(tmp_path: Path) -> None:
    bitten = 0
    for when in range(4, 12):
        log_dir = tmp_path / f"fsync-{when}" / "log"
        run = _run_injected(log_dir, "fdatasync", "EIO", when)
        bitten += _assert_fail_stop(run, log_dir, "storage_failed")
    assert bitten, "no injected fsync failure reached an append: the injection did not bite"


@needs_strace
def test_disk_full_on_data_pages_stops_writes(tmp_path: Path) -> None:
    # LMDB flushes a commit's dirty pages with writev (several pages) or pwrite64 (one page);
    # writev is LMDB's alone here (the child's prints use write), so failing it hits only data
    # pages. Meta-page writes (pwrite64) are tested below.
    bitten = 0
    for when in range(4, 12):
        log_dir = tmp_path / f"writev-{when}" / "log"
        run = _run_injected(log_dir, "writev", "ENOSPC", when)
        bitten += _assert_fail_stop(run, log_dir, "disk_full")
    assert bitten, "no injected ENOSPC reached an append: the injection did not bite"


_INJECTED_OFFSET = re.compile(r", (\d+)\) = -1 ")


@needs_strace
@pytest.mark.parametrize(
    ("errno_name", "code"), [("EIO", "storage_failed"), ("ENOSPC", "disk_full")]
)
def test_failed_meta_page_write_stops_writes(tmp_path: Path, errno_name: str, code: str) -> None:
    # pwrite64 carries single data pages and, on LMDB's O_DSYNC descriptor, the meta page that
    # commits a transaction. The open makes a few pwrite64 calls, so `when` starts past them.
    meta_hits = 0
    for when in range(8, 16):
        log_dir = tmp_path / f"pwrite-{when}" / "log"
        run = _run_injected(log_dir, "pwrite64", errno_name, when)
        offsets = [int(m[1]) for line in run.injected if (m := _INJECTED_OFFSET.search(line))]
        meta_hits += any(offset < 2 * mmap.PAGESIZE for offset in offsets)
        _assert_fail_stop(run, log_dir, code)
    assert meta_hits, "no injected failure hit a meta-page write"


@needs_strace
def test_failed_fsync_while_opening_is_a_storage_error(tmp_path: Path) -> None:
    # The open's only sync is the commit that creates the log's sub-databases.
    log_dir = tmp_path / "open" / "log"
    run = _run_injected(log_dir, "fdatasync", "EIO", 1)
    assert run.returncode == 0, f"the appender crashed: {run}"
    assert run.stdout == "OPEN_FAILED storage_failed\n", str(run)
    with LmdbEventLog(log_dir) as log:
        assert log.head().seq == 0, str(run)


# --- damaged files -------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """A closed log to damage copies of, and the digests of its records."""

    log_dir: Path
    digests: list[str]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    rng = random.Random(20240601)  # the layout only; the damage is drawn per run
    log_dir = tmp_path_factory.mktemp("template") / "log"
    with LmdbEventLog(log_dir) as log:
        n = 0
        while n < 300:  # batches of varied sizes: many commits, so free pages hold stale data
            batch = []
            for _ in range(rng.randint(1, 8)):
                big = rng.random() < 0.2  # past a page: stored on overflow pages
                size = rng.randint(4500, 12000) if big else rng.randint(10, 2500)
                batch.append(signal_draft(f"rec-{n}", size=size))
                n += 1
            log.append(batch)
        digests = [stored.digest for stored in log.read()]
    env = lmdb.open(str(log_dir), readonly=True, max_dbs=4)
    try:
        with env.begin() as txn:
            overflow = txn.stat(env.open_db(b"log", txn=txn, create=False))["overflow_pages"]
    finally:
        env.close()
    assert overflow > 0, "the template must have overflow pages"
    return Template(log_dir, digests)


def _damaged_copy_checks(
    template: Template,
    work: Path,
    damages: list[tuple[str, Callable[[Path], None]]],
    context: str,
) -> list[str]:
    """Damage a copy of the template per entry and check them in children; the verdicts.

    A child checks ``CHECKS_PER_CHILD`` copies one after the other (an interpreter's start
    costs more than a check), printing a line per copy, so a child killed by a copy names it.
    Two children run at a time (this is a 2-core machine). The first failure, in entry order,
    is raised and the checks not yet started are dropped.
    """

    def check(first: int, group: list[tuple[str, Callable[[Path], None]]]) -> list[str]:
        log_dirs = []
        for index, (_, damage) in enumerate(group, first):
            log_dir = work / f"case-{index}" / "log"
            shutil.copytree(template.log_dir, log_dir)
            damage(log_dir / "data.mdb")
            log_dirs.append(log_dir)
        proc = subprocess.run(
            [sys.executable, str(CHECKER), *map(str, log_dirs)],
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT,
        )
        lines = proc.stdout.splitlines()
        verdicts = []
        for (what, _), log_dir, line in zip(group, log_dirs, [*lines, None], strict=False):
            where = f"{context}, {what}"
            if line is None:  # the child ended before printing this copy's line
                died = signal.Signals(-proc.returncode).name if proc.returncode < 0 else None
                assert died is None, f"{where}: the checker was killed by {died}\n{proc.stderr}"
                raise AssertionError(f"{where}: the checker failed:\n{proc.stderr}")
            out = json.loads(line)
            if out["verify_ok"]:
                assert out.get("digests") == template.digests, (
                    f"{where}: verify_log passed but the log reads back differently: "
                    f"{out.get('error') or 'other records'}"
                )
            shutil.rmtree(log_dir.parent)  # only failing cases are kept for a look
            verdicts.append("harmless" if out["verify_ok"] else "detected")
        assert proc.returncode == 0, f"{context}: the checker failed:\n{proc.stderr}"
        return verdicts

    groups = range(0, len(damages), CHECKS_PER_CHILD)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(check, i, damages[i : i + CHECKS_PER_CHILD]) for i in groups]
        try:
            return [verdict for future in futures for verdict in future.result()]
        finally:
            for future in futures:
                future.cancel()


def _flip_bit(offset: int, bit: int) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        with path.open("r+b") as f:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ (1 << bit)]))

    return damage


def _truncate(size: int) -> Callable[[Path], None]:
    return lambda path: os.truncate(path, size)


# The slow tier's damage counts: each run draws a fresh seed, so runs add up; more for a
# deeper look (MNEMOLOG_TEST_FLIPS=3000).
SLOW_FLIPS = int(os.environ.get("MNEMOLOG_TEST_FLIPS", "150"))
SLOW_CUTS = int(os.environ.get("MNEMOLOG_TEST_CUTS", "30"))


@pytest.mark.parametrize("flips", [30, pytest.param(SLOW_FLIPS, marks=pytest.mark.slow)])
def test_bit_flips_are_detected_or_harmless(tmp_path: Path, template: Template, flips: int) -> None:
    seed = _seed()
    rng = random.Random(seed)
    size = (template.log_dir / "data.mdb").stat().st_size
    damages = []
    for _ in range(flips):
        offset, bit = rng.randrange(size), rng.randrange(8)
        damages.append((f"bit {bit} of byte {offset}", _flip_bit(offset, bit)))
    verdicts = _damaged_copy_checks(template, tmp_path, damages, f"seed {seed}")
    detected, harmless = verdicts.count("detected"), verdicts.count("harmless")
    print(f"\nbit flips (seed {seed}): {detected} detected, {harmless} harmless, of {flips}")


@pytest.mark.parametrize("cuts", [10, pytest.param(SLOW_CUTS, marks=pytest.mark.slow)])
def test_truncations_are_detected_or_harmless(
    tmp_path: Path, template: Template, cuts: int
) -> None:
    seed = _seed()
    rng = random.Random(seed)
    size = (template.log_dir / "data.mdb").stat().st_size
    damages = []
    for i in range(cuts):
        # Half cut at a page boundary, as a lost tail of whole pages would be.
        pages = size // mmap.PAGESIZE
        new_size = rng.randrange(pages) * mmap.PAGESIZE if i % 2 else rng.randrange(size)
        damages.append((f"truncated to {new_size} of {size} bytes", _truncate(new_size)))
    verdicts = _damaged_copy_checks(template, tmp_path, damages, f"seed {seed}")
    detected, harmless = verdicts.count("detected"), verdicts.count("harmless")
    print(f"\ntruncations (seed {seed}): {detected} detected, {harmless} harmless, of {cuts}")


# LMDB's on-disk format (64-bit build), enough to find the log's root page.
_PAGE_HEADER = 16  # pgno u64, pad u16, flags u16, lower u16, upper u16
_P_BRANCH = 0x01
_NODE_HEADER = 8  # lo u16, hi u16, flags u16, ksize u16; then the key


def _nodes(page: bytes) -> list[tuple[int, bytes]]:
    """(offset in the page, key) of each node of a branch or leaf page."""
    lower = struct.unpack_from("<H", page, 12)[0]
    out = []
    for i in range((lower - _PAGE_HEADER) // 2):
        at = struct.unpack_from("<H", page, _PAGE_HEADER + 2 * i)[0]
        ksize = struct.unpack_from("<H", page, at + 6)[0]
        out.append((at, page[at + _NODE_HEADER : at + _NODE_HEADER + ksize]))
    return out


def _log_root(data: bytes) -> tuple[int, bytes]:
    """The file offset and bytes of the root page of the ``log`` sub-database."""
    psize = struct.unpack_from("<I", data, 40)[0]
    # LMDB uses the meta page with the higher txnid; its main DB root is at offset 128.
    meta = max(
        (data[i * psize : (i + 1) * psize] for i in (0, 1)),
        key=lambda m: struct.unpack_from("<Q", m, 144)[0],
    )
    main_root = struct.unpack_from("<Q", meta, 128)[0]
    main = data[main_root * psize : (main_root + 1) * psize]
    for at, key in _nodes(main):
        if key == b"log":  # the node's data is the sub-database's MDB_db; md_root at 40
            root = struct.unpack_from("<Q", main, at + _NODE_HEADER + len(key) + 40)[0]
            return root * psize, data[root * psize : (root + 1) * psize]
    raise AssertionError("no log sub-database in the main DB's root page")


def test_flipped_branch_key_is_detected(tmp_path: Path, template: Template) -> None:
    # Seen in the random bit flips above: pinned here so that the random test can run a seed
    # that avoids it. Changing a separator key k to k ^ 1 routes the lookup of one seq to the
    # wrong child page; a cursor walk still visits every leaf in order.
    data = (template.log_dir / "data.mdb").read_bytes()
    page_at, page = _log_root(data)
    assert struct.unpack_from("<H", page, 10)[0] & _P_BRANCH, "the log's root must be a branch"
    at, key = _nodes(page)[1]  # node 0 has the empty key: the leftmost child
    offset = page_at + at + _NODE_HEADER + len(key) - 1  # the separator's lowest byte
    what = f"bit 0 of byte {offset} (separator key {int.from_bytes(key, 'big')})"
    damage = _flip_bit(offset, 0)
    _damaged_copy_checks(template, tmp_path / "checker", [(what, damage)], "pinned flip")

    # Read directly too: read() must raise, not end early, when a seq below the head is missing.
    log_dir = tmp_path / "direct" / "log"
    shutil.copytree(template.log_dir, log_dir)
    damage(log_dir / "data.mdb")
    with LmdbEventLog(log_dir) as log:
        try:
            read = len(list(log.read()))
        except CorruptLog:
            read = None  # reading refused the damage
        head = log.head().seq
    assert read is None or read == head, f"{what}: read() returned {read} of {head} records"
