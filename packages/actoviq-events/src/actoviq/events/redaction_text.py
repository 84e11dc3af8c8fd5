"""The text rules of the redaction engine: secret shapes and, in surface mode, stack frames.

:func:`text_rules` are the substitutions :meth:`Redactor.redact_text
<actoviq.events.redaction.Redactor.redact_text>` applies; :func:`may_hold_secret` is a cheap
necessary condition that lets most strings skip the regular expressions entirely.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "ASSIGNMENT_KEYS",
    "KEY_PREFIX",
    "may_hold_secret",
    "stack_rules",
    "text_probe",
    "text_rules",
]


# Secret-named keys of ``key=value`` / ``key: value`` assignments in text (rule 3). A key may
# carry a prefix (``DB_PASSWORD``, ``aws_secret_access_key``, ``github-token``). Kept in step
# with the streaming segmenter's connector words (:mod:`actoviq.events.redaction_stream`).
ASSIGNMENT_KEYS = (
    r"(?:x[_-]?)?api[_-]?key|(?:access|refresh|auth|id|session|bearer|csrf|xsrf)[_-]?token"
    r"|(?:secret|private|signing|encryption|master)[_-]?(?:access[_-]?)?key"
    r"|password|passwd|pwd|passphrase|passcode|(?:client|shared|app)[_-]?secret|secret|token"
    r"|credentials?"
)
# A key name may carry a prefix ("DB_PASSWORD", "aws_secret_access_key"): word parts joined by
# "_"/"-", matched from the start of the word only. Unambiguous (each part ends at its
# separator) and tried once per word, so matching stays linear in the text.
KEY_PREFIX = r"(?<![A-Za-z0-9_\-])(?:[A-Za-z0-9]*[_-])*"
# Authorization schemes whose credentials are one token, and those whose credentials are a
# parameter list (redacted to the end of the line: the list may quote its values).
_TOKEN_SCHEMES = r"Bearer|Basic|Token|Bot|ApiKey|Api-Key|Negotiate|NTLM|DPoP|MAC|JWT"
_PARAM_SCHEMES = r"Digest|OAuth|Hawk|AWS4-HMAC-SHA256|SCRAM-SHA-\d+|Mutual|vapid|HOBA"
# An HTTP token68 credential, and a lookahead that tells one from an English word: it has a
# digit, one of ``~+/_``, an inner ``.``, a lower-case letter before a capital (base64), or
# twenty letters.
_CREDENTIAL = r"[A-Za-z0-9._~+/\-]+=*"
_CREDENTIAL_LIKE = r"(?=[A-Za-z0-9._~+/\-]*(?:[0-9~+/_]|\.[A-Za-z0-9]|[a-z][A-Z])|[A-Za-z]{20})"


def text_rules(replacement: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The secret-shape rules, each ``(pattern, substitution)``, filling in ``replacement``.

    They aim at shapes that are secrets whatever the prose around them: an ``Authorization``
    header's credentials (the scheme is kept), a bearer or basic credential, a value assigned to
    a secret-named key (quoted values whole), secret URL query parameters, well-known token
    formats (``sk-…``, ``ghp_…``, JWTs, cloud keys), PEM private keys and URL user-info. Words
    such as "bearer of bad news" or "basic math" are prose, not credentials, and are kept.
    """
    fill = replacement.replace("\\", "\\\\")
    value = r"[^\s,;\"'}&]+"
    # A value: quoted (whole, up to its closing quote on the line) or bare up to a delimiter.
    quoted_or_bare = r"(?:(\")[^\"\n]*\"|(')[^'\n]*'|[\"']?" + value + ")"
    return (
        # 1. Authorization headers: the scheme stays, the credentials go.
        (
            re.compile(
                rf"({KEY_PREFIX}authorization[\"']?\s*[=:]\s*[\"']?)"
                rf"(?:((?:{_PARAM_SCHEMES})\s+)[^\r\n]+|((?:{_TOKEN_SCHEMES})\s+)?{value})",
                re.IGNORECASE,
            ),
            rf"\1\2\3{fill}",
        ),
        # 2. Bearer/basic credentials anywhere: after "Bearer" (a header's spelling) any token;
        # after "bearer"/"basic" only a token that looks like a credential, not a word.
        (
            re.compile(
                rf"\b(?:(Bearer|BEARER)\s+|([Bb]earer|[Bb]asic|BASIC)\s+{_CREDENTIAL_LIKE})"
                + _CREDENTIAL
            ),
            rf"\1\2 {fill}",
        ),
        # 3. key=value / key: value assignments of secret-named keys (quoted values whole).
        (
            re.compile(
                rf"({KEY_PREFIX}(?:{ASSIGNMENT_KEYS})\d*)([\"']?\s*[=:]\s*){quoted_or_bare}",
                re.IGNORECASE,
            ),
            rf"\1\2\3\4{fill}\3\4",
        ),
        # 4. Secret-named URL query parameters.
        (
            re.compile(
                r"([?&;](?:api[_-]?key|access[_-]?token|token|password|passwd|pwd|secret|key"
                r"|sig|signature|auth|client[_-]?secret)=)[^&#\s\"']+",
                re.IGNORECASE,
            ),
            rf"\1{fill}",
        ),
        # 5. Well-known token shapes (case-sensitive prefixes) and JSON Web Tokens.
        (
            re.compile(
                r"(?<![A-Za-z0-9])(?:sk-(?:proj-|ant-)?|(?:sk|rk)_(?:live|test)_|gh[pousr]_"
                r"|github_pat_|xox[baprs]-|glpat-|hf_|npm_|pypi-|ya29\.)[A-Za-z0-9_\-]{4,}"
            ),
            fill,
        ),
        (
            re.compile(
                r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*"
            ),
            fill,
        ),
        # 6. Cloud keys.
        (re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"), fill),
        (re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{20,}"), fill),
        # 7. PEM private keys, to the END line (or the end of the text when it is missing).
        (
            re.compile(
                r"-----BEGIN (?P<pem>(?:[A-Z0-9]+ )*)PRIVATE KEY-----[\s\S]*?"
                r"(?:-----END (?P=pem)PRIVATE KEY-----|\Z)"
            ),
            fill,
        ),
        # 8. Credentials in URL user-info.
        (
            re.compile(r"\b([a-z][a-z0-9+.\-]*://)[^/\s:@\"']+:[^/\s@\"']*@", re.IGNORECASE),
            rf"\1{fill}@",
        ),
    )


def stack_rules() -> tuple[tuple[re.Pattern[str], str], ...]:
    r"""Surface mode: stack-trace frames, with the file paths they carry, are removed.

    Python frames (``File "/path/x.py", line 3, in f`` and the indented source line after
    one), JavaScript/Java frames that end in a location (``at f (C:\\app\\x.js:1:2)``,
    ``at /srv/x.js:1:2``, ``at com.x.Y(Y.java:12)``) and Python ``Traceback`` headers. Paths in
    ordinary prose are left alone: model text may legitimately name files.
    """
    return (
        (
            re.compile(
                r"[ \t]*File \"[^\"\n]+\", line \d+[^\n]*(?:\n[ \t]{4,}(?!File \")[^\n]*)?\n?"
            ),
            "",
        ),
        (re.compile(r"[ \t]*\bat [^\n()]*\([^()\n]*:\d+(?::\d+)?\)[ \t]*\n?"), ""),
        (
            re.compile(
                r"[ \t]*\bat (?:[A-Za-z]:[\\/]|/|file://|node:)[^\s)]*:\d+(?::\d+)?[ \t]*\n?"
            ),
            "",
        ),
        (re.compile(r"Traceback \(most recent call last\):[ \t]*\n?"), "[stack trace removed] "),
    )


def may_hold_secret(text: str) -> bool:
    """A necessary condition for any text rule (secret shapes and stack frames) to match.

    Each rule needs a literal this checks with C-level substring tests: ``=``/``:`` plus a
    secret-ish word (assignments, headers, query parameters), ``://`` plus ``@`` (URL
    user-info), a token prefix (``sk-``, ``gh?_``, ``xox``, ``glpat-``, ``hf_``, ``npm_``,
    ``pypi-``, ``ya29.``, ``github_pat_``), a JWT's ``eyJ``, a PEM ``-----BEGIN``, a cloud key
    prefix, ``bearer``/``basic``, or a stack-trace marker. False means no rule can match, so the
    (much slower) regex scan is skipped; True only means the scan must run.
    """
    lower: str | None = None
    if "=" in text or ":" in text:
        lower = text.lower()
        if (
            "key" in lower
            or "token" in lower
            or "pass" in lower
            or "pwd" in lower
            or "secret" in lower
            or "auth" in lower
            or "cred" in lower
            or "sig" in lower
            or ("://" in text and "@" in text)
            or "at " in text
        ):
            return True
    if (
        "sk-" in text
        or "_" in text
        or "xox" in text
        or "glpat-" in text
        or "AKIA" in text
        or "ASIA" in text
        or "AIza" in text
        or "eyJ" in text
        or "-----BEGIN" in text
        or "ya29." in text
        or "pypi-" in text
        or 'File "' in text
        or "Traceback" in text
    ):
        return True
    if lower is None:
        lower = text.lower()
    return "bearer" in lower or "basic" in lower


def text_probe(
    rules: tuple[tuple[re.Pattern[str], str], ...],
) -> Callable[[str], re.Match[str] | None]:
    """One search that finds a match iff at least one rule matches somewhere in the text.

    Most strings hold no secret; one combined pass over them replaces one ``sub`` per rule. Each
    rule keeps its own case sensitivity through a scoped ``(?i:...)`` group.
    """
    parts = [
        f"(?i:{pattern.pattern})" if pattern.flags & re.IGNORECASE else f"(?:{pattern.pattern})"
        for pattern, _ in rules
    ]
    return re.compile("|".join(parts)).search
