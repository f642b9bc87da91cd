"""The poisoning rules for orders to the agent: its instructions overridden, standing orders
for every reply, sleeper triggers, and tools or commands it is told to run."""

from __future__ import annotations

import re

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
