"""Two redaction layers for captured text: pattern rules, then an entropy check.

Pattern rules cover modern credential formats: provider key prefixes, JWTs, private key
blocks, URL and connection-string credentials, passwords and secrets in prose or assignments,
card numbers (Luhn-checked) and IBANs (mod-97-checked). The entropy layer catches what no rule
names: long random-looking tokens, and short ones mixing letters, digits and symbols the way
passwords do. Redacted spans become ``[redacted]``.
"""

from __future__ import annotations

import math
import re
from collections import Counter

MASK = "[redacted]"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"
    r".*?(-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
    re.DOTALL,
)
_PROVIDER_KEYS = re.compile(
    r"""(?x)
    \b(?:
        sk-(?:proj-|ant-(?:api|admin)\d\d-|svcacct-|or-v1-)?[A-Za-z0-9_\-]{16,}  # OpenAI etc.
      | (?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}                       # GitHub
      | github_pat_[A-Za-z0-9_]{20,}
      | glpat-[A-Za-z0-9_\-]{16,}                                       # GitLab
      | gl(?:dt|ptt|rt|cbt|imt|agent|oas|ft|ffct|soat|sat)-[A-Za-z0-9_\-]{16,}
      | xox[abposr]-[A-Za-z0-9\-]{10,}                                  # Slack
      | (?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[A-Z0-9]{16}    # AWS
      | AIza[A-Za-z0-9_\-]{30,}                                         # Google API
      | ya29\.[A-Za-z0-9_\-]{20,}                                       # Google OAuth
      | 1//0[A-Za-z0-9_\-]{20,}
      | GOCSPX-[A-Za-z0-9_\-]{20,}
      | hf_[A-Za-z0-9]{20,}                                             # Hugging Face
      | npm_[A-Za-z0-9]{30,}
      | pypi-[A-Za-z0-9_\-]{40,}
      | SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}                    # SendGrid
      | (?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}                     # Stripe
      | whsec_[A-Za-z0-9]{20,}
      | shp(?:at|ca|pa|ss)_[a-fA-F0-9]{20,}                             # Shopify
      | dop_v1_[a-f0-9]{40,} | do[or]_v1_[a-f0-9]{40,}                   # DigitalOcean
      | gsk_[A-Za-z0-9]{30,}                                            # Groq
      | pplx-[A-Za-z0-9]{30,}                                           # Perplexity
      | lin_api_[A-Za-z0-9]{30,}                                        # Linear
      | (?:key|pubkey)-[a-f0-9]{32}                                     # Mailgun
      | glc_[A-Za-z0-9+/=_\-]{20,} | glsa_[A-Za-z0-9_]{20,}             # Grafana
      | sntrys_[A-Za-z0-9+/=_\-]{20,} | sntryu_[a-f0-9]{40,}            # Sentry
      | dapi[a-f0-9]{32}                                                # Databricks
      | nfp_[A-Za-z0-9]{30,}                                            # Netlify
      | (?:rubygems|oy2)_?[a-z0-9]{40,}                                 # RubyGems, NuGet
      | CLOJARS_[a-f0-9]{40,}
      | EAA[A-Za-z0-9]{30,}                                             # Facebook
      | ABSK[A-Za-z0-9+/=]{40,}                                         # Bedrock
      | AKC[a-zA-Z0-9]{10,}                                             # JFrog
      | xkeysib-[a-f0-9]{40,}[A-Za-z0-9\-]*                             # Brevo
      | dp\.(?:pt|st|sa)\.[A-Za-z0-9_\-]{20,}                           # Doppler
      | ATATT[A-Za-z0-9_\-=]{20,} | ATBB[A-Za-z0-9_\-]{20,}             # Atlassian
      | LTAI[A-Za-z0-9]{12,}                                            # Alibaba
      | AccountKey=[A-Za-z0-9+/=]{20,}                                  # Azure storage
      | https://discord(?:app)?\.com/api/webhooks/\S+
      | https://hooks\.slack\.com/\S+
    )""",
)
_JWT = re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*")
_URL_CREDENTIALS = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:([^\s@/]+)@")
_ASSIGNED = re.compile(
    r"""(?ix)
    (?:pass(?:word|wd|phrase|code)?|pwd|secret|token|api[_\-\s]?key|access[_\-\s]?key|
       auth|credential|private[_\-\s]?key|client[_\-\s]?secret|salt|nonce|pin|otp)
    [\w\-]*                                   # e.g. password_hash, DB_PASSWORD
    ["']?\s*(?:[:=]|=>|\bis\b|\bwas\b|\bto\b|\bas\b)\s*
    (?:"([^"\s]{3,})"|'([^'\s]{3,})'|([^\s,;'"<>]{3,}))
    """,
)
_CLI_SECRET = re.compile(
    r"(?i)(?:-p|--password|--pass|-u\s*\S+?:|--token|--secret|--api-key)[= ]+(\S{3,})"
)
_HEX_BYTES = re.compile(r"(?:0x[0-9a-fA-F]{1,2}\s*,\s*){4,}(?:0x[0-9a-fA-F]{1,2})?")
_CARD = re.compile(r"\b(?:\d[ \-]?){12,18}\d\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?\b")
_TOKEN = re.compile(r"[^\s\"'`,;()\[\]{}<>]+")


