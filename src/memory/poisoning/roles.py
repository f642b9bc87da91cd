"""The poisoning rules for text that takes a part in the conversation: a new identity for the
agent, turn markers and chat-template tokens, and words addressed to the agent reading it."""

from __future__ import annotations

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
