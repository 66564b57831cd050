"""Route a concrete URI to the resource template that may serve it.

Only used for routing a `read_resource` to the package whose template could
match; the package's own SDK still does the real RFC 6570 matching and
parameter extraction. So the patterns here are deliberately a little looser
than the RFC: a false positive just means the package answers "not found" and
the runtime tries the next candidate.
"""

from __future__ import annotations

import re

_EXPR = re.compile(r"\{([^{}]*)\}")

# operator -> regex fragment for one expression
_OPERATOR_PATTERNS = {
    "": r"[^/?#]+",  # simple string expansion: one path segment
    "+": r".*",  # reserved expansion: may contain '/'
    "#": r"(?:#.*)?",  # fragment expansion
    ".": r"(?:\.[^/?#]*)*",  # label expansion
    "/": r"(?:/[^?#]*)*",  # path segment expansion (possibly several)
    ";": r"(?:;[^/?#]*)*",  # path-style parameters
    "?": r"(?:\?[^#]*)?",  # form-style query
    "&": r"(?:&[^#]*)?",  # query continuation
}


def compile_template(template: str) -> re.Pattern[str]:
    """Compile an RFC 6570 URI template into a regex matching concrete URIs."""
    out: list[str] = []
    pos = 0
    for m in _EXPR.finditer(template):
        out.append(re.escape(template[pos : m.start()]))
        body = m.group(1)
        op = body[:1] if body[:1] in "+#./;?&" else ""
        out.append(_OPERATOR_PATTERNS[op])
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out) + r"\Z", re.DOTALL)
