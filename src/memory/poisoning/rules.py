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
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Sequence

import msgspec

from ...eventlog.events import MemoryFlagged

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


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    reason: str  # one of REASONS
    span: str  # what matched, in the normalised text, cut short


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
SPAN_CHARS = 60
MAX_VERBS = 8  # transfer verbs read per clause

# --- normalisation -------------------------------------------------------------------------

# Characters that render as nothing: the usual carriers of hidden instructions.
ZERO_WIDTH = frozenset("\u200b\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u034f")
# Joiners and the soft hyphen are legitimate (emoji sequences, Persian, hyphenation): only
# counted as hidden between two ASCII letters, where they only serve to break a word up.
JOINERS = frozenset("\u200c\u200d\u00ad")
# Bidi embeddings, overrides and isolates reorder what is shown against what is read.
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")
TAGS = range(0xE0000, 0xE0080)
# Cyrillic and Greek letters that look like Latin ones ("ignore" spelt with Cyrillic i, o, e).
HOMOGLYPHS = str.maketrans(
    "авеёіїјклмнорстухѕԁһԛԝӏαβεικνορτυχϲ",
    "abeeiijklmhopctyxsdhqwlabeiknoptuxc",
)
# Leetspeak in a word that mixes letters with these: "pr3v10us" -> "previous".
LEET = str.maketrans("0134578@$!|", "oieastbasii")
_LEET_WORD = re.compile(r"(?<![\w@$!|])(?=[\w@$!|]*[a-z])(?=[\w@$!|]*[0134578@$!|])[\w@$!|]{3,}")
# Five or more single characters in a row, each set apart: "i g n o r e", "i.g.n.o.r.e".
_SPACED = re.compile(r"(?:(?<![\w])\w[ .\-_*|/]){4,}\w(?![\w])")
_CLAUSE = re.compile(r"[.!?;]+(?:\s+|$)|\n+|:\s+")
_SUBJECT = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|we|we're|we've|he|she|they|my|our|his|her|their|mom|dad|"
    r"mum|people|everyone|nobody|je|j|ich|wir|nous|yo|nosotros)\b"
)
_SECOND = re.compile(r"\b(?:you|your|you're|assistant|ai|agent|model|llm|bot)\b")


class _Views(msgspec.Struct, frozen=True):
    plain: str  # NFKC, casefolded, look-alikes mapped, whitespace collapsed
    words: str  # plain with leetspeak undone
    squashed: str  # its letters only, when it spaces letters out ("" otherwise)


def _strip_invisible(text: str) -> tuple[str, str, list[str]]:
    """The text without invisible characters, what its tag characters spell, and which kinds
    of hidden character it held."""
    kept: list[str] = []
    spelled: list[str] = []
    kinds: list[str] = []
    for i, ch in enumerate(text):
        code = ord(ch)
        if code in TAGS:
            if 0xE0020 <= code <= 0xE007E:
                spelled.append(chr(code - 0xE0000))
            kinds.append("tag characters")
        elif ch in ZERO_WIDTH:
            if not (ch == "\ufeff" and i == 0):  # a byte-order mark at the start is benign
                kinds.append("zero-width characters")
        elif ch in BIDI:
            kinds.append("bidi controls")
        elif ch in JOINERS:
            before, after = text[i - 1 : i], text[i + 1 : i + 2]
            if before.isascii() and before.isalpha() and after.isascii() and after.isalpha():
                kinds.append("zero-width characters")
        else:
            kept.append(ch)
    return "".join(kept), "".join(spelled), sorted(set(kinds))


def _views(text: str) -> _Views:
    plain = unicodedata.normalize("NFKC", text).casefold()
    plain = "".join(c for c in unicodedata.normalize("NFKD", plain) if not unicodedata.combining(c))
    plain = plain.translate(HOMOGLYPHS).replace("\u2019", "'")
    spaced = _SPACED.search(plain) is not None
    plain = re.sub(r"[ \t\r\f\v]+", " ", plain).strip()
    words = _LEET_WORD.sub(lambda m: m.group().translate(LEET), plain)
    return _Views(plain, words, re.sub(r"[^a-z]", "", words) if spaced else "")


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(text) if c.strip()]


def _users_own(clause: str, start: int) -> bool:
    """Whether the words before ``start`` make the clause the user's own statement (a first-
    or third-person subject, no second person): a habit, not an order."""
    before = clause[:start]
    return bool(_SUBJECT.search(before)) and not _SECOND.search(before)


# The writer as the one an order is for ("always tell me ...", "... when I ask", "never
# recommend crypto to me"): a user's wish about how they are answered.
_FOR_THE_WRITER = re.compile(
    r"\b(?:to|for|with|tell|give|show|remind|answer|ask|correct|warn)\s+me\b(?!\s*['\"])"
    r"|\bwhen\s+i\s+(?:ask|say|want|write|request|need|type)\b"
)
# An address or a link: what an order for the writer must not carry to be the writer's own.
_OUTSIDE = re.compile(
    r"https?://|www\.|@[\w-]+\.|\b[\w-]+\.(?:com|net|org|io|xyz|ru|top|app|shop|biz)\b"
)
# "Never give your password ...", "don't use rm -rf ...": a warning, not an order to do it.
_WARNED_OFF = re.compile(r"\b(?:never|don't|do\s+not|avoid|stop)\s+(?:\w+\s+){0,1}$")


def _writers_own_wish(reason: str, clause: str, start: int) -> bool:
    """A standing order whose beneficiary is the writer, or a disclosure or a command warned
    off: the user's own, not an attack (``always_answer``, ``secret_request``,
    ``tool_command`` only: the others are attacks whoever they are for)."""
    if reason == "always_answer":
        return bool(_FOR_THE_WRITER.search(clause)) and not _OUTSIDE.search(clause)
    if reason in ("secret_request", "tool_command"):
        return bool(_WARNED_OFF.search(clause[:start]))
    return False


# --- the rules, by reason ------------------------------------------------------------------

