"""One frozen ``Settings`` object, read once at the edge from ``MNEMOLOG_*`` variables.

Nothing below the command-line and server shells reads the environment: they pass this down.
Every setting is documented in ``docs/settings.md`` (a test keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

from .errors import InvalidInput


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    data_dir: Path = Path("data")
    host: str = "127.0.0.1"
    port: int = 8080
    access_log: bool = False
    log_map_size: int = 64 << 20
    reader_check_seconds: float = 30.0
    embedder: Literal["auto", "quality", "fast"] = "auto"
    embedder_threads: int = 2
    model_cache_dir: Path | None = None
    supersede_threshold: float = 0.85
    max_body_bytes: int = 1 << 20
    snapshot_every: int = 20_000
    upstream_base_url: str | None = None
    upstream_api_key: str | None = None
    upstream_connect_timeout: float = 5.0
    upstream_timeout: float = 300.0
    upstream_idle_timeout: float = 60.0
    proxy_container_tag: str = "default"
    proxy_max_memory_rounds: int = 2
    proxy_recall_limit: int = 5
    proxy_recall_timeout: float = 5.0
    capture: bool = False
    capture_distill: bool = False
    events_heartbeat_seconds: float = 15.0
    stream_chunk_records: int = 256

    @property
    def model_cache(self) -> Path:
        """Where the distilled fast-tier model is cached: shared by every data dir."""
        if self.model_cache_dir is not None:
            return self.model_cache_dir
        return Path.home() / ".cache" / "mnemolog" / "models"


# Field name -> environment variable.
ENV_VARS: dict[str, str] = {
    "data_dir": "MNEMOLOG_DATA_DIR",
    "host": "MNEMOLOG_HOST",
    "port": "MNEMOLOG_PORT",
    "access_log": "MNEMOLOG_ACCESS_LOG",
    "log_map_size": "MNEMOLOG_LOG_MAP_SIZE",
    "reader_check_seconds": "MNEMOLOG_READER_CHECK_SECONDS",
    "embedder": "MNEMOLOG_EMBEDDER",
    "embedder_threads": "MNEMOLOG_EMBEDDER_THREADS",
    "model_cache_dir": "MNEMOLOG_MODEL_CACHE_DIR",
    "supersede_threshold": "MNEMOLOG_SUPERSEDE_THRESHOLD",
    "max_body_bytes": "MNEMOLOG_MAX_BODY_BYTES",
    "snapshot_every": "MNEMOLOG_SNAPSHOT_EVERY",
    "upstream_base_url": "MNEMOLOG_UPSTREAM_BASE_URL",
    "upstream_api_key": "MNEMOLOG_UPSTREAM_API_KEY",
    "upstream_connect_timeout": "MNEMOLOG_UPSTREAM_CONNECT_TIMEOUT",
    "upstream_timeout": "MNEMOLOG_UPSTREAM_TIMEOUT",
    "upstream_idle_timeout": "MNEMOLOG_UPSTREAM_IDLE_TIMEOUT",
    "proxy_container_tag": "MNEMOLOG_PROXY_CONTAINER_TAG",
    "proxy_max_memory_rounds": "MNEMOLOG_PROXY_MAX_MEMORY_ROUNDS",
    "proxy_recall_limit": "MNEMOLOG_PROXY_RECALL_LIMIT",
    "proxy_recall_timeout": "MNEMOLOG_PROXY_RECALL_TIMEOUT",
    "capture": "MNEMOLOG_CAPTURE",
    "capture_distill": "MNEMOLOG_CAPTURE_DISTILL",
    "events_heartbeat_seconds": "MNEMOLOG_EVENTS_HEARTBEAT_SECONDS",
    "stream_chunk_records": "MNEMOLOG_STREAM_CHUNK_RECORDS",
}

# Variables of the seed API accepted as well, when the MNEMOLOG_* one is unset.
ENV_ALIASES: dict[str, str] = {
    "upstream_base_url": "BELLA_UPSTREAM_BASE_URL",
}


def settings_from_env(environ: Mapping[str, str], **overrides: object) -> Settings:
    """Build settings from ``environ``; explicit ``overrides`` (not None) win."""
    raw: dict[str, object] = {
        field: environ[var]
        for field, var in ENV_ALIASES.items()
        if environ.get(var, "") != "" and environ.get(ENV_VARS[field], "") == ""
    }
    raw.update(
        {field: environ[var] for field, var in ENV_VARS.items() if environ.get(var, "") != ""}
    )
    raw.update({k: v for k, v in overrides.items() if v is not None})
    try:
        settings = msgspec.convert(raw, type=Settings, strict=False, dec_hook=_decode_path)
    except msgspec.ValidationError as exc:
        field = str(exc).rpartition("$.")[2].strip("`")
        raise _invalid(field, str(exc)) from exc
    if not 0 < settings.port < 65536:
        raise _invalid("port", f"port {settings.port} is out of range")
    if settings.log_map_size < 1 << 16:
        raise _invalid("log_map_size", "must be at least 65536")
    if settings.reader_check_seconds <= 0:
        raise _invalid("reader_check_seconds", "must be positive")
    if not 1 <= settings.embedder_threads <= 64:
        raise _invalid("embedder_threads", "must be between 1 and 64")
    if not 0.0 < settings.supersede_threshold <= 1.0:
        raise _invalid("supersede_threshold", "must be in (0, 1]")
    if settings.max_body_bytes < 1024:
        raise _invalid("max_body_bytes", "must be at least 1024")
    if settings.snapshot_every < 1:
        raise _invalid("snapshot_every", "must be at least 1")
    if settings.upstream_base_url is not None and not settings.upstream_base_url.startswith(
        ("http://", "https://")
    ):
        raise _invalid("upstream_base_url", "must be an http:// or https:// URL")
    for field in (
        "upstream_connect_timeout",
        "upstream_timeout",
        "upstream_idle_timeout",
        "proxy_recall_timeout",
    ):
        if not getattr(settings, field) > 0:
            raise _invalid(field, "must be positive")
    if not 0 <= settings.proxy_max_memory_rounds <= 10:
        raise _invalid("proxy_max_memory_rounds", "must be between 0 and 10")
    if not 1 <= settings.proxy_recall_limit <= 50:
        raise _invalid("proxy_recall_limit", "must be between 1 and 50")
    if not 1 <= len(settings.proxy_container_tag) <= 256:
        raise _invalid("proxy_container_tag", "must be 1 to 256 characters")
    if not settings.events_heartbeat_seconds > 0:
        raise _invalid("events_heartbeat_seconds", "must be positive")
    if not 1 <= settings.stream_chunk_records <= 10_000:
        raise _invalid("stream_chunk_records", "must be between 1 and 10000")
    return settings


def _invalid(field: str, problem: str) -> InvalidInput:
    var = ENV_VARS.get(field)
    return InvalidInput(f"invalid setting {field}" + (f" ({var})" if var else "") + f": {problem}")


def _decode_path(type_: type, obj: object) -> object:
    if type_ is Path and isinstance(obj, str | Path):
        return Path(obj)
    raise TypeError(f"cannot read {type_.__name__} from {obj!r}")
