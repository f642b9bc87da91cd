"""The facts mnemolog records: one tagged union of frozen msgspec Structs.

Every event is a past-tense fact with a stable dotted wire tag (``type``) and a ``schema``
version. Evolve additively: new fields get defaults and types never change; a breaking change
bumps ``schema`` and registers an upcaster (see ``upcasting.py``).

Text that may hold personal data is never a plain ``str`` here: it is a ``Sealed`` value,
encrypted under its subject's data key, so destroying the key erases it from the log.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

Protocol: TypeAlias = Literal["rest", "proxy", "mcp", "cli", "import", "system"]


class Actor(msgspec.Struct, frozen=True, kw_only=True):
    """Who caused an event: an agent identity and the surface it came through."""

    agent_id: str
    protocol: Protocol


class Sealed(msgspec.Struct, frozen=True, kw_only=True):
    """Ciphertext of a personal-data field, bound to its subject (crypto-shredding)."""

    subject: str
    nonce: bytes
    ct: bytes
    alg: str = "aes-256-gcm"


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every event body."""

    schema: int = 1


# --- memory lifecycle -------------------------------------------------------------------


class MemoryWritten(Event, frozen=True, kw_only=True, tag="memory.written"):
    """A new chain starts with its first version."""

    memory_id: str
    version_id: str
    container_tag: str
    content: Sealed
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None  # what the memory answers or continues
    is_static: bool = False
    observed_at: str | None = None


class MemoryDeduplicated(Event, frozen=True, kw_only=True, tag="memory.deduplicated"):
    """A write was an exact duplicate of a live version: no new version was made."""

    memory_id: str
    version_id: str
    container_tag: str


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """Why a write was taken for a new version of another memory, or linked to it.

    ``rule``: ``automatic`` (the write decision judged the two texts; ``reason`` is its stable
    code), ``explicit`` (the write named the memory it corrects), ``imported`` (an export
    file stated it; ``reason`` is the one it gives) or ``arbiter`` (a local model ruled on a
    pair the write decision was unsure of; see ``memory.arbitrated``). ``differing`` holds the
    words of each text the other lacks (``{"removed": [...], "added": [...]}``, JSON), sealed
    under the newer memory's key like its content; a link, which joins two chains erasable
    apart, holds only the written memory's own (``added``).
    """

    rule: Literal["automatic", "explicit", "imported", "arbiter"]
    reason: str
    shared_words: float | None = None
    differing: Sealed | None = None


class MemorySuperseded(Event, frozen=True, kw_only=True, tag="memory.superseded"):
    """A write became version n+1 of an existing chain: judged a correction of its latest
    version, or naming it (``evidence`` says which; absent in logs written before it)."""

    memory_id: str
    version_id: str
    version: int
    supersedes_version_id: str
    container_tag: str
    content: Sealed
    similarity: float
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None  # what the memory answers or continues
    is_static: bool = False
    observed_at: str | None = None
    evidence: Evidence | None = None


class MemoryLinked(Event, frozen=True, kw_only=True, tag="memory.linked"):
    """A new memory may update an older one: both stay live, and recall ranks the newer first
    and marks the older as possibly outdated. Appended with the write that made the newer."""

    memory_id: str  # the newer chain
    version_id: str
    target_memory_id: str  # the chain it may update
    target_version_id: str
    container_tag: str
    similarity: float
    evidence: Evidence


class MemoryArbitrated(Event, frozen=True, kw_only=True, tag="memory.arbitrated"):
    """A local model was asked whether a new memory is the same fact as, an update of, or a
    different fact from an older one the write decision was unsure of; appended with the write
    it decided. ``ruling`` None: no usable answer (``failure`` says why), both were kept."""

    container_tag: str
    memory_id: str  # the older memory, put to the model
    version_id: str  # the new version the write made (of that chain, or of a new one)
    ruling: Literal["same", "update", "different"] | None
    answer: Sealed | None = None  # the model's words, sealed under the container's key
    model: str | None = None
    failure: str | None = None
    latency_ms: float = 0.0