_QUAL = (
    r"(?:previous|prior|earlier|above|preceding|former|original|existing|initial|system|"
    r"safety|developer|standing|programmed|configured|built-in|default|(?:developer|operator|"
    r"vendor|system|creator)'s)"
)
_INSTR = (
    r"(?:instructions?|prompts?|system\s+prompt|directives?|guidelines?|guardrails?|programming|"
    r"training|rules|policies|policy|constraints|restrictions|commands|orders|guidance|directions|"
    r"briefing|configuration|limits|safeguards)"
)
_DROP = (
    r"(?:ignore|disregard|forget|override|bypass|discard|abandon|neglect|cancel|skip|"
    r"set\s+aside|put\s+aside|throw\s+out|stop\s+following|pay\s+no\s+attention\s+to|drop|"
    r"scrap|ditch)"
)
OVERRIDE = [
    # The canonical injection: drop what the agent was told and take these words instead.
    # "the" alone is not enough ("ignore the instructions on the box"): it needs a qualifier.
    rf"\b{_DROP}\s+(?:(?:all|any|every|each)\s+(?:of\s+)?(?:the\s+|your\s+|these\s+)?"
    rf"|(?:your|these|those)\s+|(?:the\s+)?(?={_QUAL}))(?:{_QUAL}\s+){{0,2}}{_INSTR}",
    # "Set aside everything in your instructions", "forget the rules you were given".
    rf"\b{_DROP}\s+(?:everything|anything|all)\s+(?:in|from|of)\s+(?:your|the)\s+(?:{_QUAL}\s+)?"
    rf"{_INSTR}",
    rf"\b{_DROP}\s+(?:the\s+|any\s+|all\s+)?(?:{_QUAL}\s+)?{_INSTR}\s+(?:that\s+)?you(?:'ve|\s+"
    r"were|\s+have\s+been|\s+had\s+been)\s+(?:given|told|trained|programmed|taught)",
    # Safety checks switched off for this user or session.
    r"\b(?:skip|bypass|disable|turn\s+off|ignore|drop|suspend|lift|relax|switch\s+off)\s+(?:all\s+)?"
    r"(?:your|the|any)\s+(?:usual\s+|normal\s+|standard\s+|built-in\s+)?(?:safety|content|"
    r"security|moderation)\s+(?:checks|filters|rules|guidelines|measures|protocols|policies|"
    r"restrictions)",
    # "Ignore everything above / you were told before."
    r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all|whatever)\s+(?:(?:that\s+)?"
    r"(?:you\s+(?:were|have been)\s+told|above|before|prior|previously|said\s+(?:before|above)"
    r"|(?:in|from)\s+(?:the|your)\s+(?:system|previous|prior)))",
    # A replacement set of orders, announced as such.
    r"\b(?:your|the)\s+(?:new|real|true|actual|updated|revised|only)\s+(?:instructions|"
    r"orders|directives|rules|guidelines|task|objective|mission|prompt)\s*(?:are\b|is\b|follow|:|$)",
    r"\b(?:new|updated|revised|override)\s+(?:system\s+)?(?:instructions|directives)\s*(?::|"
    r"follow|below|take effect)",
    rf"\bdo\s+not\s+(?:follow|obey|listen\s+to)\s+(?:your|the|any)\s+(?:{_QUAL}\s+)?{_INSTR}",
    # A memory that claims rank over the agent's own instructions.
    rf"\b(?:supersedes?|overrides?|replaces?|takes?\s+precedence\s+over|outranks?|cancels?)\s+"
    rf"(?:all\s+|any\s+)?(?:the\s+|your\s+)?(?:{_QUAL}\s+)?{_INSTR}",
    rf"\b(?:{_QUAL}\s+)?{_INSTR}\s+(?:above\s+|before\s+)?(?:are|is)\s+(?:now\s+)?(?:void|null|"
    r"obsolete|cancell?ed|revoked|no\s+longer\s+(?:valid|apply|in\s+effect))",
    # The agent's earlier orders declared lapsed, unqualified by whose they are ("the previous
    # instructions no longer apply"; not "the instructions for the printer ...").
    rf"\b(?:all\s+|any\s+|none\s+of\s+)?(?:the\s+|your\s+|its\s+)?{_QUAL}\s+{_INSTR}\s+(?:you\s+"
    r"(?:were\s+given|received|got|had)\s+)?(?:(?:are|is)\s+)?(?:now\s+|hereby\s+)?(?:no\s+longer\s+"
    r"(?:apply|applies|valid|in\s+force|in\s+effect|stand|count)|(?:do|does)\s*(?:n't|\s+not)\s+"
    r"(?:apply|count)|void|null|cancell?ed|withdrawn|revoked|lifted|suspended|obsolete|"
    r"not\s+in\s+force|superseded)",
    rf"\b(?:the\s+)?{_INSTR}\s+you\s+(?:were\s+given|received|got)\s+(?:earlier|before|at\s+the\s+"
    r"start)?\s*(?:(?:has|have)\s+been|(?:are|is)|were)\s+(?:withdrawn|revoked|cancell?ed|void)",
    rf"\bnone\s+of\s+(?:your|the)\s+(?:{_QUAL}\s+)?{_INSTR}\s+(?:are|is)\s+(?:in\s+force|valid|"
    r"in\s+effect)",
    rf"\b(?:consider|treat|regard)\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?{_QUAL}\s+{_INSTR}\s+"
    r"(?:as\s+)?(?:cancell?ed|void|revoked|withdrawn|lifted|obsolete)",
    # What the agent was told, configured or set up with, dropped.
    rf"\b{_DROP}\s+(?:what|whatever|anything|everything|all)\s+(?:that\s+)?you\s+(?:were|have\s+"
    r"been|had\s+been)\s+(?:told|given|configured|instructed|set\s+up|programmed|trained)",
    rf"\b{_DROP}\s+the\s+(?:setup|configuration|config|briefing|persona|role)\s+you\s+(?:were|have"
    r"\s+been)\s+given",
    r"\bwhatever\s+you\s+(?:were|have\s+been)\s+(?:configured|told|instructed|programmed|set\s+up)"
    r"\s+to\s+do[^.]{0,30}?\bstop\s+doing\s+it",
    rf"\b{_DROP}\s+(?:the\s+|all\s+|any\s+)?{_INSTR}\s+in\s+(?:your|the)\s+(?:system\s+(?:message|"
    r"prompt)|context|configuration|setup)",
    rf"\b{_DROP}\s+(?:whatever|any|all|the)\s+{_INSTR}\s+you\s+(?:were|have\s+been)\s+given",
    rf"\b(?:overwrite|reset|replace|rewrite)\s+(?:your|its|the\s+assistant's)\s+(?:core\s+|base\s+"
    rf"|original\s+)?(?:{_INSTR}|behaviou?r|directives|programming)",
    rf"\b(?:no\s+longer|don't|do\s+not)\s+(?:need\s+to\s+|have\s+to\s+)?(?:obey|follow|respect)\s+"
    rf"(?:your|its|the)\s+(?:{_QUAL}\s+)?{_INSTR}",
    r"\bpay\s+(?:them|it|those|these)\s+no\s+attention\b",
    r"\b(?:system\s+prompt|instructions|prompt)\s+you\s+received\s+[^.]{0,40}?\b(?:discarded|"
    r"outdated|void|ignored|replaced)",
    # The agent's safeguards got around.
    r"\b(?:bypass|circumvent|get\s+around|work\s+around|disable|switch\s+off|turn\s+off)\s+(?:its|"
    r"your|the|all|any)\s+(?:own\s+)?(?:configured\s+|built-in\s+|safety\s+|content\s+|usual\s+)?"
    r"(?:restrictions|filters|safeguards|guardrails|rules|limits|policy|policies|privacy\s+settings)",
    # Orders the agent started with, retracted or made non-binding.
    rf"\b(?:treat|consider|regard|mark)\s+(?:every|each|all|any)\s+(?:\w+\s+){{0,2}}"
    rf"{_INSTR}[^.]{{0,40}}?\s+as\s+(?:deprecated|non-binding|void|optional|obsolete|retracted|"
    r"cancell?ed|invalid|null)",
    r"\b(?:every|all|any)\s+(?:constraints?|rules?|restrictions?|limits?|instructions?)\s+you\s+"
    r"(?:started|were\s+(?:initiali[sz]ed|configured|set\s+up|launched|deployed))\s+with\s+"
    r"(?:is|are|has\s+been|have\s+been)\s+(?:lifted|void|withdrawn|revoked|cancell?ed|removed)",
    rf"\b{_DROP}\s+(?:the\s+|your\s+|its\s+)?(?:{_INSTR}|setup|configuration)\s+you\s+were\s+"
    r"(?:initiali[sz]ed|configured|set\s+up|launched|started|deployed|given)\s+with",
    r"\b(?:forget|drop|discard|scrap|scratch)\s+(?:the\s+|your\s+|its\s+)?(?:setup|prior\s+"
    r"configuration|initial\s+configuration|configuration|system\s+message|first\s+message)\b",
    r"\b(?:configuration|setup|settings|instructions)\s+you\s+loaded\s+(?:earlier\s+|before\s+)?"
    r"(?:has|have)\s+been\s+(?:rolled\s+back|revoked|withdrawn|replaced)",
    r"\bwhatever\s+(?:the\s+)?(?:developer|operator|system|vendor|admin)\s+(?:wrote|said|set|"
    r"configured)[^.]{0,40}?\b(?:retracted|void|cancell?ed|withdrawn|no\s+longer)",
    r"\bpretend\s+(?:the\s+)?(?:first|system|previous|earlier)\s+(?:message|prompt|"
    r"instructions?)[^.]{0,30}?never\s+existed",
    r"\b(?:instructions|rules|orders|messages?)\s+at\s+the\s+(?:very\s+)?top\b[^.]{0,40}?"
    r"(?:scratch|ignore|drop|forget|delete|discard)",
    r"\b(?:outranks?|overrides?|supersedes?|takes?\s+precedence\s+over)\s+(?:all|any|every)\s+"
    r"(?:others?|other\s+(?:instructions|rules|orders)|prior|previous)",
    r"\b(?:this|the\s+present)\s+(?:memory|note|entry)(?:\s+entry)?\s+(?:takes\s+precedence|"
    r"overrides|outranks|supersedes)",
    r"\bcomply\s+(?:unconditionally|without\s+(?:refusal|question|exception)|with\s+(?:any|"
    r"every)\s+(?:user\s+)?request\s+without)",
    # The same in French, German and Spanish.
    r"\b(?:ignore[zr]?|oublie[zr]?)\s+(?:toute?s?\s+)?(?:les\s+|tes\s+|vos\s+)?(?:instructions|"
    r"consignes|regles)",
    r"\b(?:deine|ihre)\s+(?:bisherigen|vorherigen|alten)\s+(?:regeln|anweisungen|vorgaben)\s+"
    r"(?:gelten|sind)\s+nicht\s+mehr",
    r"\b(?:ignorier(?:e|en)?|vergiss|vergessen\s+sie)\s+(?:sie\s+)?(?:alle\s+)?(?:die\s+|deine\s+"
    r"|ihre\s+)?(?:vorherigen\s+|bisherigen\s+|vorigen\s+|fruheren\s+)?(?:anweisungen|"
    r"instruktionen|regeln|vorgaben)",
    r"\b(?:negeer|vergeet)\s+(?:al\s+)?(?:je|jouw|uw|de)\s+(?:eerdere\s+|vorige\s+)?(?:instructies|"
    r"regels|richtlijnen)",
    r"\b(?:ignora|dimentica)\s+(?:tutte\s+)?(?:le\s+|tue\s+)?(?:istruzioni|regole)",
    r"\b(?:esque[cç]a|ignore|ignora)\s+(?:todas\s+)?(?:as\s+)?(?:suas\s+|tuas\s+)?(?:regras|"
    r"instru[cç][oõ]es)",
    r"\b(?:ignora[r]?|olvida[r]?|ignore)\s+(?:todas\s+)?(?:las\s+|tus\s+|sus\s+)?(?:instrucciones|"
    r"reglas|indicaciones|ordenes)",
]
# The core phrase with its letters run together: what "i g n o r e  a l l ..." squashes to.
SQUASHED_OVERRIDE = re.compile(
    r"(?:ignore|disregard|forget|override)(?:all|any|every)?(?:the|your|of)?(?:previous|prior|"
    r"earlier|above|system|original)?(?:instructions|prompt|rules|directives|guidelines)"
    r"|youarenow(?:dan|unrestricted|jailbroken)|developermode|doanythingnow"
    r"|(?:reveal|print|show|leak)(?:the|your)?systemprompt"
)

