"""Crash durability: SIGKILL a writing process at random moments; every ACK must survive.

A child (``children/crash_writer.py``) appends from eight threads and reports each append
only after it returned. The parent kills it at a random moment, reopens the log and checks
that every acknowledged draft sits at the seq the child was told, exactly once, in a gap-free,
verified log. Trials accumulate in one log, so recovery after a crash is itself crashed into.

``kill -9`` keeps the page cache, so this proves the commit protocol (acknowledge only after
commit, recover cleanly from a torn process), not power-loss durability: that rests on the
sync flags and is probed by fsync fault injection in ``test_faults.py``.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from mnemolog.eventlog import LmdbEventLog, verify_log
from mnemolog.eventlog.events import AgentSignal
from tests.factories import signal_draft

CRASH_WRITER = Path(__file__).parent / "children" / "crash_writer.py"
MNEMOLOG_CLI = Path(sys.executable).parent / "mnemolog"
NOTE_SIZE = 1000  # as in crash_writer.py
# Generous bound for a child to start and commit once: a liveness guard, not a timing check.
FIRST_ACK_WAIT = 60.0

Acks = dict[tuple[str, int], int]  # (writer, n) -> seq the child was given


def _seed() -> int:
    """A fresh seed each run, named in every message; MNEMOLOG_TEST_SEED replays one."""
    fixed = os.environ.get("MNEMOLOG_TEST_SEED")
    return int(fixed) if fixed else random.randrange(2**32)


def _run_and_kill(
    log_dir: Path, tag: str, rng: random.Random, stderr_path: Path, context: str
) -> Acks:
    """Run one writer child, SIGKILL it at a random moment after its first ACK."""
    lines: list[bytes] = []
    started = threading.Event()

    with stderr_path.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(CRASH_WRITER), str(log_dir), tag],
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        assert proc.stdout is not None
        stdout = proc.stdout

        def pump() -> None:
            # Keep draining so the child never blocks on a full pipe; EOF also releases the wait.
            try:
                for raw in stdout:
                    lines.append(raw)
                    started.set()
            finally:
                started.set()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            started.wait(FIRST_ACK_WAIT)
            if proc.poll() is None and lines:
                time.sleep(rng.uniform(0.02, 0.5))
            alive_at_kill = proc.poll() is None
        finally:
            # Always killed and reaped, even if the wait is interrupted.
            proc.kill()
            proc.wait()
            reader.join()
            stdout.close()

    err = stderr_path.read_text(errors="replace")
    assert lines, f"{context}: the child acknowledged nothing; stderr:\n{err}"
    assert "Traceback" not in err, f"{context}: a writer thread failed:\n{err}"
    assert alive_at_kill and proc.returncode == -signal.SIGKILL, (
        f"{context}: the child ended on its own (rc {proc.returncode}); stderr:\n{err}"
    )
    acks: Acks = {}
    for raw in lines:
        if not raw.endswith(b"\n"):
            continue  # cannot happen (one write per line), but a torn line is no promise
        word, writer, n, seq = raw.decode().split()
        assert word == "ACK", f"{context}: unexpected line {raw!r}"
        assert (writer, int(n)) not in acks, f"{context}: {writer}-{n} acknowledged twice"
        acks[(writer, int(n))] = int(seq)
    return acks


def _note(label: str) -> str:
    """The note ``crash_writer.py`` stores for ``label``."""
    event = signal_draft(label, size=NOTE_SIZE).event
    assert isinstance(event, AgentSignal) and event.label is not None
    return event.label


def _check_log(data_dir: Path, expected: dict[int, str], context: str, *, cli: bool) -> int:
    """Reopen the log after a crash and check it against every ACK so far; return its head.

    ``expected`` maps each acknowledged seq to the note the child was told it holds. With
    ``cli``, ``mnemolog verify-log`` checks it too, as an operator would.
    """
    log_dir = data_dir / "log"
    with LmdbEventLog(log_dir) as log:
        records = list(log.read())  # read() also checks checksums and the hash chain
        head = log.head()

    seqs = [stored.seq for stored in records]
    assert seqs == list(range(1, len(records) + 1)), f"{context}: seqs have a gap"
    assert head.seq == len(records), f"{context}: head {head.seq}, {len(records)} records"
    notes: list[str | None] = []
    for stored in records:
        event = stored.record.event
        assert isinstance(event, AgentSignal), f"{context}: seq {stored.seq} is {event!r}"
        notes.append(event.label)
    twice = [note for note, count in Counter(notes).items() if count > 1]
    assert not twice, f"{context}: notes stored twice: {twice[:3]}"

    for seq, note in expected.items():
        label = note.rstrip(".")
        assert seq <= len(notes), f"{context}: ACKed {label} at seq {seq} is lost"
        assert notes[seq - 1] == note, (
            f"{context}: seq {seq} should hold {label}, holds {notes[seq - 1]!r:.40}"
        )

    report = verify_log(log_dir)
    assert report.ok, f"{context}: verify_log: {report}"
    if not cli:
        return head.seq
    done = subprocess.run(
        [str(MNEMOLOG_CLI), "verify-log", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("MNEMOLOG_")},
    )
    assert done.returncode == 0, f"{context}: mnemolog verify-log: {done.stdout}{done.stderr}"
    return head.seq


# The slow tier's kills: each run draws a fresh seed, so runs add up; more for a deeper look.
SLOW_TRIALS = int(os.environ.get("MNEMOLOG_TEST_CRASHES", "25"))


@pytest.mark.parametrize("trials", [3, pytest.param(SLOW_TRIALS, marks=pytest.mark.slow)])
def test_acknowledged_appends_survive_sigkill(tmp_path: Path, trials: int) -> None:
    assert MNEMOLOG_CLI.exists(), f"the mnemolog console script is not at {MNEMOLOG_CLI}"
    seed = _seed()
    rng = random.Random(seed)
    data_dir = tmp_path / "data"
    expected: dict[int, str] = {}  # every ACK of every trial so far: seq -> note
    head = 0
    for trial in range(trials):
        context = f"seed {seed}, trial {trial}"
        stderr_path = tmp_path / f"stderr-{trial}"
        acks = _run_and_kill(data_dir / "log", f"t{trial}", rng, stderr_path, context)
        for (writer, n), seq in acks.items():
            assert seq not in expected, f"{context}: seq {seq} was acknowledged twice"
            expected[seq] = _note(f"{writer}-{n}")
        # The command runs the same verify_log: after the first crash and the last is enough.
        cli = trial in (0, trials - 1)
        head = _check_log(data_dir, expected, context, cli=cli)
    print(f"\ncrash: seed {seed}, {trials} kills, {len(expected)} ACKed appends, head {head}")
    shutil.rmtree(data_dir)  # the slow tier's log reaches ~100 MB; kept only when a trial fails