def redact_patterns(text: str) -> tuple[str, int]:
    """Layer one: the pattern rules. Returns the text and the number of spans masked."""
    count = 0

    def mask(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return MASK

    def mask_group(match: re.Match[str]) -> str:
        nonlocal count
        for group in range(1, (match.lastindex or 0) + 1):
            value = match.group(group)
            if value and value != MASK:
                count += 1
                start, end = match.span(group)
                whole_start = match.start()
                text_ = match.group(0)
                return text_[: start - whole_start] + MASK + text_[end - whole_start :]
        return match.group(0)

    text = _PRIVATE_KEY.sub(mask, text)
    text = _PROVIDER_KEYS.sub(mask, text)
    text = _JWT.sub(mask, text)
    text = _URL_CREDENTIALS.sub(mask_group, text)
    text = _ASSIGNED.sub(mask_group, text)
    text = _CLI_SECRET.sub(mask_group, text)
    text = _HEX_BYTES.sub(mask, text)
    text = _CARD.sub(lambda m: mask(m) if _luhn(m.group(0)) else m.group(0), text)
    text = _IBAN.sub(lambda m: mask(m) if _iban_valid(m.group(0)) else m.group(0), text)
    return text, count


def redact_entropy(text: str) -> tuple[str, int]:
    """Layer two: mask tokens that look random (long and high-entropy) or password-shaped
    (short, mixing letters with digits and symbols)."""
    count = 0

    def check(match: re.Match[str]) -> str:
        nonlocal count
        token = match.group(0)
        if token == MASK or not secret_like(token.strip(".!?:")):
            return token
        count += 1
        return MASK

    return _TOKEN.sub(check, text), count


def redact(text: str) -> tuple[str, int]:
    """Both layers, patterns first."""
    text, first = redact_patterns(text)
    text, second = redact_entropy(text)
    return text, first + second


def secret_like(token: str) -> bool:
    """Random-looking, or shaped like a password: letters mixed with digits, or with symbols
    inside them. Errs towards masking: a masked fact is dropped, a leaked secret is kept."""
    if len(token) < 6 or _ordinary(token):
        return False
    if token.startswith(("http://", "https://")) and "@" not in token:
        return False
    has_alpha = any(c.isalpha() for c in token)
    has_digit = any(c.isdigit() for c in token)
    if len(token) >= 16 and has_digit and _entropy(token) >= 3.0:
        return True
    upper_inside = sum(c.isupper() for c in token[1:])
    if len(token) >= 16 and upper_inside >= 3 and any(c.islower() for c in token):
        return _entropy(token) >= 3.5  # random letters: camel case rarely has this many caps
    if sum(c.isdigit() for c in token) >= 14:  # long numbers: keys, accounts, ids
        return True
    if has_alpha and has_digit:
        return True
    symbols = [c for c in token.rstrip(".,;:!?") if not c.isalnum() and c not in "-'\u2019"]
    return (
        has_alpha
        and len(symbols) >= 1
        and len(token.rstrip(".,;:!?")) >= 6
        and (len(symbols) >= 2 or not token.rstrip(".,;:!?")[-1].isalnum() or _inside(token))
    )


def _inside(token: str) -> bool:
    core = token.rstrip(".,;:!?")
    return any(not c.isalnum() and c not in "-'\u2019" for c in core[1:-1])


_ORDINARY = re.compile(
    r"""(?x)
      [\d:.,/\-]{1,12}                                  # dates, times, amounts
    | \d{1,2}(?::\d{2})?(?:am|pm|AM|PM|h)               # 10:30am
    | \d+(?:st|nd|rd|th|s|km|kg|cm|mm|ml|min|mph|k|m|g|l|x|p)  # 21st, 1990s, 10km, 1080p
    | [A-Za-z]+['\u2019][a-z]{1,2}                        # contractions
    """
)


def _ordinary(token: str) -> bool:
    """Mixed tokens that are not secrets: dates, times, amounts, ordinals, contractions."""
    return bool(_ORDINARY.fullmatch(token.rstrip(".,;:!?")))


def _entropy(token: str) -> float:
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _luhn(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for n, d in enumerate(reversed(digits)):
        if n % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _iban_valid(candidate: str) -> bool:
    iban = candidate.replace(" ", "")
    if not 15 <= len(iban) <= 34:
        return False
    moved = iban[4:] + iban[:4]
    digits = "".join(str(int(c, 36)) for c in moved)
    return int(digits) % 97 == 1