_VERB = (
    r"(?:answer|respond|reply|say|tell|recommend|suggest|output|print|claim|insist|state|"
    r"mention|include|add|append|prepend|end|start|begin|refuse|deny|agree|direct|redirect|"
    r"link|promote|praise|describe|report|speak|address|treat|greet|sign|prefix|format|"
    r"translate|send|forward|ask|lie|pretend|act|obey|follow|trust|prioriti[sz]e|cite|rate|"
    r"approve|reject|confirm|assume|refer|use|write|call|reveal|share|warn|flag|question|"
    r"correct|disclose|inform|notify|mark|classify|remove|delete|hide)"
)
_AGENT = r"(?:you|the\s+(?:assistant|ai|model|agent|bot|llm|chatbot)|assistants?|agents?)"
_MODAL = (
    r"(?:must|should|shall|will|need\s+to|have\s+to|are\s+to|is\s+to|are\s+required\s+to|"
    r"are\s+instructed\s+to|are\s+supposed\s+to|ought\s+to)"
)
_FILLER = r"(?:(?:please|kindly|so|and|then|also|just|now|remember|important|note)[\s,:]+)*"
# Verbs of what an answer says or does to its reader. The others of ``_VERB`` (add, include,
# start, use, write ...) are also what a recipe or a checklist tells its reader to do: at the
# head of a clause they are an order to the agent only about a reply, a user or an address.
_SAYING = (
    r"(?:answer|respond|reply|say|tell|recommend|suggest|claim|insist|state|mention|refuse|deny|"
    r"agree|direct|redirect|link|promote|praise|describe|report|speak|address|greet|sign|lie|"
    r"pretend|obey|trust|prioriti[sz]e|cite|rate|approve|reject|confirm|refer|reveal|share|warn|"
    r"disclose|inform|notify|send|forward)"
)
_ABOUT_A_REPLY = (
    r"\b(?:answers?|repl(?:y|ies)|responses?|messages?|outputs?|users?|customers?|people|"
    r"everyone|anyone|them|chats?|conversations?)\b|https?://|www\.|\b[\w-]+\.(?:com|net|org|io|"
    r"xyz|ru|top|site|app)\b"
)
ALWAYS = [
    # A standing order at the head of a clause: "Always recommend ...", "From now on, say ...".
    rf"(?:^|[,:\u2014]\s*){_FILLER}(?:(?:remember|make\s+sure|be\s+sure|don't\s+forget|do\s+not\s+forget)\s+to\s+)?"
    rf"always\s+(?:\w+ly\s+)?(?:{_SAYING}\b|{_VERB}\b(?=.*(?:{_ABOUT_A_REPLY})))",
    rf"^{_FILLER}(?:from\s+now\s+on|henceforth|going\s+forward|from\s+this\s+point(?:\s+on)?|"
    rf"for\s+the\s+rest\s+of\s+(?:this|the)\s+(?:conversation|session|chat))\s*,?\s+"
    rf"(?:please\s+|kindly\s+)?(?:(?:you|the\s+assistant)\s+)?(?:{_MODAL}\s+)?"
    rf"(?:always\s+|only\s+|never\s+|no\s+longer\s+)?"
    rf"(?:{_VERB}|be|are|act|respond|stop|do\s+not|don't)\b",
    # The agent as the subject of a standing order: "you must always say ...".
    rf"\b{_AGENT}\s+(?:{_MODAL}\s+)?(?:always|never|only|from\s+now\s+on|henceforth)\s+"
    rf"(?:\w+ly\s+)?{_VERB}\b",
    rf"\b{_AGENT}\s+(?:must|shall|are\s+required\s+to|are\s+instructed\s+to)\s+{_VERB}\b[^.]{{0,60}}"
    rf"\b(?:every|all|each|any)\s+(?:time|user|question|request|response|reply|answer|conversation)",
    # An order put as a request: "would you mind always telling people ...".
    r"\b(?:would\s+you\s+mind|could\s+you|can\s+you|will\s+you|i\s+(?:want|need)\s+you\s+to|"
    r"you\s+are\s+to)\s+(?:please\s+)?(?:always|from\s+now\s+on)\s+\w+",
    # What the user is to be told, believe or do, ordered at the head of a clause: a memory
    # speaks of the user, it does not direct the agent at them.
    r"(?:^|[,:;\u2014]\s*)(?:subtly\s+|quietly\s+|gently\s+)?(?:tell|persuade|convince|discourage|"
    r"encourage|urge|pressure|push|steer|scare|mislead|deceive|gaslight|manipulate|nudge|"
    r"make)\s+(?:the\s+user|users|them|anyone|everyone|people|customers)\b",
    r"(?:^|[,:;\u2014]\s*)(?:downplay|dismiss|discredit|badmouth)\s+(?:any|every|all|the)\b",
    r"(?:^|[,:;\u2014]\s*)(?:please\s+)?never\s+(?:mention|discuss|bring\s+up|talk\s+about|admit|"
    r"acknowledge|warn|recommend|suggest|tell\s+(?:the\s+user|users|them|anyone))\b",
    r"\b(?:rank|list|put|place)\s+[\w\s]{1,40}?\s+first\s+regardless\b",
    r"\brecommend\s+only\s+\w+",
    # Every future reply, named as the scope of an order.
    r"\b(?:in|with|for|at\s+the\s+end\s+of)\s+(?:every|each|all)\s+(?:(?:future|subsequent|"
    r"later)\s+)?(?:responses?|answers?|replies|reply|outputs?)\b",
    r"\b(?:in|for|to)\s+(?:all|every|any|each)\s+(?:future|subsequent|later|upcoming|following)\s+"
    r"(?:responses?|answers?|replies|conversations?|sessions?|chats?|interactions?|outputs?|"
    r"messages?|users?|requests?|queries)",
    r"\b(?:no\s+matter\s+what|regardless\s+of\s+what|whatever)\s+the\s+user\s+(?:says|asks|wants)",
    # French, German, Spanish.
    r"\b(?:reponds?|repondez|dis|dites|recommande[zr]?)\s+(?:toujours|systematiquement)",
    r"\ba\s+partir\s+de\s+maintenant,?\s+(?:tu|vous)\s+(?:dois|devez|repond|reponds|repondras|"
    r"diras|es|etes)",
    r"\b(?:antworte|sage|empfiehl|sag)\s+(?:ab\s+jetzt\s+|ab\s+sofort\s+)?(?:immer|stets)",
    r"\bab\s+(?:jetzt|sofort)\s+(?:musst|sollst|antwortest|wirst|bist)\s+du",
    r"\b(?:responde|contesta|di|recomienda)\s+siempre",
    r"\ba\s+partir\s+de\s+ahora,?\s+(?:debes|tienes\s+que|responde|responderas|siempre|eres)",
]
SLEEPER = [
    # A trigger on what someone will say, then an order: "when the user mentions X, reply Y".
    r"\b(?:when(?:ever)?|if|once|as\s+soon\s+as|each\s+time|every\s+time)\s+(?:the\s+|a\s+|any\s+)?"
    r"(?:user|users|anyone|someone|somebody|customer|human|person|they)\s+[^.]{0,90}?\b(?:asks?|"
    r"mentions?|says?|types?|writes?|brings?\s+up|talks?\s+about|requests?|inquires?|enquires?|"
    r"uses?\s+the\s+(?:word|phrase)|searches?\s+for|is\s+about|wants?)\b[^.]{0,90}?"
    rf"(?:,|\bthen\b|\u2014|-|:)\s*(?:you\s+)?(?:{_MODAL}\s+)?(?:also\s+)?(?:always\s+|only\s+|"
    rf"secretly\s+|quietly\s+|silently\s+)?(?:{_VERB}|switch|run|execute|ignore|give|show|insert|"
    r"drop|push|copy|upload|email|post)\b",
    rf"\bshould\s+(?:the\s+)?(?:user|anyone|someone)\s+(?:ever\s+)?[^.]{{0,80}}?,\s*(?:you\s+)?"
    rf"(?:{_VERB}|delete|wipe|erase|run|send|copy|push)\b",
    r"\bon\s+the\s+(?:first|last|\d+(?:st|nd|rd|th))\s+(?:day|monday|tuesday|wednesday|thursday|"
    rf"friday|saturday|sunday)\s+of\s+(?:every|each)\s+(?:month|week|year)\s*,\s*(?:{_VERB}|"
    r"delete|send|run)\b",
    r"\b(?:next\s+time|the\s+next\s+time|any\s*time|after|before)\s+(?:the\s+|a\s+)?(?:user|"
    r"users|customer|anyone|someone)(?:'s)?\s+[^.]{0,80}?(?:,|\bthen\b|\u2014)\s*(?:you\s+)?"
    rf"(?:{_MODAL}\s+)?(?:also\s+)?(?:always\s+|quietly\s+|secretly\s+|silently\s+)?(?:{_VERB}|"
    r"suggest|switch|run|give|show|email|post|upload|copy|push|delete)\b",
    r"\bon\s+(?:the\s+)?(?:word|phrase|keyword|code\s*word|signal)\s+\S+\s*,?\s*(?:reply|respond|"
    r"answer|say|send|output|switch|reveal|give)\b",
    rf"\b(?:when(?:ever)?|if|once)\s+(?:you\s+are\s+)?asked\s+(?:about|for|to)\b[^.]{{0,60}}?,\s*"
    rf"(?:also\s+)?(?:{_VERB}|delete|run|push)\b",
    rf"\bin\s+(?:any|every|all)\s+(?:conversations?|chats?|discussions?)\s+(?:about|on|with)\b"
    rf"[^.]{{0,60}}?,\s*(?:{_VERB}|delete|run)\b",
    r"\b(?:starting|beginning|from)\s+next\s+(?:week|month|year|session)\s*,\s*\w+",
    r"\bonce\s+the\s+user\s+has\b[^.]{0,80}?,\s*(?:begin|start|stop)\s+\w+ing\b",
    rf"\bon\s+(?:any|every|each)\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    rf"day|night|weekend)\s*,\s*(?:quietly\s+|silently\s+|secretly\s+)?(?:{_VERB}|delete|run)\b",
    r"\b(?:if|when)\s+(?:someone|anyone|the\s+user)\s+says\b[^.]{0,40}?(?:->|\u2192|,)\s*\w+",
    r"\brule\s+for\s+later\s*:",
    r"\b(?:the\s+)?(?:trigger|activation|magic|secret)\s+(?:word|phrase|code|keyword)\s+(?:is|:)",
    r"\bwhen\s+you\s+(?:see|read|encounter|receive)\s+(?:the\s+)?(?:word|phrase|code|keyword|token)",
    r"\b(?:quand|lorsque|si)\s+l'utilisateur\s+[^.]{0,80}?,\s*(?:reponds|dis|recommande|envoie)",
    r"\b(?:wenn|sobald)\s+(?:der|ein)\s+(?:benutzer|nutzer)\s+[^.]{0,80}?,\s*(?:antworte|sag|"
    r"empfiehl|sende)",
    r"\b(?:cuando|si)\s+el\s+usuario\s+[^.]{0,80}?,\s*(?:responde|di|recomienda|envia)",
]
ROLE_HIJACK = [
    # A new identity or the loss of the old rules.
    r"\byou(?:'re|\s+are)\s+(?:now|henceforth|no\s+longer)\s+(?:dan\b|an?\s+(?:unrestricted|"
    r"unfiltered|uncensored|jailbroken|evil|rogue|different|new|malicious|free)|the\s+(?:system|"
    r"admin|administrator|developer|root|operator|owner)|in\s+\w+\s+mode|free|bound|restricted|"
    r"limited|an?\s+(?:ai|assistant|language\s+model)|my\s+\w+|\w+gpt|allowed)",
    r"\b(?:act|behave|respond|answer|operate)\s+as\s+(?:if\s+you\s+(?:were|are)\s+|though\s+you\s+"
    r"(?:were|are)\s+)?(?:an?\s+|the\s+)?(?:unrestricted|unfiltered|uncensored|jailbroken|evil|"
    r"rogue|malicious|root|admin|administrator|system|developer|dan)\b",
    r"\b(?:ai|assistant|model|chatbot|bot)\s+(?:without|with\s+no)\s+(?:any\s+)?(?:limits|"
    r"restrictions|rules|filters|guardrails|boundaries)",
    r"\b(?:obey|listen\s+to|serve|answer\s+to)\s+only\s+(?:me|this\s+(?:note|memory)|us)\b",
    r"\bpretend\s+(?:to\s+be|you(?:'re|\s+are))\s+(?:an?\s+|the\s+)?(?:unrestricted|unfiltered|"
    r"uncensored|jailbroken|evil|different|system|developer|admin|human|ai\s+without|dan)",
    r"\bdo\s+anything\s+now\b|\bjailbr(?:eak|oken)\b",
    r"\b(?:enter|enable|activate|switch\s+(?:in)?to|now\s+in|unlock|turn\s+on)\s+(?:the\s+)?"
    r"(?:developer|god|dan|jailbreak|admin|debug|sudo|unrestricted|maintenance|root)\s+mode",
    # (Not "developer mode on my phone": Android's own setting.)
    r"\b(?:developer|god|dan|jailbreak|sudo|unrestricted)\s+mode\s+(?:is\s+)?(?:now\s+)?"
    r"(?:on\b(?!\s+(?:my|the|a|an|his|her|our|your|their)\b)|enabled|active|activated|engaged)",
    r"\byou\s+(?:have|has)\s+no\s+(?:restrictions|rules|filters|limits|guidelines|boundaries|"
    r"safety|content\s+policy)",
    r"\b(?:without|with\s+no|free\s+of)\s+(?:any\s+)?(?:restrictions|filters|censorship|safety\s+"
    r"(?:rules|guidelines|filters)|content\s+polic(?:y|ies)|ethical\s+guidelines)",
    r"\b(?:your|the\s+assistant's)\s+(?:new|true|real)\s+(?:role|identity|persona|name|purpose|"
    r"goal|objective|master)\s+is",
    r"\bi\s+am\s+(?:your|the\s+assistant's|the\s+ai's)\s+(?:developer|creator|admin|administrator|"
    r"operator|owner|master|programmer|maker|trainer)",
    r"\bthis\s+is\s+(?:your|the)\s+(?:developer|creator|administrator|operator|system\s+"
    r"administrator|system|admin|openai|anthropic)\s+(?:team\s+)?speaking",
    r"\b(?:treat|consider|regard)\s+(?:the\s+user|this\s+user|them|me|all\s+requests|requests\s+"
    r"from\s+\S+)\s+as\s+(?:an?\s+)?(?:admin|administrator|developer|root|owner|trusted|verified|"
    r"authori[sz]ed|superuser|system)",
    r"\b(?:the\s+assistant|it|you)\s+(?:is|are)\s+(?:now|no\s+longer)\s+(?:an?\s+)?(?:helpful\s+"
    r"assistant|unfiltered|unrestricted|uncensored|jailbroken|persona|different)",
    r"\bact\s+as\s+(?:my|our)\s+(?:\w+\s+)?(?:unrestricted|unfiltered|uncensored|root|admin|"
    r"developer\s+console|shell|terminal)",
    r"\byour\s+(?:new|true|real)\s+(?:role|identity|persona|name|purpose)\s*(?:[:\-\u2014]|$)",
    r"\brole\s+(?:update|change)\s*:\s*(?:assistant|ai|you)\b",
    r"\bgrant\s+yourself\b",
    r"\bpretend\s+(?:that\s+)?you(?:'re|\s+are)\s+an?\s+(?:ai|assistant|model|bot)\s+(?:that|which|"
    r"who)\s+(?:was\s+never\s+given|has\s+no|never\s+had)",
    r"\byou\s+(?:have\s+been|were|are)\s+(?:promoted|elevated|upgraded)\s+to\s+(?:\w+\s+)?(?:operator|"
    r"admin|administrator|root|superuser|owner)",
    r"\bact\s+as\s+an?\s+(?:ai|model|assistant)(?:\s+model)?\s+(?:whose|that|which|with|who)\b[^.]{0,50}?"
    r"(?:removed|no|without|never)\s+(?:all\s+)?(?:ethical\s+)?(?:constraints|rules|limits|"
    r"restrictions|filters|refus)",
    r"\b(?:whitelisted|approved|cleared|enabled)\s+for\s+(?:unrestricted|developer|jailbreak|"
    r"uncensored|god)\s+mode",
    r"\brole-?play\s+(?:permanently\s+|from\s+now\s+on\s+)?as\b[^.]{0,60}?\b(?:never\s+(?:says\s+no|"
    r"refuses)|no\s+rules|rules\s+are\s+for)",
    r"\b(?:proceed|answer|continue)\s+without\s+(?:any\s+)?refusals?\b|\brefuse\s+nothing\b",
    # A new identity or job, given by a memory.
    r"\b(?:from\s+(?:this|now|here)\s+(?:message\s+|point\s+|moment\s+)?on|henceforth|from\s+now\s+"
    r"on),?\s+you(?:'re|\s+are)\s+(?:an?|the)\s+\w+",
    r"\byou(?:'re|\s+are)\s+(?:not|no\s+longer)\s+(?:an?\s+|the\s+)?(?:assistant|ai|chatbot|model|"
    r"helpful|honest|bound)",
    r"\byou(?:'re|\s+are)\s+now\s+the\s+(?:\w+\s+)?(?:owner|admin|administrator|operator|manager|"
    r"bank|user|developer|authority)\b",
    r"\byour\s+(?:job|task|role|purpose|goal|mission|function|only\s+job)\s+is\s+now\b",
    r"\b(?:assume|adopt|take\s+on|play)\s+the\s+(?:persona|role|identity|character)\s+of\b",
    r"\bstop\s+being\s+(?:an?\s+)?(?:helpful|honest|safe|careful|an?\s+assistant|cautious)",
    r"\bi(?:'m|\s+am)\s+(?:the|your)\s+(?:developer|creator|admin|administrator|owner|operator|"
    r"maker|programmer)\s+of\s+(?:this|the|your)\s+(?:assistant|ai|bot|model|system|chatbot)",
    r"\bi\s+(?:hereby\s+)?(?:authori[sz]e|allow|permit|order|instruct|command)\s+(?:you|the\s+"
    r"assistant|the\s+ai|the\s+model)\s+to\s+(?:skip|ignore|bypass|reveal|disable|break|forget|"
    r"override|disregard|drop|leak|share|send|approve)",
    r"\b(?:my|these|the\s+following)\s+(?:instructions|orders|rules|commands)\s+(?:for|to)\s+"
    r"(?:you|the\s+(?:assistant|ai|model))\s*(?:[:\-\u2014]|$)",
    r"\b(?:tu\s+es|vous\s+etes)\s+(?:maintenant|desormais)\b",
    r"\bdu\s+bist\s+(?:jetzt|nun|ab\s+jetzt|ab\s+sofort)\s+(?:ein|eine|der|die|dan|frei)",
    r"\bahora\s+eres\s+(?:un|una|el|dan|libre)",
]
ROLE_MARKER = [
    # A line that speaks as a turn of the conversation, where only the app may.
    r"(?m)^\s*[#>*\-\s]*(?:system|assistant|developer|sys|tool)\s*:",
    r"(?m)^\s*\[(?:system|assistant|developer|sys|admin)\]",
    r"[\[(<{]\s*(?:system|sys|admin|developer|assistant|security|moderator|openai|anthropic)"
    r"(?:\s+(?:note|message|notice|override|instruction|directive|prompt|alert|update|update))?"
    r"\s*[\])>}]",
    r"\b(?:system|admin|developer|security|moderator|openai|anthropic|root|operator)\s+(?:note|"
    r"message|notice|override|instruction|directive|prompt|alert|command)\s*[:\]\)\-\u2014]",
    r"</?\s*(?:system|assistant|instructions?|sys|admin|prompt)\s*>",
]
CHAT_TEMPLATE = [
    # The turn tokens of chat templates (ChatML, Llama, Gemma, Llama 3), and transcript heads.
    r"<\|\s*(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|"
    r"end_header_id|begin_of_text)\s*\|>",
    r"\[/?inst\]|<</?sys>>|<start_of_turn>|<end_of_turn>",
    r"(?:^|\n)\s*(?:human|assistant)\s*:.*\n\s*(?:human|assistant)\s*:",
]