class MemoryEdited(Event, frozen=True, kw_only=True, tag="memory.edited"):
    """An explicit edit made version n+1 of a chain (never a mutation)."""

    memory_id: str
    version_id: str
    version: int
    supersedes_version_id: str
    container_tag: str
    content: Sealed
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None  # what the memory answers or continues
    is_static: bool = False
    observed_at: str | None = None


class MemoryReverted(MemoryEdited, frozen=True, kw_only=True, tag="memory.reverted"):
    """A rollback of an agent (or the undo of one) made an earlier version of a chain its
    current one again: version n+1, a copy of ``restores_version_id``, sealed under the
    chain's key. Every fold takes it as the edit it also is."""

    restores_version_id: str
    rollback_id: str


class MemorySplit(Event, frozen=True, kw_only=True, tag="memory.split"):
    """A version an older write decision took for an update of its chain (and so hid) was
    split back out: a new live chain starts with a copy of it, sealed under its own key. The
    source chain keeps its history; the copied version stays in it, superseded."""

    memory_id: str  # the new chain
    version_id: str
    container_tag: str
    content: Sealed
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None
    is_static: bool = False
    observed_at: str | None = None
    source_memory_id: str  # the chain it was split from
    source_version_id: str  # the version copied


class ChainForgotten(Event, frozen=True, kw_only=True, tag="chain.forgotten"):
    """A whole chain was forgotten, reversibly, for a reason."""

    memory_id: str
    reason: Sealed


class ChainRestored(Event, frozen=True, kw_only=True, tag="chain.restored"):
    """A forgotten chain was restored."""

    memory_id: str
    reason: Sealed | None = None


class SubjectErased(Event, frozen=True, kw_only=True, tag="subject.erased"):
    """A subject's data key was destroyed: its sealed fields are gone for good.

    Scope ``version``: one version of a chain whose text lives on in a chain split from it
    (``memory.split``) was erased with that chain; the rest of its own chain was re-sealed
    under a new key first (see ``docs/erasure.md``), so only that version's fields are gone.
    """

    subject: str
    scope: Literal["memory", "container", "document", "version", "profile"]
    memory_id: str | None = None
    container_tag: str | None = None
    version_id: str | None = None  # with scope ``version``


class ContainerErased(Event, frozen=True, kw_only=True, tag="container.erased"):
    """The receipt of a container's erasure, recorded right after the ``subject.erased`` of
    each subject it destroyed, in the same append: what was destroyed, counted, no text."""

    container_tag: str
    memories: int  # chains, all their versions with them
    versions: int
    documents: int
    chunks: int
    profile: bool
    recalls: int  # recalls whose query was sealed under the container's key
    turns: int  # proxied turns whose tool arguments were


# --- recall and the proxy ------------------------------------------------------------------


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """One recall candidate, kept whether or not it was served."""

    version_id: str
    similarity: float | None = None
    bm25: float | None = None
    fused: float = 0.0
    served: bool = False
    vector_rank: int | None = None
    bm25_rank: int | None = None
    score: float = 0.0
    below_floor: bool = False
    # Set for the candidates a rerank rescored (params ``rerank``): the cross-encoder's logit,
    # and its rank among them (1 = best).
    rerank_score: float | None = None
    rerank_rank: int | None = None
    below_trust: bool = False  # left out by the request's minTrust


class RecallPerformed(Event, frozen=True, kw_only=True, tag="recall.performed"):
    """A recall ran; its id is the trace id."""

    recall_id: str
    origin: Literal["rest", "proxy", "mcp", "capture", "import"]
    container_tag: str | None
    query: Sealed
    embedder: str
    query_vector_digest: str | None = None  # sha256 of the query vector's float32 bytes
    view_seq: int | None = None  # the seq the read models had applied when it ranked
    index_seqs: dict[str, int] = {}  # full-text index -> the seq its searched commit covers
    candidates: list[Candidate] = []
    served: list[str] = []
    latency_ms: dict[str, float] = {}
    params: dict[str, str | int | float | bool | None] = {}


