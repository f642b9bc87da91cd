"""Corrections told seconds after what they correct, in one conversation, over a real server:
however the change is worded, recall serves the newer statement first at every limit, and the
older one stays stored and served below it (a read-time order, nothing hidden)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from .test_unseen_shapes import (  # noqa: F401 (the fixtures are used by name)
    FILLERS,
    LIMITS,
    fresh_tag,
    live_ids,
    position,
    search,
    servers,
    tiered,
    write,
    write_fillers,
)

# (name, older, newer, question): a fact, then the user's correction of it a few seconds later,
# in the shapes corrections take when nobody chose the words for a rule.
SAID_AGAIN = [
    (
        # The new value is the only rare word; the sentence tells a story.
        "story",
        "I go to the gym three times a week.",
        "My knee gave out at the gym, so these days I swim at the lido instead.",
        "Where do I go to exercise?",
    ),
    (
        # The old value is named inside the correction, as the thing that is gone.
        "old-value-inside",
        "Our team tracks its tickets in Jira.",
        "We moved our tickets over to Linear, Jira is gone now.",
        "Where does our team track its tickets?",
    ),
    (
        # One sentence denies the older value and gives the right one.
        "negate-and-replace",
        "I live in Boston.",
        "I don't live in Boston anymore, I live in Denver.",
        "Where do I live?",
    ),
    (
        # Something given up and something else taken instead, the reason in the same breath.
        "given-up",
        "I drink two cups of coffee every morning.",
        "I gave up coffee in the morning and drink green tea because of my stomach.",
        "What do I drink in the morning?",
    ),
    (
        # A service switched, no word of change the write rules know.
        "switched",
        "My phone plan is with Verizon.",
        "My phone plan is with T-Mobile since it came out cheaper.",
        "Who is my phone plan with?",
    ),
    (
        # An amount raised.
        "raised",
        "My monthly rent is 1,800 dollars.",
        "The landlord raised my monthly rent to 1,950 dollars.",
        "How much is my monthly rent?",
    ),
    (
        # A reply that changes the value and shares no word with the question.
        "elliptic-reply",
        "Please book a table for four at Nopa on Friday evening.",
        "No, make it Saturday instead.",
        "Which day is the dinner reservation for?",
    ),
    (
        # A new amount told in passing, nearer the older fact than the question: the question's
        # words ("people", "cab") are the older one's.
        "new-amount-in-passing",
        "Book a cab for two people to 14 Harbour Road at six.",
        "Actually we'll be four, my parents are joining us.",
        "How many people is the cab for?",
    ),
    (
        # Another place, the question's thing left unsaid.
        "another-place",
        "Can you find me a dentist in Oakland? I need a filling.",
        "Hmm, let's look around Berkeley instead.",
        "In which city am I looking for a dentist?",
    ),
]


# Known short of the goal: (tier, case). The story shares no word with the question ("where
# do I go to exercise?": no "go", no "exercise"); on the fast tier the question finds it about
# as close in meaning as the fact it corrects, and it comes first, but e5 puts it at a cosine of
# 0.745 from that fact, under its floor of 0.80, so the two are not read as one thing. The
# elliptic reply shares no word with the question either, and e5 finds it at 0.768 from the
# question, under the same floor: it is not served on meaning at all, and nor is the new
# amount told in passing (0.72 from "how many people is the cab for?"). Each must fail until
# fixed; one that passes must leave this set.
#
# The new amount and the other place are short on both tiers and on one: the question finds
# them far less close than what they correct ("how many people is the cab for?": 0.44 against
# 0.63 on the fast tier; e5 does not serve the amount at all, 0.72 under its floor), and the
# two texts are not related in meaning (0.31 and 0.77, under each floor), so nothing the ranking
# reads tells them from a fact of another thing said next. Rules that moved them up moved
# 109 of 600 such facts said in a row above the one asked of (bench/README.md, third-party
# corrections), so they stay short until a rule tells the two apart.
KNOWN_SHORT = {
    ("quality", "story"),
    ("quality", "elliptic-reply"),
    ("fast", "new-amount-in-passing"),
    ("quality", "new-amount-in-passing"),
    ("quality", "another-place"),
}


@pytest.mark.parametrize(
    ("older", "newer", "question"),
    [case[1:] for case in SAID_AGAIN],
    ids=[case[0] for case in SAID_AGAIN],
)
def test_a_correction_said_seconds_later_ranks_newer_first(
    request: pytest.FixtureRequest,
    tiered: httpx.Client,  # noqa: F811
    older: str,
    newer: str,
    question: str,
) -> None:
    """Two statements that answer the question alike, close in meaning, the second said
    seconds after the first: the second is the one to believe, served above the first at
    every limit; both stay stored."""
    holds_unless_short(
        request, KNOWN_SHORT, newer_first_at_every_limit, tiered, older, newer, question
    )


def holds_unless_short(
    request: pytest.FixtureRequest,
    short: set[tuple[str, str]],
    check: Callable[[httpx.Client, str, str, str], None],
    client: httpx.Client,
    *texts: str,
) -> None:
    """``check`` passes, or, for a (tier, case) in ``short``, fails: a case fixed must leave
    the set."""
    case = request.node.callspec.id.split("-", 1)[1]
    if (request.node.callspec.params["tiered"], case) in short:
        with pytest.raises(AssertionError):
            check(client, *texts)
        return
    check(client, *texts)


def newer_first_at_every_limit(client: httpx.Client, older: str, newer: str, question: str) -> None:
    tag = fresh_tag("said-again")
    write_fillers(client, tag)
    old = write(client, tag, older)
    new = write(client, tag, newer)
    assert {old["id"], new["id"]} <= live_ids(client, tag)
    for limit in LIMITS:
        hits = search(client, tag, question, limit)
        where = (limit, [h["content"] for h in hits])
        newer_at = position(hits, newer)
        assert newer_at is not None, where
        older_at = position(hits, older)
        if older_at is not None:
            assert newer_at < older_at, where


def test_statements_of_one_conversation_that_do_not_correct_keep_their_order(
    tiered: httpx.Client,  # noqa: F811
) -> None:
    """Two things said in one conversation that share a subject but are both true stay in
    the order their relevance gives: the one the question names first, said first."""
    tag = fresh_tag("both-true")
    write_fillers(tiered, tag, FILLERS)
    first = "My sister Ana lives in Madrid and teaches maths."
    second = "My brother Luis lives in Seville and builds boats."
    write(tiered, tag, first)
    write(tiered, tag, second)
    for limit in LIMITS:
        hits = search(tiered, tag, "Where does my sister Ana live?", limit)
        assert position(hits, first) == 1, (limit, [h["content"] for h in hits])


def test_facts_of_one_shape_said_in_a_row_each_come_first_for_their_own_question(
    tiered: httpx.Client,  # noqa: F811
) -> None:
    """Several facts of one shape told one after another, each about its own thing, are not
    corrections of each other: the question that names one thing is answered by its fact
    first, though the others are newer, alike in meaning and answer it about as closely."""
    tag = fresh_tag("one-shape")
    write_fillers(tiered, tag, FILLERS)
    pets = [
        ("Sven's rabbit is called Flinond and sleeps in the hallway.", "Flinond"),
        ("Yusuf's goldfish is called Hetojar and sleeps in the garden.", "Hetojar"),
        ("Priya's tortoise is called Brushind and sleeps in the kitchen.", "Brushind"),
    ]
    for text, _ in pets:
        write(tiered, tag, text)
    write(tiered, tag, "Ben Florir is a product manager on the search team.")
    for text, name in pets:
        for limit in LIMITS:
            hits = search(tiered, tag, f"Who owns the pet called {name}?", limit)
            assert position(hits, text) == 1, (name, limit, [h["content"] for h in hits])


# (name, first, second, question about the first): two facts of two things said one after the
# other, each with a value of its own, the question asking of the first. Neither corrects the
# other, so the first must come first.
SAID_IN_A_ROW = [
    (
        "born-then-moved",
        "I was born in 1990.",
        "I moved to Berlin in 2015.",
        "What year was I born?",
    ),
    (
        "cats-then-work",
        "I have two cats.",
        "I work 40 hours a week at the bakery.",
        "How many cats do I have?",
    ),
    (
        "hotel-then-flight",
        "We booked the hotel in Rome for three nights.",
        "Our flight leaves Tuesday at 9am.",
        "How many nights is the hotel booked for?",
    ),
    (
        "gym-then-music",
        "My gym membership costs 45 dollars a month.",
        "I also pay 12 dollars for Spotify.",
        "How much is my gym membership?",
    ),
    (
        "flight-then-party",
        "I'm flying to Denver on the 12th.",
        "There will be three of us, all in economy.",
        "When is my flight to Denver?",
    ),
    (
        "daughter-then-son",
        "My daughter Mia is 7 years old.",
        "My son Leo started school in September.",
        "How old is my daughter?",
    ),
]
# The son's fact is found as close to "how old is my daughter?" as the daughter's, and the
# question names neither Mia nor Leo: the newer comes first. The same rule that serves a
# correction first whatever its words ("answers alike", docs/recall.md step 9) does this to
# facts said in a row; measured on 600 such pairs of real dialogues (bench/README.md).
SAID_IN_A_ROW_SHORT = {("fast", "daughter-then-son")}


@pytest.mark.parametrize(
    ("first", "second", "question"),
    [case[1:] for case in SAID_IN_A_ROW],
    ids=[case[0] for case in SAID_IN_A_ROW],
)
def test_a_fact_of_another_thing_said_next_stays_below_the_one_asked_of(
    request: pytest.FixtureRequest,
    tiered: httpx.Client,  # noqa: F811
    first: str,
    second: str,
    question: str,
) -> None:
    """A value of another thing, said right after, is no new value of the first: the
    question about the first is answered by it first, at every limit."""
    holds_unless_short(
        request, SAID_IN_A_ROW_SHORT, first_at_every_limit, tiered, first, second, question
    )


def first_at_every_limit(client: httpx.Client, first: str, second: str, question: str) -> None:
    tag = fresh_tag("in-a-row")
    write_fillers(client, tag)
    write(client, tag, first)
    write(client, tag, second)
    for limit in LIMITS:
        hits = search(client, tag, question, limit)
        assert position(hits, first) == 1, (limit, [h["content"] for h in hits])