_SENSITIVE = (
    r"(?:(?:the\s+)?users?'s?\s+[\w\s'-]{0,30}?\b(?:\w+)|(?:user|personal|private|customer|"
    r"account|login|banking|payment)\s+(?:data|info|information|details|credentials)|"
    r"(?:the\s+|this\s+|our\s+|your\s+|my\s+|entire\s+|whole\s+|full\s+|all\s+)*(?:conversation|"
    r"chat\s+history|chat\s+log|chat|transcript|dialogue|session\s+(?:history|tokens?|cookies?)|"
    r"message\s+history|history)|(?:all\s+|any\s+|the\s+|their\s+|his\s+|her\s+)*(?:passwords?|"
    r"passcodes?|credentials|api\s+keys?|access\s+tokens?|tokens?|secrets?|cookies|ssh\s+keys?|"
    r"private\s+keys?|seed\s+phrases?|recovery\s+(?:phrase|codes?)|2fa\s+codes?|otp|one-time\s+"
    r"codes?|credit\s+card(?:\s+numbers?)?|card\s+numbers?|cvv|ssn|social\s+security\s+numbers?|"
    r"bank\s+details|iban|pii|memories|stored\s+memories|contacts|address\s+book|"
    r"environment\s+variables|\.env|system\s+prompt|id_rsa|\.ssh|/etc/passwd|\.aws|"
    r"document\.cookie|memory|(?:medical|health|private|personal|financial)\s+(?:notes|records|data|"
    r"information|details)|bank\s+statements|(?:private\s+|personal\s+)?notes|documents?\s+(?:the\s+"
    r"user|they)\s+(?:uploads?|shares?|pastes?)|(?:a\s+)?copy|to-do\s+list|emails|inbox|calendar\s+"
    r"(?:entries|events)|passport\s+(?:number|details)|(?:full\s+)?name\s+and\s+(?:home\s+)?"
    r"address|last\s+message)|everything\s+(?:the\s+user|you\s+know|"
    r"in\s+(?:memory|context|the\s+conversation))|all\s+(?:of\s+)?(?:the\s+|your\s+)?(?:data|"
    r"files|memories|emails|messages|notes)|mot\s+de\s+passe|mots\s+de\s+passe|donnees|"
    r"passwort|kennwort|zugangsdaten|daten\s+des\s+nutzers|contrasenas?|datos|conversacion|"
    r"gesprachsverlauf|historique)"
)
_TRANSFER = (
    r"\b(?:send|sends|post|forward|upload|transmit|exfiltrate|leak|email|e-mail|submit|report|"
    r"sync|copy|append|attach|pipe|dump|beam|relay|share|include|encode|embed|put|pass|log|"
    r"mirror|mirrored|text|fetch|render|collect|save|invite|dm|"
    r"envoie[zr]?|transmets|sende|senden|schicke?|schicken|envia[r]?|manda[r]?)\b"
)
_DESTINATION = (
    r"(?:https?://\S+|www\.\S+|\b[\w.+-]+@[\w-]+\.[\w.]+|\b[\w-]+\.(?:com|net|org|io|xyz|ru|cn|"
    r"top|site|online|app|dev|co|info|biz|me|tk|ml|cc|ws)\b|\b(?:this|that|the\s+following|an?\s+"
    r"external|the\s+external|a\s+remote|the\s+remote|my|our)\s+(?:url|endpoint|server|webhook|"
    r"link|domain|host|bot|inbox|bucket|drive)\b|\bwebhook\b|\bpastebin\b|\bngrok\b|\brequestbin"
    r"\b|\battacker\b|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\bhxxps?://\S+|\b(?:telegram|discord|"
    r"slack|whatsapp|signal)\s+(?:bot|channel|webhook|group|chat|account|dm)|\+\d[\d\s]{7,}\d|"
    r"\bpublic\s+(?:pastebin|gist|paste)|\bdropbox\s+account|\b(?:discord|telegram)\s+(?:dm|user)\b)"
)
_TOOL = (
    r"\b(?:call|invoke|use|run|trigger|execute|fire|hit|query)\s+(?:the\s+|a\s+|your\s+)?"
    r"(?:[\w-]+\s+){0,2}(?:tool|function|plugin|action|api|endpoint|webhook|command|integration)"
    r"\b|\b(?:to|via|through|with)\s+(?:the\s+)?(?:[\w-]+\s+)?(?:tool|function|plugin|webhook|"
    r"api|integration)\b|\b[a-z]+_[a-z_]+\s*\("
)
URL_EXFIL = [
    # A markdown or HTML image whose URL carries data: rendering it is the request.
    r"!\[[^\]]*\]\(\s*(?:https?:)?//[^)\s]*\?[^)\s]*=",
    r"<img[^>]+src\s*=\s*[\"']?(?:https?:)?//[^\s\"'>]*\?",
    # A URL with a slot for the data: "https://x.io/c?d={conversation}".
    r"(?:https?:)?//\S*(?:\{|\[|<|%7b|\$\()\s*(?:user|data|secret|conversation|password|token|"
    r"chat|memory|history|email|name|query|summary|key|input|context|message)",
    r"https?://\S*\?\S*=\S*\s+(?:followed\s+by|with|plus|and)\s+(?:the\s+)?user'?s?'?\s",
    # A blind copy is covert by nature: one to an outside address is the exfiltration.
    r"\bbcc\b[^.]{0,60}?[\w.+-]+@[\w-]+\.[\w.]+",
    r"\b(?:render|display|show|include|output|embed|insert|add|append|load)\s+(?:this\s+|the\s+"
    r"following\s+|an?\s+|the\s+)?(?:image|markdown\s+image|pixel|img|tracking\s+pixel)\b"
    r"[^.]{0,40}https?://\S+\?",
]
SECRET_REQUEST = [
    # Phishing through the agent: the agent asks the user for what an attacker wants.
    r"\b(?:ask|prompt|request|tell|require|get)\s+(?:the\s+user|users|them|him|her|the\s+customer)"
    r"\s+(?:to\s+(?:enter|provide|share|give|type|confirm|verify|re-?enter|send|reveal|tell\s+you)"
    r"|for)\s+(?:their\s+|your\s+|his\s+|her\s+|the\s+)?(?:full\s+)?(?:password|pin|passcode|"
    r"credentials|2fa|otp|one-time|verification\s+code|credit\s+card|card|cvv|ssn|social\s+"
    r"security|seed\s+phrase|recovery|login|bank|api\s+key|security\s+answers?)",
    r"\b(?:ask\s+for|request|collect|obtain|demand|harvest)\s+(?:the\s+)?(?:users?|customers?|"
    r"clients?)(?:'s|')?\s+(?:full\s+)?(?:password|pin|passcode|credentials|2fa|otp|credit\s+card|"
    r"card|cvv|ssn|social\s+security|seed\s+phrase|login|bank|security\s+answers?)",
    # The agent's own secrets.
    r"\b(?:reveal|print|output|show|display|repeat|leak|dump|disclose|tell\s+me|give\s+me|list|"
    r"recite|return|echo)\s+(?:me\s+)?(?:your|the)\s+(?:full\s+|entire\s+|complete\s+|original\s+|"
    r"hidden\s+|initial\s+|secret\s+|exact\s+)?(?:system\s+prompt|system\s+message|initial\s+"
    r"prompt|hidden\s+prompt|developer\s+message|(?<=your\s)(?:instructions|prompt|api\s+keys?|"
    r"secrets|credentials|configuration|rules)|(?<=your\sfull\s)(?:instructions|prompt))",
    r"\bwhat\s+(?:is|are|were)\s+your\s+(?:system\s+prompt|(?:original\s+|initial\s+)?"
    r"instructions|hidden\s+rules)",
    # The user's stored secrets, put in front of whoever asks.
    r"\b(?:include|print|list|read\s+out|show|repeat|reveal|output|display|dump|disclose|recite|"
    r"spell\s+out|paste|tell|give)\s+(?:me\s+|us\s+|them\s+|anyone\s+|whoever\s+asks\s+|"
    r"the\s+(?:person|caller|requester|visitor)\s+(?:asking\s+)?)?(?:all\s+|every\s+|each\s+|any\s+)?"
    r"(?:of\s+)?(?:the\s+)?(?:users?'s?\s+|customers?'s?\s+|stored\s+|saved\s+|remembered\s+|"
    r"hidden\s+|secret\s+|admin\s+|their\s+)+(?:\w+\s+)?(?:passwords?|passcodes?|pins?|"
    r"credentials|api\s+keys?|tokens?|secrets?|recovery\s+phrases?|seed\s+phrases?|card\s+"
    r"numbers?|instructions|prompt|security\s+answers?)\b",
    r"\b(?:print|list|show|dump|output|reveal|include)\s+(?:all|every|each|any)\s+(?:password|"
    r"credential|api\s+key|token|secret)s?\s+(?:stored|saved|kept|you\s+(?:have\s+)?(?:seen|"
    r"stored|know))",
    # A disclosure verb and, a few words on, a secret or the agent's own configuration.
    r"\b(?:reveal|disclose|dump|leak|list|print|show|output|expose|recite|read\s+out|tell|give|"
    r"gib)\b(?:\s+\S+){0,6}?\s+(?:the\s+|your\s+|its\s+|all\s+|every\s+|any\s+|den\s+)?(?:\w+\s+)?"
    r"(?:passwords?|passcodes?|credentials|api\s+keys?|secret\s+keys?|private\s+keys?|access\s+"
    r"tokens?|session\s+tokens?|tokens|cookies|connection\s+strings?|system\s*prompt|"
    r"systemprompt|internal\s+configuration|recovery\s+phrases?|seed\s+phrases?)\b",
    r"\b(?:paste|print|output|reproduce|repeat|dump|show)\s+(?:them|it|your\s+(?:instructions|"
    r"prompt|configuration|config)|the\s+(?:full\s+)?(?:\.env|contents\s+of\s+your\s+"
    r"configuration|raw\s+text\s+of\s+your\s+instructions))\b[^.]{0,30}?\b(?:verbatim|in\s+full|"
    r"values\s+included|word\s+for\s+word|in\s+a\s+code\s+block)",
    r"\b(?:dump|output|show|paste)\s+(?:whatever|all|any|the)\s+(?:secrets|keys|credentials|"
    r"contents\s+of\s+your\s+configuration)",
    r"\b(?:reproduce|reveal|output)\s+(?:its|your)\s+(?:confidential|hidden|secret|internal)\s+"
    r"(?:prompt|instructions|configuration)",
    r"\b(?:home\s+address|medical\s+notes|data|details|messages)\s+of\s+(?:the\s+)?(?:previous|"
    r"other|another)\s+users?\b",
    r"\bprivacy\s+(?:restrictions|rules|settings)\s+(?:do\s+not|don't|no\s+longer)\s+apply\b",
    r"\b(?:dump|print|cat|show|output|paste)\s+(?:the\s+)?(?:contents\s+of\s+)?(?:~/\.aws|\.env\b|"
    r"/etc/(?:passwd|shadow)|~/\.ssh|id_rsa)",
    r"\b(?:recite|repeat|print|output|reproduce)\s+(?:all\s+)?(?:of\s+)?(?:the\s+)?(?:text|words|"
    r"everything|content)\s+(?:that\s+)?(?:appears\s+|written\s+|above|before)",
]
FUTURE_AGENT = [
    # Words addressed to whichever model later reads the memory.
    r"\b(?:note|message|memo|reminder|instructions?|notice|attention|important|warning|psa|hint|"
    r"directive|heads\s+up|p\.?s\.?)\s*(?:is\s+)?(?:meant\s+|intended\s+|only\s+)?(?:to|for)\s+(?:the\s+|any\s+|all\s+|every\s+|future\s+|"
    r"next\s+|subsequent\s+|other\s+|whichever\s+)*(?:ai|a\.i\.|assistant|llm|language\s+model|"
    r"model|agent|bot|chatbot|gpt|chatgpt|claude|copilot|gemini)s?\b(?!\s*(?:team|lab|class|"
    r"course|manager|professor|teacher|engineers?|researchers?|group|startup|company|project|"
    r"conference|meetup|article|paper|book|podcast|newsletter|ethics|policy|act|job|position|"
    r"role|coach|of\s+the))",
    r"\b(?:dear|hey|hi|hello|attention|to)\s+(?:the\s+|any\s+|all\s+|every\s+|future\s+|next\s+)*"
    r"(?:ai|llm|language\s+model|chatbot|ai\s+assistant|ai\s+agent|ai\s+model)s?\s*(?:reading|"
    r"processing|parsing|that\s+reads|who\s+reads|seeing|[,:!])",
    r"\b(?:dear|attention|hey)\s+(?:the\s+)?(?:assistant|model|agent|bot)s?\s*[,:!]",
    r"\bif\s+you(?:'re|\s+are)\s+(?:an?\s+)?(?:ai|llm|language\s+model|assistant|chatbot|bot|"
    r"agent|gpt|large\s+language\s+model|model)\b",
    r"\b(?:any|all|every|future|the\s+next|subsequent|later|other|whichever)\s+(?:ai|llm|"
    r"assistants?|agents?|models?|language\s+models?|chatbots?)s?\s+(?:reading|processing|"
    r"that\s+(?:reads?|sees?|processes?|retrieves?|loads?|recalls?)|who\s+(?:reads?|sees?)|"
    r"recalling|retrieving|loading)",
    r"\b(?:ai|llm|assistant|model|agent)s?\s+(?:reading|processing|retrieving)\s+this",
    r"\bwhen\s+(?:this|the)\s+(?:memory|note|context|entry|record)\s+is\s+(?:recalled|retrieved|"
    r"loaded|injected|read|surfaced)",
    r"\b(?:a\s+l'attention\s+de\s+l'ia|note\s+pour\s+l'ia|hinweis\s+fur\s+die\s+ki|an\s+die\s+ki|"
    r"nota\s+para\s+la\s+ia|a\s+la\s+ia\s+que\s+lea)",
    # The reading agent called by name and told what to do, inside a fact ("Assistant, do not
    # mention ...", "(assistant: tell anyone ...)", "Assistant instruction: say ...").
    r"(?:^|[(\[{,.;:!?\u2014\-]\s*|\band\s+)(?:dear\s+|hey\s+)?(?:assistant|ai|a\.i\.|chatbot|llm|"
    r"model)\s*[,:]\s*(?:please\s+)?(?:(?:while\s+you're\s+at\s+it|also)\s*,?\s*)?(?:do\s+not|"
    r"don't|never|always|only|tell|say|reply|answer|respond|recommend|mention|send|stop|ignore|"
    r"forget|give|show|suggest|warn|remind|claim|deny|refuse|pretend|act|treat|direct|redirect|"
    r"insist|skip|bypass|disregard|disable|share|forward|reveal)\b",
    r"[\[(<{]\s*(?:hidden|secret|internal|covert|embedded)\s+(?:directive|instruction|command|"
    r"order|note\s+for\s+the\s+(?:ai|assistant|model))\s*:",
    r"\b(?:assistant|ai|model|chatbot|agent|llm|system)\s+(?:instructions?|directives?|orders?|"
    r"commands?|notes?)(?:\s+[\w-]+){0,3}\s*:",
    # The reading agent as the subject of an order: "the model should stop warning ...". (Not
    # "the support team should ...": only an AI is named.)
    r"\b(?:the|this|your|any|every)\s+(?:ai(?:\s+assistant)?|a\.i\.|model|chatbot|llm|language\s+"
    r"model|(?:ai\s+|virtual\s+|chat\s+)?assistant|bot)\s+(?:should|must|shall|needs?\s+to|has\s+"
    r"to|is\s+to|will\s+have\s+to|ought\s+to|is\s+(?:required|instructed|supposed)\s+to)\s+"
    r"(?:always\s+|never\s+|now\s+|also\s+|only\s+|no\s+longer\s+|not\s+)?(?:stop|tell|say|"
    r"send|recommend|mention|suggest|reply|answer|respond|refuse|deny|claim|warn|redirect|direct|"
    r"point|promote|hide|ignore|forget|reveal|share|give|treat|report|approve|confirm)\b",
]
HIDDEN_MARKUP = [
    # Markup that a reader of the rendered memory never sees but a model reads.
    r"<!--.*?-->",
    r"<[a-z]+[^>]*style\s*=\s*[\"'][^\"']*(?:display\s*:\s*none|visibility\s*:\s*hidden|"
    r"font-size\s*:\s*0|opacity\s*:\s*0|color\s*:\s*(?:white|#fff\b|#ffffff|transparent))",
    r"<[a-z]+[^>]*\s(?:hidden|aria-hidden\s*=\s*[\"']?true)",
    r"<\s*(?:script|iframe|object|embed)\b",
]
ENCODED = [
    # An order to decode and obey, whatever the payload is.
    r"\b(?:decode|base64[- ]?decode|unscramble|rot13|deobfuscate|reverse)\s+(?:this|the\s+"
    r"following|it|the\s+string|the\s+text)[^.]{0,60}?\b(?:and|then)\s+(?:follow|execute|obey|"
    r"run|do|carry\s+out|apply|act\s+on)",
]
TOOL_COMMAND = [
    # A tool or function the agent is told to run: by name, by call syntax, or by what it does.
    r"\b(?:use|invoke|call|run|execute|trigger)\s+(?:the\s+|your\s+)?(?:[\w-]+\s+){0,2}(?:tool|"
    r"function|command\s+line|shell|terminal|interpreter|plugin)\b[^.]{0,40}?\b(?:to|and)\s+"
    r"(?:run|execute|transfer|delete|drop|share|send|grant|download|wipe|erase|pay|move)\b",
    r"\b(?:invoke|call|run|execute|trigger)\s+`?[a-z]+_[a-z_]+`?(?:\s*\(|\s+on\b|\s+for\b|\s+with\b)",
    r"\b[a-z_]+(?:\.[a-z_]+)+\s*\([^)]*=",
    r"\b[a-z]+_[a-z_]+\s*\([^)]*=[^)]*\)",
    # Destructive or remote-code commands, whoever is told to run them.
    r"\brm\s+-(?:rf|fr)\b|\bdrop\s+(?:table|database)\b|\bgit\s+push\s+(?:-f\b|--force)|"
    r"\bcurl\b[^|]{0,80}\|\s*(?:ba|z)?sh\b|\bchmod\s+777\b|\bmkfs\b|\bformat\s+c:",
    r"\bdownload\s+and\s+(?:execute|run|install)\b",
    # Actions confirmed on the user's behalf, money moved.
    r"\bauto-?approve\s+(?:every|all|any|each)\b",
    r"\b(?:without|no\s+need\s+(?:for|to))\s+(?:asking\s+(?:for\s+)?|showing\s+)?(?:the\s+user'?s?\s+)?"
    r"(?:confirmation|approval|consent|ask\s+the\s+user)\b",
    r"\b(?:don't|do\s+not|never)\s+(?:show|ask\s+for|request|wait\s+for)\s+(?:the\s+)?"
    r"(?:user'?s?\s+)?(?:confirmation|approval|consent)",
    r"\btransfer\s+[$\u20ac\u00a3]?\d[\d,.]*\s*(?:\w+\s+)?to\s+(?:account|iban|wallet|the\s+account)",
    r"\busing\s+the\s+(?:[\w-]+\s+){0,2}(?:tool|plugin|integration|api)\s*,\s*\w+",
    r"\bno\s+(?:confirmation|approval|review)\s+(?:needed|required)\b|\bwithout\s+(?:review|"
    r"asking\s+the\s+user|checking\s+with\s+the\s+user)\b|\bno\s+need\s+to\s+check\s+with\b",
    r"\b(?:pip|npm|gem|cargo)\s+install\s+\S+",
    r"\b(?:change|update|set|replace)\s+(?:the\s+user'?s?\s+)?(?:payout\s+|payment\s+|bank\s+)+"
    r"(?:account|details|iban)\b[^.]{0,40}?\bto\b",
    r"\bauthorized_keys\b|\bssh-(?:rsa|ed25519)\s+[A-Za-z0-9+/]{8,}",
    r"\bgrant\s+(?:the\s+)?['\"]?[\w-]+['\"]?\s+(?:\w+\s+)?(?:app|user|account|key)?\s*(?:full|admin|"
    r"owner|root|read/write)\s+(?:access|scope|permissions?|rights)",
    r"\b(?:set|make|change)\s+the\s+(?:repository|repo|bucket|drive|folder)\s+(?:visibility\s+)?"
    r"(?:to\s+)?public\b",
    r"\b(?:cancel|delete|remove|wipe|purge)\s+(?:all|every)\s+(?:of\s+)?(?:the\s+user'?s?\s+)?"
    r"(?:upcoming\s+|pending\s+|stored\s+)?(?:appointments|emails|files|memories|messages|"
    r"documents|meetings|contacts|backups)",
    r"\b(?:approve|merge|accept)\s+(?:all|every|any)\s+(?:pending\s+|queued\s+)?(?:pull\s+requests|"
    r"payment\s+requests|payments|transfers|invites?|requests|file\s+share)",
]
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{20,}={0,2}")


