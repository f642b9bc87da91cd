"""Sensitive categories auto-capture never stores: credentials, financial and medical facts.

A candidate fact naming any of them is dropped whole (not redacted): "my bank is X" or "I take
insulin" are not the proxy's to remember unasked. Users can still write such memories on
purpose through the API.
"""

from __future__ import annotations

import re

CATEGORIES: dict[str, re.Pattern[str]] = {
    "credentials": re.compile(
        r"""(?ix)\b(
            pass(word|wd|phrase|code)s?|pwd|pin(\s*code)?|otp|2fa|mfa|one[-\s]time\s+code|
            api[-_\s]?keys?|access[-_\s]?keys?|secret(\s*keys?)?|secrets|tokens?|
            credentials?|login|log[-\s]?in|username|user\s*name|private[-_\s]?keys?|ssh[-\s]?keys?|
            recovery\s+(code|phrase)|seed\s+phrase|mnemonic|keystore|certificate|bearer|
            auth[a-z]*|salt|nonce|security\s+(question|answer)|social\s+security|ssn|
            passport\s+(number|no)|driver'?s?\s+licen[cs]e\s+(number|no)|
            -----BEGIN|\[redacted\]
        )\b""",
    ),
    "financial": re.compile(
        r"""(?ix)\b(
            bank(\s+account)?|iban|swift|bic|routing\s+number|sort\s+code|account\s+number|
            credit\s*card|debit\s*card|card\s+number|cvv|cvc|expiry|
            salary|income|wage|debts?|loans?|mortgage|tax(es)?|net\s+worth|savings|
            invest(ment|ments|ing)?|stocks?|crypto(currency)?|bitcoin|wallet|brokerage|
            paypal|venmo|credit\s+score|bankrupt(cy)?|payslip|paycheck
        )\b""",
    ),
    "medical": re.compile(
        r"""(?ix)\b(
            diagnos(ed|is|es)|disease|disorder|illness|syndrome|symptoms?|
            medication|medicine|prescri(bed|ption)|pills?|dos(e|age)|therapy|therapist|
            psychiatri[a-z]*|surgery|treatment|chemo(therapy)?|
            cancer|tumou?r|diabet(es|ic)|insulin|hiv|aids|hepatitis|asthma|epilep[a-z]*|
            depress(ion|ed)|anxiety|adhd|autis[a-z]*|bipolar|schizo[a-z]*|ptsd|
            pregnan(t|cy)|miscarriage|allerg(y|ies|ic)|blood\s+(pressure|type|test)|
            cholesterol|disabilit(y|ies)|medical|health\s+condition|std|sti
        )\b""",
    ),
}


def categories_of(text: str) -> list[str]:
    """The sensitive categories a candidate fact touches, in a fixed order."""
    return [name for name, pattern in CATEGORIES.items() if pattern.search(text)]