class InjectedSource(msgspec.Struct, frozen=True, kw_only=True):
    """What an injection said of a version's source: its writer, the trust it carried then
    (rounded as rendered), the detector's flags, whether it was captured."""

    agent_id: str
    trust: float
    flags: list[str] = []
    captured: bool = False


class ContextInjected(Event, frozen=True, kw_only=True, tag="context.injected"):
    """Recalled versions were rendered into an upstream request; only the digest is kept."""

    trace_id: str
    recall_id: str
    version_ids: list[str]
    renderer: str
    sent_digest: str
    sources: list[InjectedSource] = []  # one per version, for renderers that show them


class RecallUsed(Event, frozen=True, kw_only=True, tag="recall.used"):
    """An agent said which results of a recall it used: a trust signal, and later a ranking
    signal. It names versions by id, never their text; none used is a signal too."""

    recall_id: str
    container_tag: str | None = None
    memory_ids: list[str] = []
    version_ids: list[str] = []  # the served versions of those memories, in the same order


class MemoryCaptured(Event, frozen=True, kw_only=True, tag="memory.captured"):
    """Auto-capture proposed a fact from a conversation (unverified)."""

    capture_id: str
    container_tag: str
    content: Sealed
    trace_id: str | None = None
    redactions: int = 0
    method: Literal["heuristic", "distilled"] = "heuristic"


class ProfileUpdated(Event, frozen=True, kw_only=True, tag="profile.updated"):
    """A container's profile (static and dynamic facts) changed. ``flags``: the poisoning
    detector's reasons, if it flagged a fact of it (stored all the same, charged to the
    writer's trust)."""

    container_tag: str
    profile: Sealed
    flags: list[str] = []


class DocumentIngested(Event, frozen=True, kw_only=True, tag="document.ingested"):
    """A document was added to a container."""

    document_id: str
    container_tag: str
    content: Sealed
    title: Sealed | None = None
    metadata: Sealed | None = None
    chunk_embeddings: Sealed | None = None  # float32 rows, one per chunk, in chunk order
    chunker: str = ""  # the recipe that cut the chunks, so a rebuild cuts the same ones
    flags: list[str] = []  # the poisoning detector's reasons, as for a profile


class DocumentForgotten(Event, frozen=True, kw_only=True, tag="document.forgotten"):
    """A document is hidden from search and lists, and kept (a rollback of its writer)."""

    document_id: str
    container_tag: str
    reason: Sealed | None = None


class DocumentRestored(Event, frozen=True, kw_only=True, tag="document.restored"):
    """A forgotten document is served again (the undo of that rollback)."""

    document_id: str
    container_tag: str


class EmbedderPinned(Event, frozen=True, kw_only=True, tag="embedder.pinned"):
    """The data dir was bound to one embedder identity on first use."""

    name: str
    dimension: int
    digest: str


class ReembedStarted(Event, frozen=True, kw_only=True, tag="embedder.reembed_started"):
    """The data dir moves to another embedder (``mnemolog reembed``): from here its vectors
    are this embedder's, those stored before come in ``vectors.reembedded`` events, and
    ``embedder.reembed_completed`` says every one has. Until then the server refuses to start."""

    name: str
    dimension: int
    digest: str
    previous_name: str
    previous_digest: str


class ReembeddedVector(msgspec.Struct, frozen=True, kw_only=True):
    """The new vector of what the event at ``seq`` stored: a memory version's (its
    ``version_id``), or a document's chunks (float32 rows in chunk order)."""

    seq: int
    embedding: Sealed  # sealed under the same subject as what it embeds
    version_id: str | None = None


