"""Local embedding tiers: text in, unit vectors out, with no network at run time.

- ``quality``: e5-small-v2 int8 on onnxruntime, 384-d (``quality.py``, ``encoders.py``).
- ``fast``: static token vectors distilled from an encoder, 256-d, via model2vec
  (``static.py``).
- the reranker: the ms-marco-MiniLM-L-12-v2 int8 cross-encoder (``rerank.py``).

``open_embedder`` picks and opens a tier; ``check_pin`` keeps a data dir on one embedder.
"""

from .encoders import E5_SMALL, ENCODERS, MINILM_L6, EncoderSpec
from .identity import EmbedderIdentity
from .pinning import check_pin
from .port import Embedder, embed_bytes, embed_rows_bytes, from_bytes
from .quality import MODEL_SHA256, QUALITY_DIMENSION, QUALITY_NAME, QualityEmbedder
from .rerank import (
    RERANKER_NAME,
    RERANKER_SHA256,
    CrossEncoder,
    Reranker,
    installed_reranker,
    reranker_dir,
    reranker_folder,
)
from .select import (
    FAST_BASE,
    QUALITY_MIN_AVAILABLE,
    QUALITY_SPEC,
    TIERS,
    RequestedTier,
    Tier,
    available_memory,
    choose_tier,
    known_embedders,
    open_embedder,
    open_for_store,
    open_identity,
    tier_identity,
)
from .static import StaticEmbedder, load_or_build_static, static_identity, static_name
from .vocab import vocab_dir

__all__ = [
    "E5_SMALL",
    "ENCODERS",
    "FAST_BASE",
    "MINILM_L6",
    "MODEL_SHA256",
    "QUALITY_DIMENSION",
    "QUALITY_MIN_AVAILABLE",
    "QUALITY_NAME",
    "QUALITY_SPEC",
    "RERANKER_NAME",
    "RERANKER_SHA256",
    "TIERS",
    "CrossEncoder",
    "Embedder",
    "EmbedderIdentity",
    "EncoderSpec",
    "QualityEmbedder",
    "RequestedTier",
    "Reranker",
    "StaticEmbedder",
    "Tier",
    "available_memory",
    "check_pin",
    "choose_tier",
    "embed_bytes",
    "embed_rows_bytes",
    "from_bytes",
    "installed_reranker",
    "known_embedders",
    "load_or_build_static",
    "open_embedder",
    "open_for_store",
    "open_identity",
    "reranker_dir",
    "reranker_folder",
    "static_identity",
    "static_name",
    "tier_identity",
    "vocab_dir",
]