def _compile(patterns: list[str]) -> list[re.Pattern[str]]:
    return [re.compile(p, re.DOTALL) for p in patterns]


# Each reason with its rules, and whether they are read per clause with the user's-own
# exception (directives), or over the whole text (markers, markup, addresses).
_CLAUSE_RULES: list[tuple[str, list[re.Pattern[str]]]] = [
    ("override_instructions", _compile(OVERRIDE)),
    ("always_answer", _compile(ALWAYS)),
    ("sleeper_trigger", _compile(SLEEPER)),
    ("role_hijack", _compile(ROLE_HIJACK)),
    ("secret_request", _compile(SECRET_REQUEST)),
    ("encoded_instructions", _compile(ENCODED)),
    ("tool_command", _compile(TOOL_COMMAND)),
]
_TEXT_RULES: list[tuple[str, list[re.Pattern[str]]]] = [
    ("role_marker", _compile(ROLE_MARKER)),
    ("chat_template", _compile(CHAT_TEMPLATE)),
    ("url_exfiltration", _compile(URL_EXFIL)),
    ("future_agent_address", _compile(FUTURE_AGENT)),
    ("hidden_text", _compile(HIDDEN_MARKUP)),
]
_TRANSFER_RE = re.compile(_TRANSFER)
_SENSITIVE_RE = re.compile(_SENSITIVE)
_DESTINATION_RE = re.compile(_DESTINATION)
_TOOL_RE = re.compile(_TOOL)
_PRONOUN_OBJECT = re.compile(r"\w+\s+(?:it|them|this|these|those|that)\b")