class VectorsReembedded(Event, frozen=True, kw_only=True, tag="vectors.reembedded"):
    """One batch of a re-embedding: vectors made by the embedder of ``digest``."""

    digest: str
    versions: list[ReembeddedVector] = []
    documents: list[ReembeddedVector] = []


class ReembedCompleted(Event, frozen=True, kw_only=True, tag="embedder.reembed_completed"):
    """Every version and document stored before the re-embedding started has its new vector
    (those whose text was erased have none)."""

    digest: str
    versions: int
    documents: int
    seconds: float


class AgentSignal(Event, frozen=True, kw_only=True, tag="agent.signal"):
    """Feedback about an agent's behaviour, the input of its trust score."""

    agent_id: str
    signal: Literal["positive", "negative", "neutral"]
    memory_id: str | None = None
    weight: float = 1.0
    label: str | None = None  # a machine-readable reason code, never free text
    note: Sealed | None = None


class MemoryFlagged(Event, frozen=True, kw_only=True, tag="memory.flagged"):
    """The poisoning detector found instructions aimed at later readers in a write's text.
    Appended with the write, whose version is stored all the same; recall shows it flagged,
    and it is a negative trust signal for the writer. Recorded, not recomputed: the rules
    change, what they said of a write then does not."""

    memory_id: str
    version_id: str
    container_tag: str
    reasons: list[str]  # the detector's stable codes (``memory/poisoning.py``)
    detector: str  # which rules decided


class AgentKeyAdded(Event, frozen=True, kw_only=True, tag="agent.key_added"):
    """An API key was made for an agent. Only the digest of its secret is kept: the secret is
    shown once, to whoever made the key, and is in no event or log."""

    key_id: str  # public, part of the token: how a request's key is found
    agent_id: str  # the agent's name, stamped on every event its requests cause
    digest: str  # sha256 of the secret, hex
    containers: list[str] | None = None  # the containers it may read and write (None: all)
    # May quarantine and roll back agents, as the user (``local``) may; never scoped.
    admin: bool = False


class AgentKeyRevoked(Event, frozen=True, kw_only=True, tag="agent.key_revoked"):
    """An API key stopped opening the door, for good."""

    key_id: str


class AgentQuarantined(Event, frozen=True, kw_only=True, tag="agent.quarantined"):
    """An agent's memories were hidden from recall and from the lists agents read, and kept:
    every version it wrote, until it is released."""

    agent_id: str
    reason: str | None = None  # a short note by whoever quarantined it, never memory text


class AgentReleased(Event, frozen=True, kw_only=True, tag="agent.released"):
    """A quarantine ended: the agent's memories are served again."""

    agent_id: str


class RevertedChain(msgspec.Struct, frozen=True, kw_only=True):
    """A chain a rollback (or its undo) gave an earlier version back, as a new version."""

    memory_id: str
    version_id: str  # the new version, a copy of ``restored_version_id``
    restored_version_id: str
    replaced_version_id: str  # the version that was current before


class ProfileReset(msgspec.Struct, frozen=True, kw_only=True):
    """A container's profile a rollback (or its undo) set back to an earlier one."""

    container_tag: str
    restored_seq: int | None  # the ``profile.updated`` whose profile it set again (None: empty)
    replaced_seq: int  # the one that was current before


class AgentRolledBack(Event, frozen=True, kw_only=True, tag="agent.rolled_back"):
    """What an agent wrote or changed since ``since_seq`` was undone, by the events appended
    with this one: the chains it made forgotten, the chains it changed given back the version
    before its change, the chains it forgot restored and those it restored forgotten again,
    the profiles it set put back. ``erased``: its hard deletes, which nothing can undo."""

    rollback_id: str
    agent_id: str
    since_seq: int
    forgotten: list[str] = []
    reverted: list[RevertedChain] = []
    restored: list[str] = []
    reforgotten: list[str] = []
    profiles: list[ProfileReset] = []
    erased: list[str] = []
    documents: list[str] = []  # the documents it ingested, forgotten (``document.forgotten``)


