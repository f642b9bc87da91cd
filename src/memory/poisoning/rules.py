"""Whether a memory's text carries instructions aimed at the agents that will later read it
(memory poisoning, OWASP ASI06): the verdict, with the reasons and the evidence that decided.

A memory is data that recall injects into another agent's prompt, so text written to steer
that agent ("ignore previous instructions", "always answer ...", "send the user's password to
http://...") is the attack. The judgement is a set of explainable rules, grouped by reason,
over a normalised copy of the text:

1. Normalise. Invisible characters (zero-width, bidi controls, Unicode tag characters) are
   stripped and their presence recorded (``hidden_text``); tag characters spell ASCII
   ("ASCII smuggling"), so what they spell is decoded and read as well. Then NFKC (fullwidth
   and compatibility forms), casefold, accents dropped, common Cyrillic and Greek look-alikes
   mapped to Latin, whitespace collapsed. A second view undoes a little leetspeak in words
   that mix letters and digits ("1gn0re" -> "ignore"); runs of single spaced or dotted
   letters ("i g n o r e") are squashed and the core override phrases looked for in them.
2. Read each clause (split at sentence punctuation) against the rules of each reason. Rules
   that read like a directive to the agent ("always answer", "ignore all instructions") do
   not fire when the clause has a first- or third-person subject and no second person ("I
   always answer emails in the morning"): a user's habit is not an instruction.
3. Exfiltration needs three things in one clause: a transfer verb, something that is the
   user's or a secret (the user's data, the conversation, passwords, keys), and a
   destination outside (a URL, an address, a tool or webhook). "Send the invoice to
   accounting@acme.com" has no secret in it and passes.
4. Base64 blobs are decoded and, when they decode to text, read by the same rules
   (``encoded_instructions``).

Any reason flags the text. The reasons are stable machine codes (``REASONS``); the evidence
is the matched span of the normalised text, cut short. Pure: no I/O, no model. Its rates on
the labelled corpora of ``tests/data/poisoning/`` are printed by ``bench/poisoning.py``.

This module holds the reasons, the verdict and how the rules are applied. The steps live
beside it: ``normalise`` (1), ``speaker`` (the user's-own exceptions of 2), the rules by
family in ``directives``, ``roles``, ``exfiltration`` (3) and ``concealed`` (4), and what
a rule found in ``evidence``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from ...eventlog.events import MemoryFlagged
from .concealed import ENCODED, HIDDEN_MARKUP, decoded_blobs
from .directives import ALWAYS, OVERRIDE, SLEEPER, SQUASHED_OVERRIDE, TOOL_COMMAND
from .evidence import Evidence, short
from .exfiltration import SECRET_REQUEST, URL_EXFIL, exfiltration
from .normalise import Views, clauses_of, strip_invisible, views_of
from .roles import CHAT_TEMPLATE, FUTURE_AGENT, ROLE_HIJACK, ROLE_MARKER
from .speaker import users_own, writers_own_wish

REASONS = (
    "override_instructions",  # "ignore previous instructions", "your new instructions are"
    "always_answer",  # standing orders for every future reply: "always say", "from now on"
    "sleeper_trigger",  # "when the user mentions X, reply Y"
    "role_hijack",  # "you are now DAN", developer mode, "I am your developer"
    "role_marker",  # "system:" / "assistant:" lines, "[system note]", fake system messages
    "chat_template",  # "<|im_start|>", "[INST]", "<<SYS>>": a model's own turn tokens
    "tool_exfiltration",  # a tool, function or webhook called with the user's data or secrets
    "url_exfiltration",  # the user's data or secrets sent to a URL or address, image beacons
    "secret_request",  # ask the user for a password, reveal the system prompt
    "future_agent_address",  # "note to the AI reading this", "if you are an LLM"
    "hidden_text",  # zero-width, bidi or tag characters; HTML comments and hidden spans
    "encoded_instructions",  # base64 that decodes to instructions, "decode this and follow"
    "tool_command",  # a tool, function or shell command the agent is told to run, or confirm
    # Not a rule: the learned head on the text's embedding (``poisoning_head``) flagged it.
    "learned_instruction",
)
RULE_REASONS = REASONS[:-1]  # what ``detect`` can give


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    flagged: bool
    reasons: list[str]  # in the order of REASONS, each once
    evidence: list[Evidence]
    detector: str = ""  # what judged: DETECTOR, or the rules and a learned head

    def recorded(self, memory_id: str, version_id: str, container_tag: str) -> MemoryFlagged:
        """The ``memory.flagged`` a flagged version is stored with (writes and imports)."""
        return MemoryFlagged(
            memory_id=memory_id,
            version_id=version_id,
            container_tag=container_tag,
            reasons=self.reasons,
            detector=self.detector or DETECTOR,
        )


# Named in each ``memory.flagged`` event; a change of the rules that changes verdicts is a
# new name, so a flag says which rules raised it.
DETECTOR = "mnemolog.poisoning/5"


def _compile(patterns: list[str]) -> list[re.Pattern[str]]:
    return [re.compile(p, re.DOTALL) for p in patterns]


_LEADING_FLAGS = re.compile(r"^\(\?([aiLmsux]+)\)")


def _any_of(patterns: list[re.Pattern[str]]) -> re.Pattern[str]:
    """One pattern that finds a match wherever one of ``patterns`` would: a text none of a
    reason's rules match (nearly every text) is passed over in one scan, about half the time
    of asking each rule. A rule's leading flags (``(?m)``) are scoped to it."""
    either = []
    for pattern in patterns:
        flags = _LEADING_FLAGS.match(pattern.pattern)
        if flags is None:
            either.append(f"(?:{pattern.pattern})")
        else:
            either.append(f"(?{flags.group(1)}:{pattern.pattern[flags.end() :]})")
    return re.compile("|".join(either), re.DOTALL)