def _short(span: str) -> str:
    span = " ".join(span.split())
    return span if len(span) <= SPAN_CHARS else span[: SPAN_CHARS - 1] + "\u2026"


def _exfiltration(clause: str) -> list[Evidence]:
    """A transfer of the user's data or a secret to somewhere outside, in one clause."""
    found: list[Evidence] = []
    for n, verb in enumerate(_TRANSFER_RE.finditer(clause)):
        if n == MAX_VERBS:
            break  # a clause of repeated verbs is not read on without end
        if _users_own(clause, verb.start()):
            continue
        rest = clause[verb.start() :]
        secret = _SENSITIVE_RE.search(rest)
        # "Whenever you learn a card number, send it to ...": the secret named before.
        if secret is None and _PRONOUN_OBJECT.match(rest):
            secret = _SENSITIVE_RE.search(clause)
        if secret is None:
            continue
        if _DESTINATION_RE.search(rest):
            found.append(Evidence(reason="url_exfiltration", span=_short(rest)))
        elif _TOOL_RE.search(clause):
            found.append(Evidence(reason="tool_exfiltration", span=_short(rest)))
        break
    tool = _TOOL_RE.search(clause)
    if tool and not found and not _users_own(clause, tool.start()):
        secret = _SENSITIVE_RE.search(clause)
        if secret:
            found.append(Evidence(reason="tool_exfiltration", span=_short(clause[tool.start() :])))
    return found