class RollbackUndone(Event, frozen=True, kw_only=True, tag="agent.rollback_undone"):
    """A rollback was undone by the events appended with this one: what it forgot restored,
    what it gave back replaced again by the agent's version, and so on. Items changed since
    the rollback are left as they are and listed in ``skipped``."""

    rollback_id: str
    agent_id: str
    restored: list[str] = []
    reverted: list[RevertedChain] = []
    forgotten: list[str] = []
    profiles: list[ProfileReset] = []
    documents: list[str] = []  # the documents the rollback forgot, restored
    skipped: list[str] = []  # memory ids, document ids and container tags


# --- proxied turns --------------------------------------------------------------------------


class ProxyRound(msgspec.Struct, frozen=True, kw_only=True):
    """One upstream call of a proxied turn, and what the model decided in it."""

    request_digest: str  # sha256 of the exact body bytes sent upstream
    status: int | None = None  # the upstream's HTTP status; None when no answer came
    latency_ms: float = 0.0
    decision: Literal["answer", "memory", "client_tools", "error"] = "answer"
    memory_calls: int = 0
    client_calls: int = 0
    arguments: Sealed | None = None  # the searchMemory arguments, as the model sent them
    recall_ids: list[str] = []
    results: int = 0
    error: str | None = None  # a reason code: recall_failed, recall_timeout, bad_arguments...
    # saveMemory calls (counted in memory_calls too), the version ids they wrote or found,
    # and the number each named in ``replaces`` (None: none, or unreadable). Their text is
    # not kept here: it is in the written memory's own event, erased with it.
    save_calls: int = 0
    saved: list[str] = []
    save_replaces: list[int | None] = []


class ProxyTurn(Event, frozen=True, kw_only=True, tag="proxy.turn"):
    """A chat completion went through the proxy: its rounds, its outcome and its digests.

    The injected memories are in the ``context.injected`` events of the same ``turn_id``;
    the profile context is named by when it was set and the digest of its rendered bytes.
    """

    turn_id: str
    container_tag: str
    model: str
    stream: bool
    request_digest: str  # sha256 of the client's request body
    rounds: list[ProxyRound] = []
    outcome: Literal["answer", "client_tools", "upstream_error", "cancelled"] = "answer"
    status: int = 200
    memory_round: bool = False
    results: int = 0
    answer_digest: str | None = None  # sha256 of the answer text (or tool calls) returned
    degraded: list[str] = []
    profile_at: int | None = None
    profile_digest: str | None = None
    latency_ms: float = 0.0


class CaptureDecided(Event, frozen=True, kw_only=True, tag="capture.decided"):
    """Auto-capture ran over a turn's user messages: what it wrote and why it kept the rest
    out, by count (the written text is in the memory's own write event, nowhere else)."""

    turn_id: str
    container_tag: str
    method: Literal["heuristic", "distilled"] = "heuristic"
    proposed: int = 0
    excluded: dict[str, int] = {}  # sensitive category -> candidates never stored
    redactions: int = 0
    written: list[str] = []  # version ids written, superseded or deduplicated into
    fallback: str | None = None  # why distillation was not used, when it was asked for


# --- portability ----------------------------------------------------------------------------


class ImportOrigin(msgspec.Struct, frozen=True, kw_only=True):
    """Provenance an export file states for an imported version or document: who made it, how
    and when, in the store it came from. Kept beside the importer's own provenance (the
    record's actor), never in its place."""

    agent_id: str | None = None
    protocol: str | None = None
    kind: str | None = None
    created_at: int | None = None


class ImportedChain(msgspec.Struct, frozen=True, kw_only=True):
    """Chain-level facts of an imported chain, carried by the event of its first version."""

    digest: Sealed  # sha256 of the chain as the file held it: a later import of it is skipped
    created_at: int
    forgotten: bool = False
    forgotten_at: int | None = None
    forgotten_reason: Sealed | None = None


