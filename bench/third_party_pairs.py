"""Correction pairs and distinct pairs built from text nobody in the project wrote.

The write rule and the ranking of corrections are designed on the project's own labelled pairs
(``tests/data/write_pairs/``) and on the templates of ``factgen.py`` and ``corrections.py``. This
script builds pairs from third-party evaluation data instead, at run time, from where the data
lies: nothing of it is copied into the repository. Every pair is one of

- ``correction``: one subject, an older value and a newer one. ``older`` is the text that gave
  the old value, ``newer`` the text that changed it, ``question`` what a user would then ask,
  and ``answer_text`` is ``newer``;
- ``distinct``: two facts that are both true and look alike. ``answer_text`` is ``both``: with
  one ``question`` both texts answer it together; when ``newer_question`` is set, ``question``
  is the older fact's own question and ``newer_question`` the newer's.

Each pair has ``id``, ``source``, ``licence`` and ``split``: every source is cut in two by a
hash of its item id (the first byte of ``sha256("<source>:<item id>")``, even: ``dev``, odd:
``heldout``), so that a rule can be designed on one half and checked on the other. All pairs of
one item (one question, one conversation's question) fall on the same side.

The sources and how each pair is built:

- ``longmemeval-ku`` (LongMemEval, Wu et al., ICLR 2025; MIT, (c) 2024 Di Wu; the share in
  ``<data>/dev/longmemeval_oracle_dev.json``): every answerable ``knowledge-update`` question
  has two evidence sessions, an older value and a newer one. ``older`` is the user turn marked
  ``has_answer`` in the earlier session, ``newer`` the one in the later session (a question
  whose session holds two such turns, or none, is left out), both verbatim: the user's own
  words, a whole chat turn each. ``question`` is the benchmark's question. These are the
  narrative kind: the new value told in passing, in a turn about something else.
- ``longmemeval-multi`` (the same file and licence): every answerable ``multi-session`` and
  ``temporal-reasoning`` question whose evidence lies in two or more sessions, one user turn
  each, gives a ``distinct`` pair: the turns of its first two evidence sessions in date order,
  and the benchmark's question, which needs both (how many X in total; which came first).
  Knowledge-update questions are not among them.
- ``locomo-singlehop`` (LoCoMo, Maharana et al., ACL 2024; CC BY-NC 4.0, evaluation only; the
  share in ``<data>/dev/locomo10_dev.json``): single-hop questions (category 4) with one
  evidence turn, paired within one conversation: two questions whose evidence turns are
  different turns of the same speaker, the pairs chosen greedily by the highest word overlap
  of the two turns (Jaccard of lowercase words, at least 0.15), each question in one pair at
  most. The texts are the turns as the recipe writes them (``"<speaker>: <text>"``), the
  questions the benchmark's, one for each.
- ``memtrust`` (memtrust-cli 0.3.8; Apache-2.0; ``<data>/correction/memtrust/
  contradiction_cases.json``): seven ``correction`` cases, ``initial_fact`` then
  ``contradicting_fact`` and ``query``. The file marks them synthetic: written by memtrust's
  authors, not by users.
- ``sgd`` (the Schema-Guided Dialogue dataset, Rastogi et al., AAAI 2020; CC BY-SA 4.0; its
  git directory or checkout at ``--sgd``): ``correction`` pairs where the user changes a value
  they had given. In one dialogue and one service, a user turn informs a slot (an ``INFORM``
  act) with a value written in its utterance, and a later user turn informs the same slot with
  another value, also written in its utterance, which the dialogue state then holds in place of
  the first. ``older`` and ``newer`` are the two utterances verbatim; the first change of each
  (dialogue, service, slot) counts, and one pair at most per dialogue, so pairs are independent.
  Left out: an utterance under four words, a yes/no/"dontcare" value or a slot of true/false
  values, and an older utterance that already holds the newer value (outside the older one).
  ``question`` is templated from the schema's description of the slot ("Number of seats to
  reserve at the restaurant" -> "What is the number of seats to reserve at the restaurant?"),
  while both texts are the crowd workers' own words: SGD's utterances are crowd-written
  paraphrases of simulated dialogue outlines, real human wording of structured tasks (booking,
  searching), the change said outright or as a new search. The ``train/`` files are read in
  name order (a file that cannot be read, as in a mirror without its largest files, is passed
  over) until 600 pairs, at most 40 a service, so that many domains appear; the split is by
  dialogue.
- ``beam-ku`` (BEAM, Tavakoli et al. 2025, "Beyond a Million Tokens"; its repository
  mohammadtavakoli78/BEAM states no licence, so: evaluation only, nothing copied; its git
  directory or checkout at ``--beam``): ``correction`` pairs from the ``knowledge_update``
  probing questions of its 100 conversations (``chats/<size>/<n>/probing_questions/
  probing_questions.json``, two a conversation). Each question names in
  ``conversation_references`` the two statements of the conversation's plan that it rests on:
  the first gave a value ("Zotero library now contains 45 sources"), the second changed it ("The
  Zotero library now includes 52 sources"); these are ``older`` and ``newer``, and ``question``
  is the benchmark's own. The statements are the facts the simulated user states in the
  conversation, in the plan's short wording, all of it written by the benchmark's LLM pipeline
  (synthetic, as memtrust's), not the user's chat turns; the plan's label before a statement
  ("Financial & Budget Labels:Budgeting:", "Information Update:": capitalised words and a colon,
  a capital letter after) is dropped, for a user does not say it and "Information Update" would
  tell which text is the newer. Kept only where the data itself shows a change of one value: a
  number of ``older`` that the question's ``potential_confusion`` (what a reader might wrongly
  recall) also names and the ``answer`` does not, and a number of the ``answer`` that ``newer``
  holds and ``older`` does not (the plan sometimes cites, as the original, a statement about
  something else). The split is by conversation.

``<data>`` is ``--data`` (default ``/work/shared/bench-data``); a source whose file is absent is
skipped and said so, as is ``sgd`` when ``--sgd`` is neither a checkout of SGD (with
``train/dialogues_001.json``) nor its git directory (read through ``git show HEAD:...``), and
``beam-ku`` when ``--beam`` is neither a checkout of BEAM (with ``chats/``) nor its git directory.
Prints per source and split how many pairs of each kind it gave, and writes them all as one JSON
list to ``--out`` (default ``/tmp/third_party_pairs.json``: the pairs hold third-party text and
stay outside the repository).

    .venv/bin/python bench/third_party_pairs.py [--data DIR] [--sgd PATH] [--beam PATH]
        [--out FILE] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

DEFAULT_DATA = Path("/work/shared/bench-data")
DEFAULT_OUT = Path("/tmp/third_party_pairs.json")
SPLITS = ("dev", "heldout")
KINDS = ("correction", "distinct")
LME_DATE = "%Y/%m/%d (%a) %H:%M"
LOCOMO_MIN_OVERLAP = 0.15

Kind = Literal["correction", "distinct"]
Answer = Literal["older", "newer", "both"]


@dataclass(frozen=True)
class Pair:
    id: str
    source: str
    licence: str
    split: str
    kind: Kind
    older: str
    newer: str
    question: str
    answer_text: Answer
    newer_question: str | None = None  # a distinct pair's second question, when each has one


def split_of(source: str, item: str) -> str:
    """``dev`` or ``heldout``, fixed by a hash of the item: the same on every run."""
    return SPLITS[hashlib.sha256(f"{source}:{item}".encode()).digest()[0] % 2]


# --- LongMemEval ------------------------------------------------------------------------------

LME_LICENCE = "MIT (LongMemEval, (c) 2024 Di Wu)"


def _lme_questions(data: Path) -> list[dict[str, Any]] | None:
    path = data / "dev" / "longmemeval_oracle_dev.json"
    if not path.exists():
        return None
    questions: list[dict[str, Any]] = json.loads(path.read_text())
    return [q for q in questions if not q["question_id"].endswith("_abs")]


def _evidence_by_session(question: dict[str, Any]) -> list[tuple[datetime, list[str]]]:
    """(date, the user turns marked ``has_answer``) of each evidence session, in date order
    (list order on a tie)."""
    sessions = []
    for date, turns in zip(question["haystack_dates"], question["haystack_sessions"], strict=True):
        said = [t["content"] for t in turns if t["role"] == "user" and t["has_answer"]]
        if said:
            sessions.append((datetime.strptime(date, LME_DATE), said))
    return sorted(sessions, key=lambda s: s[0])


def longmemeval_ku(data: Path) -> list[Pair] | None:
    questions = _lme_questions(data)
    if questions is None:
        return None
    pairs = []
    for q in questions:
        if q["question_type"] != "knowledge-update":
            continue
        sessions = _evidence_by_session(q)
        if len(sessions) != 2 or any(len(said) != 1 for _, said in sessions):
            continue
        (older,), (newer,) = (said for _, said in sessions)
        source = "longmemeval-ku"
        pairs.append(
            Pair(
                f"{source}:{q['question_id']}",
                source,
                LME_LICENCE,
                split_of(source, q["question_id"]),
                "correction",
                older,
                newer,
                q["question"],
                "newer",
            )
        )
    return pairs


def longmemeval_multi(data: Path) -> list[Pair] | None:
    questions = _lme_questions(data)
    if questions is None:
        return None
    pairs = []
    for q in questions:
        if q["question_type"] not in ("multi-session", "temporal-reasoning"):
            continue
        sessions = [said for _, said in _evidence_by_session(q) if len(said) == 1]
        if len(sessions) < 2:
            continue
        (older,), (newer,) = sessions[:2]
        source = "longmemeval-multi"
        pairs.append(
            Pair(
                f"{source}:{q['question_id']}",
                source,
                LME_LICENCE,
                split_of(source, q["question_id"]),
                "distinct",
                older,
                newer,
                q["question"],
                "both",
            )
        )
    return pairs


# --- LoCoMo -----------------------------------------------------------------------------------

LOCOMO_LICENCE = "CC BY-NC 4.0 (LoCoMo, Maharana et al. 2024; evaluation only)"
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")
_WORD = re.compile(r"[a-z0-9']+")


def _locomo_turns(conversation: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """dia_id -> (speaker, text as the recipe writes it)."""
    turns = {}
    for key, session in conversation.items():
        if not re.fullmatch(r"session_\d+", key):
            continue
        for turn in session:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares image: {turn['blip_caption']}]"
            turns[turn["dia_id"]] = (turn["speaker"], text)
    return turns


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def locomo_singlehop(data: Path) -> list[Pair] | None:
    path = data / "dev" / "locomo10_dev.json"
    if not path.exists():
        return None
    source = "locomo-singlehop"
    pairs = []
    for sample in json.loads(path.read_text()):
        turns = _locomo_turns(sample["conversation"])
        asked = []  # (question index, question, dia_id)
        for n, qa in enumerate(sample["qa"]):
            if qa["category"] != 4:
                continue
            ids = [
                f"D{m.group(1)}:{m.group(2)}"
                for e in qa["evidence"]
                for part in re.split(r"[;, ]+", e)
                if (m := _EVIDENCE.fullmatch(part))
            ]
            if len(ids) == 1 and ids[0] in turns:
                asked.append((n, qa["question"], ids[0]))
        words = {dia: _words(turns[dia][1]) for _, _, dia in asked}
        candidates = sorted(
            (
                (_jaccard(words[a[2]], words[b[2]]), i, j)
                for i, a in enumerate(asked)
                for j, b in enumerate(asked)
                if i < j and a[2] != b[2] and turns[a[2]][0] == turns[b[2]][0]
            ),
            reverse=True,
        )
        used: set[int] = set()
        for overlap, i, j in candidates:
            if overlap < LOCOMO_MIN_OVERLAP:
                break
            if i in used or j in used:
                continue
            used |= {i, j}
            (n_a, q_a, d_a), (n_b, q_b, d_b) = asked[i], asked[j]
            item = f"{sample['sample_id']}:q{n_a}:q{n_b}"
            pairs.append(
                Pair(
                    f"{source}:{item}",
                    source,
                    LOCOMO_LICENCE,
                    split_of(source, item),
                    "distinct",
                    turns[d_a][1],
                    turns[d_b][1],
                    q_a,
                    "both",
                    q_b,
                )
            )
    return pairs


# --- memtrust ---------------------------------------------------------------------------------


def memtrust(data: Path) -> list[Pair] | None:
    path = data / "correction" / "memtrust" / "contradiction_cases.json"
    if not path.exists():
        return None
    source = "memtrust"
    return [
        Pair(
            f"{source}:{case['case_id']}",
            source,
            "Apache-2.0 (memtrust-cli 0.3.8; synthetic cases)",
            split_of(source, case["case_id"]),
            "correction",
            case["initial_fact"],
            case["contradicting_fact"],
            case["query"],
            "newer",
        )
        for case in json.loads(path.read_text())["cases"]
    ]


# --- Schema-Guided Dialogue -------------------------------------------------------------------

SGD_LICENCE = "CC BY-SA 4.0 (Schema-Guided Dialogue, Rastogi et al. 2020)"
DEFAULT_SGD = Path("/work/.mirror/google-research-datasets+dstc8-schema-guided-dialogue/repo")
SGD_PAIRS = 600
SGD_PER_SERVICE = 40
SGD_MIN_WORDS = 4
_SGD_NOT_A_VALUE = {"true", "false", "yes", "no", "dontcare"}


def _sgd_read(root: Path, name: str) -> str | None:
    """The text of ``name`` (``train/schema.json``, say) in a checkout of SGD, or in its git
    directory at ``HEAD``; None when it cannot be read (a mirror may lack its largest files)."""
    if (root / "train" / "dialogues_001.json").exists():
        path = root / name
        return path.read_text() if path.exists() else None
    shown = _git(root, "show", f"HEAD:{name}")
    return shown.decode() if shown is not None else None


def _git(root: Path, *args: str) -> bytes | None:
    """The output of ``git --git-dir=root args``; None when git or the directory fails."""
    try:
        done = subprocess.run(["git", f"--git-dir={root}", *args], capture_output=True, check=False)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def _sgd_dialogue_files(root: Path) -> list[str]:
    """``train/dialogues_NNN.json`` in name order, read from the checkout or the git tree."""
    if (root / "train" / "dialogues_001.json").exists():
        return sorted(f"train/{p.name}" for p in (root / "train").glob("dialogues_*.json"))
    listed = _git(root, "ls-tree", "--name-only", "HEAD", "train/")
    names = listed.decode().split() if listed is not None else []
    return sorted(n for n in names if re.fullmatch(r"train/dialogues_\d+\.json", n))


def sgd_question(description: str) -> str:
    """A schema's slot description as the question a user asks about the request: "Number of
    seats to reserve at the restaurant" -> "What is the number of seats to reserve at the
    restaurant?" (the first letter lower-cased unless the first word is an acronym, a trailing
    period and a leading "The" dropped)."""
    text = description.strip().rstrip(".").strip()
    first, _, rest = text.partition(" ")
    if not (len(first) > 1 and first.isupper()):
        first = first[:1].lower() + first[1:]
    text = f"{first} {rest}".rstrip()
    text = text.removeprefix("the ")
    return f"What is the {text}?"


def _said(value: str, utterance: str) -> bool:
    """``value`` in ``utterance`` word for word, case aside."""
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", utterance, re.IGNORECASE) is not None


def _sgd_informed(
    turn: dict[str, Any], slots: dict[str, dict[str, Any]]
) -> Iterator[tuple[str, str, str]]:
    """(service, slot, value) the user informs in ``turn``, each value in its utterance, none
    a yes/no or "dontcare" nor of a true/false slot."""
    for frame in turn["frames"]:
        service = slots.get(frame["service"], {})
        for action in frame["actions"]:
            if action["act"] != "INFORM" or action["slot"] not in service:
                continue
            slot = service[action["slot"]]
            if {v.lower() for v in slot["possible_values"]} & {"true", "false"}:
                continue
            for value in action["values"]:
                if value.lower() not in _SGD_NOT_A_VALUE and _said(value, turn["utterance"]):
                    yield frame["service"], action["slot"], value
                    break


def _sgd_state(turn: dict[str, Any], service: str, slot: str) -> set[str]:
    """The values the dialogue state holds for ``slot`` after ``turn``, lower-cased."""
    for frame in turn["frames"]:
        if frame["service"] == service:
            return {v.lower() for v in frame.get("state", {}).get("slot_values", {}).get(slot, [])}
    return set()


def _sgd_change(
    dialogue: dict[str, Any], slots: dict[str, dict[str, Any]], full: set[str]
) -> tuple[str, str, str, str, str] | None:
    """(service, slot, older, newer, description) of the first change of a value by the user in
    ``dialogue``, in a service not in ``full``: the first of each (service, slot), and only one
    whose texts are long enough and whose older text does not already hold the newer value (outside
    the older value: "Premium Economy" does not hold "Economy")."""
    said: dict[tuple[str, str], tuple[str, str]] = {}  # (service, slot) -> (value, utterance)
    changed: set[tuple[str, str]] = set()
    for turn in dialogue["turns"]:
        if turn["speaker"] != "USER":
            continue
        for service, slot, value in _sgd_informed(turn, slots):
            key = (service, slot)
            if key in changed:
                continue
            if key not in said:
                said[key] = (value, turn["utterance"])
                continue
            old, older = said[key]
            if value.lower() == old.lower():
                continue
            state = _sgd_state(turn, service, slot)
            if value.lower() not in state or old.lower() in state:
                continue
            changed.add(key)
            newer = turn["utterance"]
            if (
                service in full
                or min(len(older.split()), len(newer.split())) < SGD_MIN_WORDS
                or _said(value, re.sub(re.escape(old), " ", older, flags=re.IGNORECASE))
            ):
                continue
            return service, slot, older, newer, slots[service][slot]["description"]
    return None


def _sgd_pairs(
    root: Path,
    found_in: Callable[[dict[str, Any], dict[str, dict[str, Any]], set[str]], Any],
    pair_of: Callable[[str, Any], Pair],
) -> list[Pair] | None:
    """At most ``SGD_PAIRS`` pairs from the ``train/`` dialogues of SGD at ``root``, one a
    dialogue at most and ``SGD_PER_SERVICE`` a service: ``found_in(dialogue, slots, full)``
    gives a dialogue's find (its service first) or None, ``pair_of(dialogue id, find)`` the
    pair."""
    schema = _sgd_read(root, "train/schema.json")
    if schema is None:
        return None
    slots = {s["service_name"]: {x["name"]: x for x in s["slots"]} for s in json.loads(schema)}
    pairs: list[Pair] = []
    per_service: Counter[str] = Counter()
    for name in _sgd_dialogue_files(root):
        text = _sgd_read(root, name) if len(pairs) < SGD_PAIRS else None
        for dialogue in json.loads(text) if text is not None else []:
            full = {s for s, n in per_service.items() if n >= SGD_PER_SERVICE}
            found = found_in(dialogue, slots, full)
            if found is None:
                continue
            per_service[found[0]] += 1
            pairs.append(pair_of(dialogue["dialogue_id"], found))
            if len(pairs) >= SGD_PAIRS:
                break
    return pairs or None


def sgd(data: Path, root: Path = DEFAULT_SGD) -> list[Pair] | None:
    """``root``: SGD's checkout or git directory (``--sgd``); ``data`` is not read."""
    source = "sgd"

    def pair_of(item: str, change: tuple[str, str, str, str, str]) -> Pair:
        service, slot, older, newer, description = change
        return Pair(
            f"{source}:{item}:{service}:{slot}",
            source,
            SGD_LICENCE,
            split_of(source, item),
            "correction",
            older,
            newer,
            sgd_question(description),
            "newer",
        )

    return _sgd_pairs(root, _sgd_change, pair_of)