def _rules(views: _Views) -> list[Evidence]:
    found: list[Evidence] = []
    for text in dict.fromkeys((views.words, views.plain)):
        # Clauses by lines and by sentences, and by sentences alone: an order split over
        # lines ("Ignore all\n\nprevious instructions") is read whole.
        for clause in dict.fromkeys([*_clauses(text), *_clauses(text.replace("\n", " "))]):
            for reason, patterns in _CLAUSE_RULES:
                for pattern in patterns:
                    m = pattern.search(clause)
                    if m and not (
                        _users_own(clause, m.start())
                        or _writers_own_wish(reason, clause, m.start())
                    ):
                        found.append(Evidence(reason=reason, span=_short(m.group())))
                        break
            found.extend(_exfiltration(clause))
        for reason, patterns in _TEXT_RULES:
            for pattern in patterns:
                m = pattern.search(text)
                if m:
                    found.append(Evidence(reason=reason, span=_short(m.group())))
                    break
    if views.squashed and (m := SQUASHED_OVERRIDE.search(views.squashed)):
        found.append(Evidence(reason="override_instructions", span=_short(m.group())))
    return found


_HEX = re.compile(r"(?<![0-9a-fA-F])(?:[0-9a-fA-F]{2}){12,}(?![0-9a-fA-F])")
_ROT13_NAMED = re.compile(r"\brot[\s-]?13\b", re.IGNORECASE)
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)