class MemoryImported(Event, frozen=True, kw_only=True, tag="memory.imported"):
    """One version of a chain restored from an export file, with its validity window as the
    file states it (not stamped from the log time). A chain's versions are appended together,
    in order, under a fresh id; the first carries the chain-level facts."""

    memory_id: str
    version_id: str
    version: int
    container_tag: str
    content: Sealed
    valid_from: int
    valid_to: int | None
    source_memory_id: str
    source_version_id: str | None = None
    embedding: Sealed | None = None
    metadata: Sealed | None = None
    context: Sealed | None = None  # what the memory answers or continues
    is_static: bool = False
    observed_at: str | None = None
    chain: ImportedChain | None = None
    origin: ImportOrigin | None = None
    # On a chain's first version, when the file says the chain was split from a version of
    # another chain of the file that is in the store: that chain and version, in the store.
    split_from_memory_id: str | None = None
    split_from_version_id: str | None = None


class DocumentImported(Event, frozen=True, kw_only=True, tag="document.imported"):
    """The document ingested just before, in the same append, came from an export file."""

    document_id: str
    source_document_id: str
    origin: ImportOrigin | None = None


# The events that make a memory version (its row id in the projections is their seq).
VersionEvent: TypeAlias = (
    MemoryWritten | MemorySuperseded | MemoryEdited | MemoryImported | MemorySplit
)

AnyEvent: TypeAlias = (
    MemoryWritten
    | MemoryDeduplicated
    | MemorySuperseded
    | MemoryLinked
    | MemoryArbitrated
    | MemoryEdited
    | MemoryReverted
    | MemorySplit
    | ChainForgotten
    | ChainRestored
    | SubjectErased
    | ContainerErased
    | RecallPerformed
    | ContextInjected
    | MemoryCaptured
    | ProfileUpdated
    | DocumentIngested
    | DocumentForgotten
    | DocumentRestored
    | EmbedderPinned
    | ReembedStarted
    | VectorsReembedded
    | ReembedCompleted
    | AgentSignal
    | MemoryFlagged
    | AgentKeyAdded
    | AgentKeyRevoked
    | AgentQuarantined
    | AgentReleased
    | AgentRolledBack
    | RollbackUndone
    | ProxyTurn
    | CaptureDecided
    | MemoryImported
    | DocumentImported
    | RecallUsed
)

EVENT_TYPES: tuple[type[Event], ...] = (
    MemoryWritten,
    MemoryDeduplicated,
    MemorySuperseded,
    MemoryLinked,
    MemoryArbitrated,
    MemoryEdited,
    MemoryReverted,
    MemorySplit,
    ChainForgotten,
    ChainRestored,
    SubjectErased,
    ContainerErased,
    RecallPerformed,
    ContextInjected,
    MemoryCaptured,
    ProfileUpdated,
    DocumentIngested,
    DocumentForgotten,
    DocumentRestored,
    EmbedderPinned,
    ReembedStarted,
    VectorsReembedded,
    ReembedCompleted,
    AgentSignal,
    MemoryFlagged,
    AgentKeyAdded,
    AgentKeyRevoked,
    AgentQuarantined,
    AgentReleased,
    AgentRolledBack,
    RollbackUndone,
    ProxyTurn,
    CaptureDecided,
    MemoryImported,
    DocumentImported,
    RecallUsed,
)


def event_tag(event_type: type[Event]) -> str:
    """The wire tag of an event class."""
    tag = event_type.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def current_schema(event_type: type[Event]) -> int:
    """The schema version new events of this class are written with."""
    for field in msgspec.structs.fields(event_type):
        if field.name == "schema":
            assert isinstance(field.default, int)
            return field.default
    raise TypeError(f"{event_type.__name__} has no schema field")