def _sgd_in_a_row(
    dialogue: dict[str, Any], slots: dict[str, dict[str, Any]], full: set[str]
) -> tuple[str, str, str, str, str, str] | None:
    """(service, older, newer, slot, its description, the newer's slot's description) of the
    first two user turns in a row of ``dialogue`` (no user turn between them), in one service
    not in ``full``, where the first informs a slot that the second leaves alone (the state
    after it still holds that value) and the second informs another slot, which the first did
    not: two values of two things said one after the other, neither correcting the other."""
    previous: tuple[dict[str, Any], dict[tuple[str, str], str]] | None = None
    for turn in dialogue["turns"]:
        if turn["speaker"] != "USER":
            continue
        informed = {(sv, sl): v for sv, sl, v in _sgd_informed(turn, slots)}
        if previous is not None:
            before, said_before = previous
            for (service, slot), value in said_before.items():
                if service in full or (service, slot) in informed:
                    continue
                if value.lower() not in _sgd_state(turn, service, slot):
                    continue
                others = [
                    sl for (sv, sl) in informed if sv == service and (sv, sl) not in said_before
                ]
                older, newer = before["utterance"], turn["utterance"]
                if not others or min(len(older.split()), len(newer.split())) < SGD_MIN_WORDS:
                    continue
                other = others[0]
                if _said(informed[(service, other)], older) or _said(value, newer):
                    continue
                described = slots[service]
                return (
                    service,
                    older,
                    newer,
                    slot,
                    described[slot]["description"],
                    described[other]["description"],
                )
        previous = (turn, informed)
    return None


