"""Local embedding tiers: text in, unit vectors out, with no network at run time.

- ``quality``: all-MiniLM-L6-v2 int8 on onnxruntime, 384-d (``quality.py``).
- ``fast``: static token vectors distilled from it, 256-d, via model2vec (``static.py``).
- the reranker: the ms-marco-MiniLM-L-12-v2 int8 cross-encoder (``rerank.py``).

``open_embedder`` picks and opens a tier; ``check_pin`` keeps a data dir on one embedder.
"""

from .identity import EmbedderIdentity
from .pinning import check_pin
from .port import Embedder, embed_bytes, from_bytes
from .quality import MODEL_SHA256, QUALITY_DIMENSION, QUALITY_NAME, QualityEmbedder
from .rerank import (
    RERANKER_NAME,
    RERANKER_SHA256,
    CrossEncoder,
    Reranker,
    reranker_dir,
)
from .select import (
    QUALITY_MIN_AVAILABLE,
    TIERS,
    RequestedTier,
    Tier,
    available_memory,
    choose_tier,
    open_embedder,
)
from .static import STATIC_NAME, StaticEmbedder, load_or_build_static, static_identity
from .vocab import vocab_dir

__all__ = [
    "MODEL_SHA256",
    "QUALITY_DIMENSION",
    "QUALITY_MIN_AVAILABLE",
    "QUALITY_NAME",
    "RERANKER_NAME",
    "RERANKER_SHA256",
    "STATIC_NAME",
    "TIERS",
    "CrossEncoder",
    "Embedder",
    "EmbedderIdentity",
    "QualityEmbedder",
    "RequestedTier",
    "Reranker",
    "StaticEmbedder",
    "Tier",
    "available_memory",
    "check_pin",
    "choose_tier",
    "embed_bytes",
    "from_bytes",
    "load_or_build_static",
    "open_embedder",
    "reranker_dir",
    "static_identity",
    "vocab_dir",
]
