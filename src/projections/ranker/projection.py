"""The learned ranker's read model (``ranker.sqlite3``): what recalls served and the feedback
on them, each memory's record in earlier recalls, and the models trained, promoted and rolled
back.

A recall that logged features for what it served (``RecallPerformed.learned``) becomes an
example;
``recall.used`` and ``recall.feedback`` label it. Only the first word of an agent on a recall
(its first use event, its first grade of each result) counts, and at most
``FEEDBACK_PER_HOUR`` feedback events of an agent in a container per clock hour: more is
recorded, not counted. Which agents' feedback counts at all (trust, quarantine, rollback) is
decided where it is read (``standing``), so that a quarantine removes an agent's feedback from
the next recall and the next model without refolding.

A ``ranker.trained`` event names a model by digest only. Folding it trains the model again
from this projection's own examples up to the event's ``through_seq`` (or takes the model the
trainer just handed over, which was trained from the same rows) and records whether the digest
came out the same: a model that does not reproduce is never served.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt

from ...eventlog import StoredRecord
from ...eventlog.events import (
    RankerPromoted,
    RankerRolledBack,
    RankerTrained,
    RecallFeedback,
    RecallPerformed,
    RecallUsed,
)
from .examples import counted_only, pairs_of
from .features import head_pool
from .histories import SUMS, Histories
from .model import Model, train
from .propensity import NONE, Propensity
from .queries import GLOBAL, RankerQueries

FEEDBACK_PER_HOUR = 600  # per agent and container: beyond it, feedback is not counted
_HOUR_NS = 3_600 * 1_000_000_000

SCHEMA = """
CREATE TABLE IF NOT EXISTS shown (
    recall_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    container_tag TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    versions TEXT NOT NULL,
    base TEXT NOT NULL,
    pool TEXT NOT NULL,
    features BLOB NOT NULL,
    ranker TEXT
);
CREATE INDEX IF NOT EXISTS shown_by_container ON shown(container_tag, seq);
CREATE TABLE IF NOT EXISTS feedback (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    recall_id TEXT NOT NULL,
    container_tag TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    items TEXT NOT NULL,
    grade INTEGER,
    counted INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS feedback_by_recall ON feedback(recall_id, seq);
CREATE TABLE IF NOT EXISTS givers (
    agent_id TEXT NOT NULL,
    container_tag TEXT NOT NULL,
    PRIMARY KEY (agent_id, container_tag)
);
CREATE TABLE IF NOT EXISTS models (
    digest TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    container_tag TEXT NOT NULL,
    body TEXT NOT NULL,
    trained TEXT NOT NULL,
    reproduced INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS serving (
    container_tag TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    seq INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS decisions (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    container_tag TEXT NOT NULL,
    digest TEXT NOT NULL,
    other TEXT,
    body TEXT NOT NULL
);
"""


class RankerProjection(RankerQueries):
    name = "ranker"
    schema = SCHEMA
    folds = (
        RecallPerformed,
        RecallUsed,
        RecallFeedback,
        RankerTrained,
        RankerPromoted,
        RankerRolledBack,
    )

    def __init__(self, path: Path) -> None:
        self._state_lock = threading.Lock()
        # each version's record by agent, per container (a recall compares only its own
        # container's recalls); read by every recall, so kept in memory
        self._histories: dict[str, Histories] = {}
        self._serving: dict[str, Model] = {}
        self._hours: dict[tuple[str, str, int], int] = {}
        self._givers: set[tuple[str, str]] = set()  # (agent, container) that gave feedback
        self._feedback_in: set[str] = set()  # containers with feedback
        self._pending: list[Callable[[], None]] = []
        self._decided = False  # the batch folded a ranker event: what serves is read again
        self._fresh: dict[str, Model] = {}  # handed over by the trainer, by digest
        self._propensities: dict[str, Propensity] = {}  # by model digest
        super().__init__(path)
        self._load()

    # --- folding ---------------------------------------------------------------------------

    def _fold(self, stored: StoredRecord) -> bool:
        record = stored.record
        event = record.event
        if isinstance(event, RecallPerformed):
            self._fold_recall(stored, event)
        elif isinstance(event, RecallUsed):
            self._fold_feedback(
                stored, event.recall_id, event.container_tag, "used", event.version_ids, None
            )
        elif isinstance(event, RecallFeedback):
            self._fold_feedback(
                stored,
                event.recall_id,
                event.container_tag,
                "grade",
                [event.version_id],
                event.grade,
            )
        elif isinstance(event, RankerTrained):
            self._fold_trained(stored, event)
            self._decided = True
        elif isinstance(event, RankerPromoted):
            self._decide(stored, "promoted", event.container_tag, event.digest, event.replaced)
            self._serve(event.container_tag, event.digest, record.seq)
            self._decided = True
        elif isinstance(event, RankerRolledBack):
            self._decide(stored, "rolled_back", event.container_tag, event.digest, event.restored)
            self._serve(event.container_tag, event.restored, record.seq)
            self._decided = True
        return False

    def _fold_recall(self, stored: StoredRecord, event: RecallPerformed) -> None:
        by_id = {c.version_id: c for c in event.candidates}
        served = [by_id[v] for v in event.served if v in by_id]
        logged = event.learned.features if event.learned is not None else {}
        if (
            not served
            or event.container_tag is None
            or any(c.version_id not in logged for c in served)
        ):
            return  # no features logged: documents, or a container before any feedback
        base = list(range(1, len(served) + 1))
        explored = event.params.get("explore")
        if isinstance(explored, int) and 1 <= explored < len(served):
            base[explored - 1], base[explored] = explored + 1, explored
        features = np.asarray([logged[c.version_id] for c in served], dtype=np.float64)
        self._conn.execute(
            "INSERT OR IGNORE INTO shown VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.recall_id,
                stored.seq,
                stored.record.ts,
                event.container_tag,
                stored.record.actor.agent_id,
                json.dumps([c.version_id for c in served]),
                json.dumps(base),
                json.dumps(sorted(head_pool(event.candidates))),
                features.tobytes(),
                event.params.get("ranker"),
            ),
        )

    def _fold_feedback(
        self,
        stored: StoredRecord,
        recall_id: str,
        container_tag: str | None,
        kind: str,
        version_ids: Sequence[str],
        grade: int | None,
    ) -> None:
        agent = stored.record.actor.agent_id
        if container_tag is not None:
            # Even on a recall that logged no features: from now on, the container's recalls
            # log theirs, and this agent's are explored.
            self._conn.execute("INSERT OR IGNORE INTO givers VALUES (?, ?)", (agent, container_tag))
            self._pending.append(lambda: self._gave(agent, container_tag))
        row = self._conn.execute(
            "SELECT container_tag, versions, pool FROM shown WHERE recall_id = ?", (recall_id,)
        ).fetchone()
        if row is None:
            return  # a recall with no logged features: nothing to learn from it
        container, versions, pool = row[0], json.loads(row[1]), frozenset(json.loads(row[2]))
        record = stored.record
        index = {v: i for i, v in enumerate(versions)}
        items = [index[v] for v in version_ids if v in index]
        counted = self._first_word(recall_id, agent, kind, items) and self._within_rate(
            agent, container, record.ts
        )
        self._conn.execute(
            "INSERT INTO feedback VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.seq, record.ts, recall_id, container, agent, kind, json.dumps(items), grade,
             int(counted)),
        )  # fmt: skip
        if counted:
            self._pending.append(
                lambda: self._remember(
                    agent, container, recall_id, versions, pool, kind, items, grade
                )
            )

    def _first_word(self, recall_id: str, agent: str, kind: str, items: list[int]) -> bool:
        """Whether this is the agent's first use event on the recall (or its first grade of
        this result)."""
        earlier = self._conn.execute(
            "SELECT items FROM feedback WHERE recall_id = ? AND agent_id = ? AND kind = ?"
            " AND counted = 1",
            (recall_id, agent, kind),
        ).fetchall()
        if kind == "used":
            return not earlier
        return not any(set(json.loads(e[0])) & set(items) for e in earlier)

    def _within_rate(self, agent: str, container: str, at: int) -> bool:
        hour = (agent, container, at // _HOUR_NS)
        count = self._hours.get(hour, 0)
        if count >= FEEDBACK_PER_HOUR:
            return False
        self._hours[hour] = count + 1
        return True

    def _remember(
        self,
        agent: str,
        container: str,
        recall_id: str,
        versions: list[str],
        pool: frozenset[str],
        kind: str,
        items: list[int],
        grade: int | None,
    ) -> None:
        with self._state_lock:
            histories = self._histories.get(container)
            if histories is None:
                histories = self._histories[container] = Histories()
            if kind == "used":
                for i, version in enumerate(versions):
                    histories.note(version, agent, recall_id, pool, i + 1, used=i in items)
            else:
                for i in items:
                    histories.note(versions[i], agent, recall_id, pool, i + 1, grade=grade)

    def _gave(self, agent: str, container: str) -> None:
        with self._state_lock:
            self._givers.add((agent, container))
            self._feedback_in.add(container)

    def _fold_trained(self, stored: StoredRecord, event: RankerTrained) -> None:
        model = self._fresh.pop(event.digest, None)
        if model is None:
            model = self.retrain(event)
        reproduced = model is not None and model.digest == event.digest
        body = msgspec.json.encode(model).decode() if model is not None else "null"
        self._conn.execute(
            "INSERT OR REPLACE INTO models VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                event.digest,
                stored.seq,
                stored.record.ts,
                event.container_tag or GLOBAL,
                body,
                msgspec.json.encode(event).decode(),
                int(reproduced),
            ),
        )
        self._decide(stored, "trained", event.container_tag, event.digest, event.prior)

    def _decide(
        self,
        stored: StoredRecord,
        kind: str,
        container: str | None,
        digest: str,
        other: str | None,
    ) -> None:
        self._conn.execute(
            "INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                stored.seq,
                stored.record.ts,
                kind,
                container or GLOBAL,
                digest,
                other,
                msgspec.json.encode(stored.record.event).decode(),
            ),
        )

    def _serve(self, container: str | None, digest: str | None, seq: int) -> None:
        key = container or GLOBAL
        if digest is None:
            self._conn.execute("DELETE FROM serving WHERE container_tag = ?", (key,))
        else:
            self._conn.execute(
                "INSERT OR REPLACE INTO serving VALUES (?, ?, ?)", (key, digest, seq)
            )

    def _committed(self) -> None:
        pending, self._pending = self._pending, []
        for remember in pending:
            remember()
        if self._decided:  # a recall's batch leaves what serves as it was
            self._decided = False
            self._load_serving()

    def _rolled_back(self) -> None:
        self._pending = []
        self._load()

    def reset(self) -> None:
        super().reset()
        self._load()

    def _load(self) -> None:
        """Histories and rate counts from the feedback counted, in log order: what folding
        the log gives (a rate count moves exactly when a word is counted, and only a counted
        word is remembered)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT f.agent_id, f.recall_id, f.kind, f.items, f.grade, f.at, s.versions,"
                " s.pool, s.container_tag FROM feedback f JOIN shown s USING (recall_id)"
                " WHERE f.counted = 1 ORDER BY f.seq"
            ).fetchall()
        with self._state_lock:
            self._histories = {}
            self._hours = {}
            self._givers = set()
            self._feedback_in = set()
        with self._lock:
            givers = self._conn.execute("SELECT agent_id, container_tag FROM givers").fetchall()
        for agent_id, tag in givers:
            self._gave(agent_id, tag)
        for agent, recall_id, kind, items, grade, at, versions, pool, container in rows:
            hour = (agent, container, at // _HOUR_NS)
            self._hours[hour] = self._hours.get(hour, 0) + 1
            self._remember(
                agent,
                container,
                recall_id,
                json.loads(versions),
                frozenset(json.loads(pool)),
                kind,
                json.loads(items),
                grade,
            )
        self._load_serving()

    def _load_serving(self) -> None:
        with self._lock:
            rows = self._conn.execute(
                "SELECT s.container_tag, m.body FROM serving s JOIN models m USING (digest)"
                " WHERE m.reproduced = 1"
            ).fetchall()
        serving = {key: msgspec.json.decode(body, type=Model) for key, body in rows}
        with self._state_lock:
            self._serving = serving

    # --- training data ---------------------------------------------------------------------

    def hand_over(self, model: Model) -> None:
        """A model the trainer is about to log: its fold takes it rather than training it
        again (it was trained from the same rows)."""
        self._fresh[model.digest] = model

    def retrain(self, event: RankerTrained) -> Model | None:
        """The model a ``ranker.trained`` names, trained again from this projection's rows."""
        prior = self.model(event.prior) if event.prior is not None else None
        if event.prior is not None and prior is None:
            return None

        def standing(agent: str) -> float:
            return event.standing.get(agent, 0.0)

        examples = self.examples(event.container_tag, event.through_seq)
        pairs = pairs_of(
            [counted_only(e, standing) for e in examples if e.seq <= event.split_seq],
            Propensity(eta=event.eta, swaps=event.propensity_swaps),
            standing,
        )
        if len(pairs.weight) == 0:
            return None
        return train(pairs, through_seq=event.through_seq, prior=prior)

    # --- reads -----------------------------------------------------------------------------

    def record_sums(
        self,
        container_tag: str,
        version_ids: Sequence[str],
        pool: frozenset[str],
        counts: Callable[[Sequence[str]], Sequence[bool]],
        examined: Callable[[int], float],
    ) -> npt.NDArray[np.float64]:
        """Each version's record in the container's earlier recalls like one whose head is
        ``pool``, by the agents whose feedback ``counts`` (``Histories.sums``)."""
        with self._state_lock:
            histories = self._histories.get(container_tag)
            if histories is None:
                return np.zeros((len(version_ids), len(SUMS)), dtype=np.float64)
            return histories.sums(version_ids, pool, counts, examined)

    def serving(self, container_tag: str | None) -> Model | None:
        """The model serving a container: its own, else the global one (None: no model)."""
        with self._state_lock:
            if container_tag is not None and container_tag in self._serving:
                return self._serving[container_tag]
            return self._serving.get(GLOBAL)

    def propensity_of(self, digest: str) -> Propensity:
        """The examination propensity a model was trained with."""
        with self._state_lock:
            found = self._propensities.get(digest)
        if found is None:
            row = self.model_row(digest)
            found = (
                NONE
                if row is None
                else Propensity(eta=row.trained.eta, swaps=row.trained.propensity_swaps)
            )
            with self._state_lock:
                self._propensities[digest] = found
        return found

    def model(self, digest: str) -> Model | None:
        found = self.model_row(digest)
        return found.model if found is not None and found.reproduced else None

    def has_feedback(self, container_tag: str | None = None) -> bool:
        """Whether anyone has said what helped in a recall of this container (None: of any)."""
        with self._state_lock:
            if container_tag is None:
                return bool(self._feedback_in)
            return container_tag in self._feedback_in

    def gives_feedback(self, agent: str, container_tag: str) -> bool:
        """Whether an agent has said which results of a recall in this container it used:
        exploration is spent only on recalls whose agent may say what it used."""
        with self._state_lock:
            return (agent, container_tag) in self._givers
