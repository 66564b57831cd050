"""e2e/run-alerts: the alert rules and the Grafana dashboard against real promtool and Helm.
Prints each failure with what was found, then `run-alerts: N passed, M failed`."""

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import yaml

HERE = pathlib.Path(__file__).resolve().parent
# The chart check's plumbing (the offline chart copy, Helm, the test runner) is shared.
sys.path.append(str(HERE.parent / "charts"))
from harness import Helm, Suite, expect, prepare  # noqa: E402

import docs  # noqa: E402
import promql  # noqa: E402

RULES = "charts/ramen/files/prometheus/ramen-alerts.yaml"
DASHBOARD = "charts/ramen/files/grafana/ramen-dashboard.json"
# The chart's files and their copies in deploy/ (scripts/sync-monitoring).
COPIES = {
    RULES: "deploy/prometheus/ramen-alerts.yaml",
    DASHBOARD: "deploy/grafana/ramen-dashboard.json",
}
TESTS = "deploy/prometheus/ramen-alerts.test.yaml"
NATS = ("--set", "global.config.nats.url=nats://nats.example:4222")
ON = (
    ("--set", "global.metrics.prometheusRule.enabled=true"),
    ("--set", "global.metrics.grafanaDashboard.enabled=true"),
)


class Tools:
    def __init__(self, root: pathlib.Path, promtool: pathlib.Path, helm: Helm, tmp: pathlib.Path):
        self.root, self.promtool, self.helm, self.tmp = root, promtool, helm, tmp

    def promtool_ok(self, *args: str) -> str:
        done = subprocess.run(
            [str(self.promtool), *args], capture_output=True, text=True, check=False
        )
        out = (done.stdout + done.stderr).strip()
        expect(done.returncode == 0, f"promtool {' '.join(args)} exited {done.returncode}:\n{out}")
        return out


def rules(root: pathlib.Path) -> list[dict]:
    doc = yaml.safe_load((root / RULES).read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def dashboard_queries(root: pathlib.Path) -> list[tuple[str, str]]:
    """(where, expr) of every panel target and every query variable of the dashboard."""
    dash = json.loads((root / DASHBOARD).read_text())
    found = []
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            found.append((f"panel {panel['title']!r} {target['refId']}", target["expr"]))
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            found.append((f"variable ${var['name']}", var["query"]["query"]))
    return found


def panels(root: pathlib.Path) -> list[tuple[str, list[str]]]:
    dash = json.loads((root / DASHBOARD).read_text())
    return [
        (p["title"], [t["expr"] for t in p["targets"]])
        for p in dash["panels"]
        if p["type"] != "row"
    ]


def copies_in_sync(root: pathlib.Path) -> None:
    stale = [c for s, c in COPIES.items() if (root / s).read_bytes() != (root / c).read_bytes()]
    expect(not stale, f"{stale} differ from the chart's files: run scripts/sync-monitoring")


def chart_renders(tools: Tools, values, sets, want: bool) -> None:
    render = tools.helm.template(values, sets, "1.37.0")
    rule_objs = render.kinds("PrometheusRule")
    boards = [
        o for o in render.kinds("ConfigMap")
        if o["metadata"].get("labels", {}).get("grafana_dashboard") == "1"
    ]
    if not want:
        expect(not rule_objs and not boards, f"rendered {render.names('PrometheusRule')} and"
               f" dashboards {[b['metadata']['name'] for b in boards]}, want none")
        return
    expect(len(rule_objs) == 1 and len(boards) == 1,
           f"PrometheusRules {render.names('PrometheusRule')}, dashboards {len(boards)}:"
           " want one each")
    rule = rule_objs[0]
    expect(rule["apiVersion"] == "monitoring.coreos.com/v1", f"apiVersion {rule['apiVersion']}")
    source = yaml.safe_load((tools.root / RULES).read_text())
    expect(rule["spec"] == source, "the PrometheusRule's spec is not the rules file's groups")
    # The spec as a rules file of its own, through promtool.
    rendered = tools.tmp / "rendered-rules.yaml"
    rendered.write_text(yaml.safe_dump(rule["spec"]))
    tools.promtool_ok("check", "rules", str(rendered))
    data = boards[0]["data"]
    expect(list(data) == ["ramen-dashboard.json"], f"dashboard ConfigMap keys {list(data)}")
    shipped = json.loads(data["ramen-dashboard.json"])
    expect(shipped == json.loads((tools.root / DASHBOARD).read_text()),
           "the dashboard ConfigMap does not hold the dashboard file")


def unit_tests_cover_every_alert(root: pathlib.Path) -> None:
    """Each alert has an evaluation where it fires, and a later one where it has cleared."""
    tests = yaml.safe_load((root / TESTS).read_text())["tests"]
    fires, clears = {}, {}
    for test in tests:
        for case in test.get("alert_rule_test", []):
            name, at = case["alertname"], promql_duration(case["eval_time"])
            if case.get("exp_alerts"):
                fires.setdefault(name, []).append((id(test), at))
            else:
                clears.setdefault(name, []).append((id(test), at))
    problems = []
    for rule in rules(root):
        name = rule["alert"]
        fired = fires.get(name, [])
        cleared_after = [
            (t, at)
            for t, at in clears.get(name, [])
            if any(t == ft and at > fa for ft, fa in fired)
        ]
        if not fired:
            problems.append(f"{name} never fires")
        elif not cleared_after:
            problems.append(f"{name} never clears after firing")
    expect(not problems, "; ".join(problems))


def promql_duration(text: str) -> int:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    parts = re.findall(r"(\d+)(ms|s|m|h|d)", str(text))
    expect(bool(parts), f"eval_time {text!r}")
    return int(sum(int(n) * units[u] for n, u in parts))


def names_documented(root: pathlib.Path) -> None:
    known = docs.known_series(root)
    used = {}
    for rule in rules(root):
        for name in promql.series_names(rule["expr"]):
            used.setdefault(name, []).append(f"alert {rule['alert']}")
    for where, expr in dashboard_queries(root):
        # label_values(series, label) is Grafana's, not PromQL: only its series counts.
        names = promql.label_values_series(expr) or promql.series_names(expr)
        for name in names:
            used.setdefault(name, []).append(where)
    unknown = {n: w for n, w in used.items() if n not in known}
    expect(
        not unknown,
        "series not in docs/operator-guide.md's metrics tables:\n  "
        + "\n  ".join(
            f"{n} (in {', '.join(sorted(set(w))[:3])})" for n, w in sorted(unknown.items())
        ),
    )
    expect(len(used) >= 20, f"found only {len(used)} series names: is the scanner broken?")


def dashboard_queries_parse(tools: Tools) -> None:
    """Every dashboard query (variables made concrete) as a recording rule: promtool parses it."""
    queries = dashboard_queries(tools.root)
    exprs = [promql.concrete(e) for _, e in queries if "label_values" not in e]
    doc = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": e} for i, e in enumerate(exprs)
    ]}]}
    path = tools.tmp / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump(doc))
    tools.promtool_ok("check", "rules", str(path))