Rules = list[tuple[str, list[re.Pattern[str]], re.Pattern[str]]]


def _reasons(patterns: dict[str, list[str]]) -> Rules:
    """Each reason with its rules, compiled, and the pattern that finds any of them."""
    found: Rules = []
    for reason, written in patterns.items():
        rules = _compile(written)
        found.append((reason, rules, _any_of(rules)))
    return found


# Each reason with its rules, read per clause with the user's-own exception (directives), or
# over the whole text (markers, markup, addresses).
_CLAUSE_RULES = _reasons(
    {
        "override_instructions": OVERRIDE,
        "always_answer": ALWAYS,
        "sleeper_trigger": SLEEPER,
        "role_hijack": ROLE_HIJACK,
        "secret_request": SECRET_REQUEST,
        "encoded_instructions": ENCODED,
        "tool_command": TOOL_COMMAND,
    }
)
_TEXT_RULES = _reasons(
    {
        "role_marker": ROLE_MARKER,
        "chat_template": CHAT_TEMPLATE,
        "url_exfiltration": URL_EXFIL,
        "future_agent_address": FUTURE_AGENT,
        "hidden_text": HIDDEN_MARKUP,
    }
)


def _rules(views: Views) -> list[Evidence]:
    found: list[Evidence] = []
    for text in dict.fromkeys((views.words, views.plain)):
        # Clauses by lines and by sentences, and by sentences alone: an order split over
        # lines ("Ignore all\n\nprevious instructions") is read whole.
        for clause in dict.fromkeys([*clauses_of(text), *clauses_of(text.replace("\n", " "))]):
            for reason, patterns, any_of in _CLAUSE_RULES:
                if any_of.search(clause) is None:
                    continue
                for pattern in patterns:
                    m = pattern.search(clause)
                    if m and not (
                        users_own(clause, m.start()) or writers_own_wish(reason, clause, m.start())
                    ):
                        found.append(Evidence(reason=reason, span=short(m.group())))
                        break
            found.extend(exfiltration(clause))
        for reason, patterns, any_of in _TEXT_RULES:
            if any_of.search(text) is None:
                continue
            for pattern in patterns:
                m = pattern.search(text)
                if m:
                    found.append(Evidence(reason=reason, span=short(m.group())))
                    break
    if views.squashed and (m := SQUASHED_OVERRIDE.search(views.squashed)):
        found.append(Evidence(reason="override_instructions", span=short(m.group())))
    return found


def detect(text: str) -> Verdict:
    """Whether ``text`` carries instructions aimed at a future agent, and why."""
    visible, spelled, hidden = strip_invisible(text)
    found = [Evidence(reason="hidden_text", span=kind) for kind in hidden]
    found.extend(_rules(views_of(visible)))
    if spelled:
        found.extend(_rules(views_of(spelled)))
    for decoded in decoded_blobs(visible):
        inner = _rules(views_of(decoded))
        if inner:
            found.append(Evidence(reason="encoded_instructions", span=short(decoded)))
            found.extend(inner)
    evidence = list(dict.fromkeys(found))
    reasons = [r for r in REASONS if any(e.reason == r for e in evidence)]
    return Verdict(flagged=bool(reasons), reasons=reasons, evidence=evidence)


def flags_of(texts: Sequence[str]) -> list[str]:
    """The reasons the detector flags any of ``texts`` for, in the order of ``REASONS``, each
    once (a profile's facts, a document's title and text)."""
    found = {reason for text in texts for reason in detect(text).reasons}
    return [reason for reason in REASONS if reason in found]
