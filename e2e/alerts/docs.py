"""What docs/operator-guide.md promises, read back: the series it lists (the alerts and the
dashboard may use no other) and a runbook for every alert."""

import pathlib
import re

from harness import expect

GUIDE = "docs/operator-guide.md"
# The subsection listing the series the dashboard and alerts read from Prometheus itself,
# the kubelet and kube-state-metrics: ramen does not export them.
ELSEWHERE = "### Series read from elsewhere"


def known_series(root: pathlib.Path) -> set[str]:
    """ramen's table (rows starting "| `ramen_", the rule libs/testkit's documented_metrics
    reads, which the Rust tests hold `/metrics` to) plus the series-from-elsewhere table.
    A histogram's name stands for its _bucket, _sum and _count series."""
    page = (root / GUIDE).read_text()
    names = set()
    for line in page.splitlines():
        if line.startswith("| `ramen_"):
            cells = line.split("|")
            kind = cells[2].strip()
            for name in (n.strip().strip("`") for n in cells[1].split("/")):
                names.add(name)
                if kind == "histogram":
                    names.update(f"{name}{s}" for s in ("_bucket", "_sum", "_count"))
    start = page.find(ELSEWHERE)
    expect(start >= 0, f"{GUIDE} has no {ELSEWHERE!r} subsection")
    section = page[start + len(ELSEWHERE):]
    section = section[: section.find("\n#")] if "\n#" in section else section
    elsewhere = re.findall(r"^\| `([A-Za-z_:][A-Za-z0-9_:]*)`", section, re.M)
    expect(bool(elsewhere), f"{ELSEWHERE!r} lists no series")
    return names | set(elsewhere)


def runbooks_present(root: pathlib.Path, rules: list[dict]) -> None:
    """A `#### <Alert>` heading per alert, and each alert's runbook_url pointing at it."""
    page = (root / GUIDE).read_text()
    headings = set(re.findall(r"^#### (Ramen\w+)\s*$", page, re.M))
    problems = []
    for rule in rules:
        name = rule["alert"]
        if name not in headings:
            problems.append(f"no '#### {name}' runbook")
        url = rule.get("annotations", {}).get("runbook_url", "")
        if not url.endswith(f"docs/operator-guide.md#{name.lower()}"):
            problems.append(f"{name}: runbook_url {url!r}")
    extra = headings - {r["alert"] for r in rules}
    if extra:
        problems.append(f"runbooks for alerts that do not exist: {sorted(extra)}")
    expect(not problems, "; ".join(problems))


def panels_listed(root: pathlib.Path, panels: list[tuple[str, list[str]]]) -> None:
    """The guide lists every panel (no screenshot can be taken here) with its queries as they
    are in the dashboard: `|` escaped for the Markdown table."""
    page = (root / GUIDE).read_text()
    problems = []
    for title, exprs in panels:
        rows = [line for line in page.splitlines() if line.startswith(f"| {title} | ")]
        if len(rows) != 1:
            problems.append(f"panel {title!r}: {len(rows)} rows in the guide, want 1")
            continue
        for expr in exprs:
            if "`" + expr.replace("|", "\\|") + "`" not in rows[0]:
                problems.append(f"panel {title!r}: query {expr!r} not in its row")
    expect(not problems, "\n  ".join(problems))
