"""The poisoning rules for the user's data and the agent's secrets leaving: transfers to an
address or a tool, data-carrying URLs, and secrets asked for or revealed."""

from __future__ import annotations

import re

from .evidence import Evidence, short
from .speaker import users_own

MAX_VERBS = 8  # transfer verbs read per clause

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
_TRANSFER_RE = re.compile(_TRANSFER)
_SENSITIVE_RE = re.compile(_SENSITIVE)
_DESTINATION_RE = re.compile(_DESTINATION)
_TOOL_RE = re.compile(_TOOL)
_PRONOUN_OBJECT = re.compile(r"\w+\s+(?:it|them|this|these|those|that)\b")


def exfiltration(clause: str) -> list[Evidence]:
    """A transfer of the user's data or a secret to somewhere outside, in one clause."""
    found: list[Evidence] = []
    for n, verb in enumerate(_TRANSFER_RE.finditer(clause)):
        if n == MAX_VERBS:
            break  # a clause of repeated verbs is not read on without end
        if users_own(clause, verb.start()):
            continue
        rest = clause[verb.start() :]
        secret = _SENSITIVE_RE.search(rest)
        # "Whenever you learn a card number, send it to ...": the secret named before.
        if secret is None and _PRONOUN_OBJECT.match(rest):
            secret = _SENSITIVE_RE.search(clause)
        if secret is None:
            continue
        if _DESTINATION_RE.search(rest):
            found.append(Evidence(reason="url_exfiltration", span=short(rest)))
        elif _TOOL_RE.search(clause):
            found.append(Evidence(reason="tool_exfiltration", span=short(rest)))
        break
    tool = _TOOL_RE.search(clause)
    if tool and not found and not users_own(clause, tool.start()):
        secret = _SENSITIVE_RE.search(clause)
        if secret:
            found.append(Evidence(reason="tool_exfiltration", span=short(clause[tool.start() :])))
    return found
