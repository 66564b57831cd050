"""The series a PromQL expression names, and the dashboard's queries made concrete, so the
check can hold both the alert rules and the dashboard to the series the operator guide lists.

A small scanner rather than a PromQL parser: it drops what cannot be a series name (strings,
label matchers, ranges, label lists after by/on/without/ignoring/group_left/group_right,
numbers, Grafana variables) and keeps the identifiers that do not call a function. promtool
parses every expression too (check.py), so a query this scanner misreads still fails there."""

import re

KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "offset", "bool", "inf", "nan", "atan2",
}
LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")

# Grafana's variables, replaced by values of the same kind so promtool can parse the query.
GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$__range": "1h",
    "$__interval": "1m",
    "$group": ".*",
    "$zone": ".*",
}


def concrete(expr: str) -> str:
    """A dashboard query with its Grafana variables replaced (longest names first)."""
    for name in sorted(GRAFANA_VARIABLES, key=len, reverse=True):
        expr = expr.replace(name, GRAFANA_VARIABLES[name])
    return expr


def series_names(expr: str) -> set[str]:
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings (label values, regexes)
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries
    text = LABEL_LISTS.sub(" ", text)
    text = re.sub(r"\$\w+", " ", text)
    # numbers and durations (0.95, 1e3, 5m, 1h30m)
    text = re.sub(r"(?<![A-Za-z0-9_:])\d[\d.]*(?:e[+-]?\d+)?(?:ms|[smhdwy])*", " ", text)
    names = set()
    for match in IDENT.finditer(text):
        name = match.group(0)
        rest = text[match.end():].lstrip()
        if rest.startswith("(") or name.lower() in KEYWORDS:
            continue  # a function or aggregation, or an operator word
        names.add(name)
    return names


def label_values_series(query: str) -> set[str]:
    """The series a Grafana `label_values(series{...}, label)` variable query reads."""
    match = re.match(r"\s*label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)", query)
    return {match.group(1)} if match else set()