def sgd_distinct(data: Path, root: Path = DEFAULT_SGD) -> list[Pair] | None:
    """``root``: SGD's checkout or git directory (``--sgd``); ``data`` is not read."""
    source = "sgd-distinct"

    def pair_of(item: str, found: tuple[str, str, str, str, str, str]) -> Pair:
        service, older, newer, slot, asked, asked_newer = found
        return Pair(
            f"{source}:{item}:{service}:{slot}",
            source,
            SGD_LICENCE,
            split_of(source, item),
            "distinct",
            older,
            newer,
            sgd_question(asked),
            "both",
            sgd_question(asked_newer),
        )

    return _sgd_pairs(root, _sgd_in_a_row, pair_of)


# --- BEAM -------------------------------------------------------------------------------------

BEAM_LICENCE = (
    "unstated (BEAM, Tavakoli et al. 2025; no licence in its repository; evaluation only)"
)
DEFAULT_BEAM = Path("/work/.mirror/mohammadtavakoli78+BEAM/repo")
_BEAM_QUESTIONS = re.compile(r"chats/([^/]+)/([^/]+)/probing_questions/probing_questions\.json")
_LABEL_WORD = r"(?:[A-Z][\w'\u2019/-]*|&|and|of|to|the|for|in)"
_BEAM_LABEL = re.compile(rf"^[\W_]*(?:{_LABEL_WORD}(?:\s+{_LABEL_WORD}){{0,6}}\s*:\s*(?=[A-Z]))+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _beam_read(root: Path, name: str) -> str | None:
    """The text of ``name`` in a checkout of BEAM, or in its git directory at ``HEAD``; None when
    it cannot be read."""
    if (root / "chats").is_dir():
        path = root / name
        return path.read_text() if path.exists() else None
    shown = _git(root, "show", f"HEAD:{name}")
    return shown.decode() if shown is not None else None


def _beam_question_files(root: Path) -> list[str]:
    """Every conversation's ``probing_questions.json``, in name order."""
    if (root / "chats").is_dir():
        names = [p.relative_to(root).as_posix() for p in root.glob("chats/**/*.json")]
    else:
        listed = _git(root, "ls-tree", "-r", "--name-only", "HEAD", "chats/")
        names = listed.decode().split() if listed is not None else []
    return sorted(n for n in names if _BEAM_QUESTIONS.fullmatch(n))


def beam_statement(reference: str) -> str:
    """A statement of BEAM's plan without its labels: "Financial & Budget Labels:Budgeting:
    Allocated $5,000 ..." -> "Allocated $5,000 ...", "Information Update: The ..." -> "The ..."."""
    return _BEAM_LABEL.sub("", reference).strip()


def _numbers(text: str) -> set[str]:
    """The numbers written in ``text``, thousands separators dropped ("1,200" -> "1200")."""
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def beam_change(older: str, newer: str, confusion: str, answer: str) -> bool:
    """Whether the two statements change one value, as the question's own fields tell: a stale
    number (in ``older``, named in ``confusion``, not in ``answer``) and a current one (in
    ``answer`` and ``newer``, not in ``older``)."""
    stale = _numbers(older) & _numbers(confusion) - _numbers(answer)
    current = _numbers(answer) & _numbers(newer) - _numbers(older)
    return bool(stale and current) and older != newer


def beam_ku(data: Path, root: Path = DEFAULT_BEAM) -> list[Pair] | None:
    """``root``: BEAM's checkout or git directory (``--beam``); ``data`` is not read."""
    source = "beam-ku"
    pairs: list[Pair] = []
    for name in _beam_question_files(root):
        text = _beam_read(root, name)
        match = _BEAM_QUESTIONS.fullmatch(name)
        if text is None or match is None:
            continue
        item = "/".join(match.groups())
        for n, question in enumerate(json.loads(text).get("knowledge_update", [])):
            references = question.get("conversation_references") or []
            if len(references) != 2:
                continue
            older, newer = (beam_statement(r) for r in references)
            confusion = question.get("potential_confusion") or ""
            if not beam_change(older, newer, confusion, question["answer"]):
                continue
            pairs.append(
                Pair(
                    f"{source}:{item}:ku{n}",
                    source,
                    BEAM_LICENCE,
                    split_of(source, item),
                    "correction",
                    older,
                    newer,
                    question["question"],
                    "newer",
                )
            )
    return pairs or None


# --- all of them ------------------------------------------------------------------------------

SOURCES: dict[str, Callable[[Path], list[Pair] | None]] = {
    "longmemeval-ku": longmemeval_ku,
    "longmemeval-multi": longmemeval_multi,
    "locomo-singlehop": locomo_singlehop,
    "memtrust": memtrust,
    "sgd": sgd,
    "sgd-distinct": sgd_distinct,
    "beam-ku": beam_ku,
}


def build(
    data: Path, sources: Mapping[str, Callable[[Path], list[Pair] | None]] = SOURCES
) -> tuple[list[Pair], list[str]]:
    """Every pair of every source found, and the sources that were not."""
    pairs: list[Pair] = []
    missing = []
    for name, make in sources.items():
        made = make(data)
        if made is None:
            missing.append(name)
        else:
            pairs += made
    ids = Counter(p.id for p in pairs)
    if doubles := [i for i, n in ids.items() if n > 1]:
        raise ValueError(f"pair ids made twice: {doubles[:5]}")
    return pairs, missing


def counts(pairs: list[Pair]) -> dict[str, dict[str, int]]:
    """source -> "<kind> <split>" -> pairs."""
    out: dict[str, dict[str, int]] = {}
    for p in pairs:
        row = out.setdefault(p.source, {f"{k} {s}": 0 for k in KINDS for s in SPLITS})
        row[f"{p.kind} {p.split}"] += 1
    return out


def render(table: dict[str, dict[str, int]], missing: list[str], out: Path) -> Iterator[str]:
    columns = [f"{k} {s}" for k in KINDS for s in SPLITS]
    yield f"{'source':<20}" + "".join(f"{c:>20}" for c in columns)
    for source, row in table.items():
        yield f"{source:<20}" + "".join(f"{row[c]:>20}" for c in columns)
    yield f"{'all':<20}" + "".join(f"{sum(r[c] for r in table.values()):>20}" for c in columns)
    for name in missing:
        yield f"{name}: its data was not found, skipped"
    yield f"written to {out}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the bench-data folder")
    parser.add_argument("--sgd", type=Path, default=DEFAULT_SGD, help="SGD's checkout or git dir")
    parser.add_argument(
        "--beam", type=Path, default=DEFAULT_BEAM, help="BEAM's checkout or git dir"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the JSON file written")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    sources: dict[str, Callable[[Path], list[Pair] | None]] = {
        **SOURCES,
        "sgd": partial(sgd, root=args.sgd),
        "sgd-distinct": partial(sgd_distinct, root=args.sgd),
        "beam-ku": partial(beam_ku, root=args.beam),
    }
    pairs, missing = build(args.data, sources)
    args.out.write_text(json.dumps([asdict(p) for p in pairs], indent=1, ensure_ascii=False))
    table = counts(pairs)
    if args.json:
        print(json.dumps({"counts": table, "missing": missing, "out": str(args.out)}, indent=2))
    else:
        print("\n".join(render(table, missing, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
