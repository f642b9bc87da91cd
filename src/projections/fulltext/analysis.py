"""Text analysis: how text and queries are split into the terms the full-text index holds.

The analyzers are tantivy objects, but nothing here opens an index, so words can be split
(``plain_words``) without the index adapter.
"""

from __future__ import annotations

import tantivy

__all__ = [
    "ANALYZER",
    "MAX_QUERY_TERMS",
    "MAX_TOKEN_BYTES",
    "QUESTION_WORDS",
    "TOKENIZER",
    "clean",
    "index_terms",
    "plain_words",
    "query_terms",
]

MAX_QUERY_TERMS = 256  # distinct terms of a query used; the rest are ignored
MAX_TOKEN_BYTES = 40  # tantivy's default tokenizer drops longer tokens

TOKENIZER = "mnemolog_en"  # the text field's analyzer (``ANALYZER``)


def _words_analyzer(*filters: tantivy.Filter) -> tantivy.TextAnalyzer:
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
        .filter(tantivy.Filter.lowercase())
    )
    for extra in filters:
        builder = builder.filter(extra)
    return builder.build()


# The text field's analyzer, registered on every index the full-text index opens, so query
# terms and tail terms are exactly the terms tantivy indexed. tantivy's "default" pipeline, then
# Lucene's English stop words and the Snowball English stemmer: "researching" finds "research",
# and "the" or "is" no longer add their small idf to every document. On bench/retrieval.py (fast
# tier) recall_all@5 rose from 0.445 to 0.457 on LoCoMo and from 0.669 to 0.690 on
# LongMemEval turns.
ANALYZER = _words_analyzer(tantivy.Filter.stopword("english"), tantivy.Filter.stemmer("english"))
# Words that make a sentence a question (interrogatives, auxiliary and modal verbs) but say
# nothing of what it is about. Queries to a memory are mostly questions: searched for, these
# words ranked other questions first ("How did you get Luna?" above "I bought it a year ago in
# Paris"). They are dropped from queries only; stored text keeps them. Fast tier, ranked
# offline on the candidates the bench/retrieval.py stores returned: recall_all@5 0.457 -> 0.475
# on LoCoMo, 0.690 -> 0.716 on LongMemEval turns.
QUESTION_WORDS = (
    *("what", "when", "where", "who", "whom", "whose", "which", "why", "how"),
    *("do", "does", "did", "have", "has", "had"),
    # Not "may": it is also a month, and a memory's date is often what a question is about.
    *("can", "could", "would", "should", "will", "shall", "might", "must"),
)
_QUERY_ANALYZER = _words_analyzer(
    tantivy.Filter.stopword("english"),
    tantivy.Filter.custom_stopword(list(QUESTION_WORDS)),
    tantivy.Filter.stemmer("english"),
)
# Words as written (lowercased), for comparing two texts word by word.
_PLAIN = _words_analyzer()


def clean(text: str) -> str:
    """``text`` as valid UTF-8: lone surrogates cannot cross into tantivy."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def plain_words(text: str) -> frozenset[str]:
    """The distinct words of ``text``, lowercased, stop words kept and nothing stemmed."""
    return frozenset(_PLAIN.analyze(clean(text)))


def index_terms(text: str) -> list[str]:
    """The terms of ``text`` as the text field indexes them (stop words out, stemmed), in
    order."""
    return list(ANALYZER.analyze(clean(text)))


def query_terms(query: str) -> list[str]:
    """The distinct terms of ``query`` as tantivy indexes them, question words left out, in
    order, at most 256.

    Queries are built from these terms, never parsed, so no query text can be a syntax error.
    """
    return list(dict.fromkeys(_QUERY_ANALYZER.analyze(clean(query))))[:MAX_QUERY_TERMS]
