"""Checks on the chart as a package: its dependencies (local ones vendored, bundled ones
conditional and off by default), `helm dependency build` and `helm lint --strict` offline, and
the Kubernetes versions it claims."""

import pathlib
import shutil
import subprocess

import yaml
from kubernetes_validate.utils import all_versions

from harness import BUNDLED, Failure, Helm, Suite, expect

LINTED = ((), ("values-prod.yaml",), ("values-dev.yaml",))


def run(suite: Suite, helm: Helm, root: pathlib.Path, removed: list[dict]) -> None:
    suite.check(
        "charts/check-versions: every chart in lock-step with the workspace", versions, root
    )
    suite.check(
        "bundled charts and the development stack are conditional and off by default",
        bundled,
        root,
        removed,
    )
    suite.check("local subcharts are vendored (no repository)", vendored, helm)
    suite.check("helm dependency build works offline", dependency_build, helm)
    for values in LINTED:
        name = values[0] if values else "values.yaml"
        suite.check(f"helm lint --strict with {name}", lint, helm, values)
    suite.check("NOTES.txt renders for each values file", notes, helm)


def versions(root: pathlib.Path) -> None:
    done = subprocess.run(
        [str(root / "charts/check-versions")], capture_output=True, text=True, check=False
    )
    expect(done.returncode == 0, done.stderr.strip() or done.stdout.strip())


def bundled(root: pathlib.Path, removed: list[dict]) -> None:
    names = sorted(d["name"] for d in removed)
    expect(names == sorted(BUNDLED), f"bundled dependencies found: {names}, want {sorted(BUNDLED)}")
    defaults = yaml.safe_load((root / "charts/ramen/values.yaml").read_text())
    for dep in removed:
        name = dep["name"]
        expect(
            dep.get("condition") == f"{name}.enabled",
            f"{name}: condition is {dep.get('condition')!r}",
        )
        repo = dep.get("repository", "")
        expect(repo and not repo.startswith("file://"), f"{name}: repository is {repo!r}")
        expect(
            defaults.get(name, {}).get("enabled") is False,
            f"values.yaml {name}.enabled is not false",
        )
    stores = defaults.get("devStack", {})
    expect(sorted(stores) == ["mongo", "s3", "valkey"], f"values.yaml devStack has {sorted(stores)}")
    for store, settings in stores.items():
        expect(
            settings.get("enabled") is False, f"values.yaml devStack.{store}.enabled is not false"
        )


def vendored(helm: Helm) -> None:
    meta = yaml.safe_load((helm.chart / "Chart.yaml").read_text())
    for dep in meta["dependencies"]:
        name = dep["name"]
        expect(
            not dep.get("repository"),
            f"{name}: repository {dep.get('repository')!r}, want it vendored",
        )
        sub = helm.chart / "charts" / name / "Chart.yaml"
        expect(sub.is_file(), f"{name}: no {sub.relative_to(helm.chart)}")
        version = yaml.safe_load(sub.read_text())["version"]
        expect(
            str(version) == str(dep["version"]),
            f"{name}: vendored {version}, Chart.yaml pins {dep['version']}",
        )


def dependency_build(helm: Helm) -> None:
    done = helm.run("dependency", "build", str(helm.chart))
    expect(done.returncode == 0, f"exit {done.returncode}: {done.stderr.strip()}")
    lock = yaml.safe_load((helm.chart / "Chart.lock").read_text())
    locked = sorted(d["name"] for d in lock["dependencies"])
    meta = yaml.safe_load((helm.chart / "Chart.yaml").read_text())
    expect(locked == sorted(d["name"] for d in meta["dependencies"]), f"Chart.lock lists {locked}")
    expect(not any(helm.chart.glob("charts/*.tgz")), "dependency build fetched archives")


def lint(helm: Helm, values: tuple[str, ...]) -> None:
    args = ["lint", "--strict", str(helm.chart)]
    for path in values:
        args += ["-f", str(helm.chart / path)]
    done = helm.run(*args)
    expect(done.returncode == 0, f"exit {done.returncode}:\n{done.stdout}{done.stderr}")


# What NOTES.txt must tell each install: (values, --set flags, texts).
NOTES = (
    (("values-prod.yaml",), (), ["https://ramen.example.com/", "RAMEN_BOOTSTRAP_ADMIN_EMAIL"]),
    (("values-dev.yaml",), (), ["port-forward svc/ramen-api-gateway", "ramen-auth-bundle"]),
    ((), ("global.config.nats.url=nats://n:4222",), ["port-forward", "ramen-auth-bundle"]),
)


def notes(helm: Helm) -> None:
    """`helm template` never prints NOTES.txt, so a copy renders it inside an ordinary
    template (as a JSON string, since Helm parses every template's output as YAML)."""
    copy = helm.chart.parent / "notes-chart"
    if not copy.exists():
        shutil.copytree(helm.chart, copy)
        text = (copy / "templates/NOTES.txt").read_text()
        (copy / "templates/notes.yaml").write_text(
            '{{- define "e2e.notes" }}' + text + "{{ end }}\n"
            'text: {{ include "e2e.notes" . | toJson }}\n'
        )
    for values, sets, texts in NOTES:
        args = [
            "template",
            "ramen",
            str(copy),
            "-n",
            "ramen",
            "--show-only",
            "templates/notes.yaml",
        ]
        args += [a for v in values for a in ("-f", str(copy / v))]
        args += [a for s in sets for a in ("--set", s)]
        done = helm.run(*args)
        expect(done.returncode == 0, f"{values or sets}: {done.stderr.strip()}")
        text = next(d for d in yaml.safe_load_all(done.stdout) if d)["text"]
        missing = [t for t in texts if t not in text]
        expect(not missing, f"{values or sets}: NOTES lack {missing}:\n{text}")


def kube_claim(suite: Suite, ctx) -> None:
    def within_schemas() -> None:
        have = [".".join(v.split(".")[:2]) for v in all_versions()]
        for kube in ctx.versions:
            expect(
                kube in have,
                f"kubernetes-validate has no schemas for {kube} (it has {have[0]}..{have[-1]})",
            )

    def enforced() -> None:
        major, low = (int(p) for p in ctx.low.split("."))
        _, high = (int(p) for p in ctx.high.split("."))
        for outside in (f"{major}.{low - 1}.0", f"{major}.{high + 1}.0"):
            try:
                ctx.helm.template(("values-prod.yaml",), kube=outside)
            except Exception as err:  # RenderError
                expect("kubeVersion" in str(err), f"on {outside}: {err}")
            else:
                raise Failure(
                    f"rendered on Kubernetes {outside}, outside the claimed {ctx.low}..{ctx.high}"
                )

    suite.check(
        f"claimed Kubernetes {ctx.low}..{ctx.high} is within kubernetes-validate's schemas",
        within_schemas,
    )
    suite.check("Helm refuses Kubernetes versions outside the claim", enforced)
