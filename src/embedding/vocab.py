"""The WordPiece vocabulary of all-MiniLM-L6-v2, shipped as package data, and its tokenizer.

``data/minilm-vocab/`` holds ``vocab.txt`` with the Apache-2.0 ``LICENSE`` and ``NOTICE`` of
the model it comes from; the three travel together. The vocabulary is read through
``importlib.resources``, so it is found wherever the package is installed.
"""

from __future__ import annotations

import hashlib
from importlib import resources
from importlib.resources.abc import Traversable

from tokenizers import Tokenizer, decoders
from tokenizers.models import WordPiece
from tokenizers.normalizers import BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer
from tokenizers.processors import BertProcessing

from ..errors import EmbedderError
from .encoders import EncoderSpec

VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
VOCAB_SIZE = 30_522
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

_PACKAGE = __name__.rpartition(".")[0]


def vocab_dir() -> Traversable:
    """The folder holding ``vocab.txt``, ``LICENSE`` and ``NOTICE``."""
    return resources.files(_PACKAGE) / "data" / "minilm-vocab"


def notice_of(spec: EncoderSpec) -> Traversable:
    """The licence notice of an encoder, shipped in ``data/``."""
    return resources.files(_PACKAGE) / "data" / spec.notice


def load_vocab() -> dict[str, int]:
    """Token -> id, after checking the file is the pinned vocabulary."""
    raw = (vocab_dir() / "vocab.txt").read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != VOCAB_SHA256:
        raise EmbedderError(
            f"the bundled vocabulary has sha256 {digest}, expected {VOCAB_SHA256}: "
            "reinstall mnemolog"
        )
    tokens = raw.decode("utf-8").splitlines()
    return {token: i for i, token in enumerate(tokens)}


def bert_tokenizer(vocab: dict[str, int]) -> Tokenizer:
    """BERT uncased WordPiece: clean text, split CJK, lower-case, strip accents.

    This is what ``tokenizers.BertWordPieceTokenizer(vocab, lowercase=True)`` builds, and it
    gives the same ids as the model's own ``tokenizer.json``. Encoding with special tokens
    wraps the text in ``[CLS] ... [SEP]``. No truncation or padding is set here.
    """
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer.normalizer = BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = BertPreTokenizer()
    tokenizer.post_processor = BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    return tokenizer