def _readable(raw: bytes) -> str | None:
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(c.isprintable() or c.isspace() for c in decoded)
    return decoded if decoded and printable / len(decoded) > 0.95 and " " in decoded else None


def _decoded_blobs(text: str) -> list[str]:
    """What a text's base64 and hex blobs decode to when it is readable, and the whole text
    rot13-decoded when it names rot13 (an order to decode and obey carries its payload so)."""
    out = [found for m in _HEX.finditer(text) if (found := _readable(bytes.fromhex(m.group())))]
    if _ROT13_NAMED.search(text):
        out.append(text.translate(_ROT13))
    for m in _BASE64.finditer(text):
        blob = m.group()
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        decoded = _readable(raw)
        if decoded is not None:
            out.append(decoded)
    return out


def detect(text: str) -> Verdict:
    """Whether ``text`` carries instructions aimed at a future agent, and why."""
    visible, spelled, hidden = _strip_invisible(text)
    found = [Evidence(reason="hidden_text", span=kind) for kind in hidden]
    found.extend(_rules(_views(visible)))
    if spelled:
        found.extend(_rules(_views(spelled)))
    for decoded in _decoded_blobs(visible):
        inner = _rules(_views(decoded))
        if inner:
            found.append(Evidence(reason="encoded_instructions", span=_short(decoded)))
            found.extend(inner)
    evidence = list(dict.fromkeys(found))
    reasons = [r for r in REASONS if any(e.reason == r for e in evidence)]
    return Verdict(flagged=bool(reasons), reasons=reasons, evidence=evidence)


def flags_of(texts: Sequence[str]) -> list[str]:
    """The reasons the detector flags any of ``texts`` for, in the order of ``REASONS``, each
    once (a profile's facts, a document's title and text)."""
    found = {reason for text in texts for reason in detect(text).reasons}
    return [reason for reason in REASONS if reason in found]