def dashboard_shape(root: pathlib.Path) -> None:
    dash = json.loads((root / DASHBOARD).read_text())
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    expect(variables.get("datasource", {}).get("type") == "datasource",
           f"no datasource variable: {sorted(variables)}")
    bad = [
        p["title"] for p in dash["panels"] if p["type"] != "row"
        and any(t.get("datasource", {}).get("uid") != "${datasource}" for t in [p, *p["targets"]])
    ]
    expect(not bad, f"panels not on the $datasource variable: {bad}")
    ids = [p["id"] for p in dash["panels"]]
    expect(len(ids) == len(set(ids)), f"panel ids repeat: {ids}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=pathlib.Path, required=True)
    parser.add_argument("--helm", type=pathlib.Path, required=True)
    parser.add_argument("--promtool", type=pathlib.Path, required=True)
    args = parser.parse_args()
    root = args.root
    suite = Suite()
    with tempfile.TemporaryDirectory(prefix="ramen-alerts.") as tmp:
        tmp = pathlib.Path(tmp)
        chart, _ = prepare(root, tmp)
        tools = Tools(root, args.promtool, Helm(args.helm, chart), tmp)
        suite.check("deploy/ holds the chart's rules and dashboard", copies_in_sync, root)
        suite.check("promtool check rules: deploy/prometheus/ramen-alerts.yaml",
                    tools.promtool_ok, "check", "rules", str(root / COPIES[RULES]))
        suite.check("promtool test rules: every alert fires and clears",
                    tools.promtool_ok, "test", "rules", str(root / TESTS))
        suite.check("the unit tests fire and then clear every alert",
                    unit_tests_cover_every_alert, root)
        suite.check(
            "values-prod.yaml renders the PrometheusRule (promtool checks its spec)"
            " and the dashboard ConfigMap",
            chart_renders, tools, ("values-prod.yaml",), (), True,
        )
        suite.check("values.yaml renders neither", chart_renders, tools, (), (NATS,), False)
        suite.check("values.yaml with both switches on renders both",
                    chart_renders, tools, (), (NATS, *ON), True)
        suite.check("every series in the rules and the dashboard is in the operator guide",
                    names_documented, root)
        suite.check("every dashboard query parses (promtool)", dashboard_queries_parse, tools)
        suite.check("dashboard: datasource variable, unique panel ids", dashboard_shape, root)
        suite.check("every alert has a runbook in the operator guide",
                    docs.runbooks_present, root, rules(root))
        suite.check("every panel is listed in the operator guide with its queries",
                    docs.panels_listed, root, panels(root))
    print(f"run-alerts: {suite.passed} passed, {len(suite.failed)} failed")
    return 1 if suite.failed else 0


if __name__ == "__main__":
    sys.exit(main())
