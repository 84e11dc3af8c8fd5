"""The text rules of the redaction engine: secret shapes and, in surface mode, stack frames.

:func:`text_rules` are the substitutions :meth:`Redactor.redact_text
<actoviq.events.redaction.Redactor.redact_text>` applies; :func:`may_hold_secret` is a cheap
necessary condition that lets most strings skip the regular expressions entirely.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["may_hold_secret", "stack_rules", "text_probe", "text_rules"]


def text_rules(replacement: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The secret-shape rules, each ``(pattern, substitution)``, filling in ``replacement``."""
    fill = replacement.replace("\\", "\\\\")
    value = r"[^\s,;\"'}&]+"
    return (
        # 1. Authorization schemes.
        (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=\-]+", re.IGNORECASE), rf"\1 {fill}"),
        # 2. key=value / key: value assignments of secret-named keys.
        (
            re.compile(
                r"\b((?:x[_-]?)?api[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token"
                r"|id[_-]?token|password|passwd|passphrase|client[_-]?secret|private[_-]?key"
                r"|secret|token|authorization)([\"']?\s*[=:]\s*[\"']?)" + value,
                re.IGNORECASE,
            ),
            rf"\1\2{fill}",
        ),
        # 3. Secret-named URL query parameters.
        (
            re.compile(
                r"([?&;](?:api[_-]?key|access[_-]?token|token|password|secret|key|sig|signature"
                r"|auth|client[_-]?secret)=)[^&#\s\"']+",
                re.IGNORECASE,
            ),
            rf"\1{fill}",
        ),
        # 4. Well-known token shapes (case-sensitive prefixes).
        (
            re.compile(
                r"(?<![A-Za-z0-9])(?:sk-(?:proj-|ant-)?|gh[pousr]_|github_pat_|xox[baprs]-"
                r"|glpat-|hf_)[A-Za-z0-9_\-]{4,}"
            ),
            fill,
        ),
        # 5. Cloud keys.
        (re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"), fill),
        (re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_\-]{20,}"), fill),
        # 6. Credentials in URL user-info.
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
    secret-ish word (assignments, query parameters), ``://`` plus ``@`` (URL user-info), a
    token prefix (``sk-``, ``gh?_``, ``xox``, ``glpat-``, ``hf_``, ``github_pat_``), a cloud key
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
            or "secret" in lower
            or "auth" in lower
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
