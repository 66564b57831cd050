"""e2e/run-charts: the Helm chart rendered with a real Helm 3 and every object validated
against the Kubernetes API schemas of the lowest and newest version the chart claims, then
assertions on what must be in it, values that must be refused, and the images the chart and
docker-compose.yml start. Prints failures (with what was found) and a short summary."""

import argparse
import pathlib
import subprocess
import sys
import tempfile

import yaml

import bad_values
import compose
import images
import objects
import rust_src
import sources
import tooling
from harness import (
    BUNDLED,
    CRD_KINDS,
    Failure,
    Helm,
    RenderError,
    Suite,
    api_versions_of,
    kube_range,
    prepare,
)

HERE = pathlib.Path(__file__).resolve().parent
# The three values files, and what each render adds on the command line. values.yaml alone
# has no NATS URL (rendering it must fail, see bad_values); the bundled NATS chart of
# values-dev.yaml is off because its repository is unreachable here (its development stack,
# the chart's own templates, is rendered and validated).
BASES = {
    "values.yaml": ((), (("--set", "global.config.nats.url=nats://nats.example:4222"),)),
    "values-prod.yaml": (("values-prod.yaml",), ()),
    "values-dev.yaml": (
        ("values-dev.yaml",),
        tuple(("--set", f"{name}.enabled=false") for name in BUNDLED),
    ),
}


class Context:
    """Everything the checks share: the repo, Helm on the chart copy, the claimed Kubernetes
    versions, the base renders, and every render to validate."""

    def __init__(self, root: pathlib.Path, helm: Helm, tmp: pathlib.Path, removed: list[dict]):
        self.root, self.helm, self.tmp, self.removed = root, helm, tmp, removed
        meta = yaml.safe_load((helm.chart / "Chart.yaml").read_text())
        self.low, self.high = kube_range(meta)
        self.versions = (self.low, self.high)
        self.cli = rust_src.Cli(root)
        # values-dev.yaml's bundled NATS chart off (its repository is unreachable here).
        self.dev_sets = BASES["values-dev.yaml"][1]
        self.to_validate: list[tuple[str, str, str]] = []  # (label, kube, text)
        self.base: dict[str, dict[str, object]] = {}
        for name, (values, sets) in BASES.items():
            self.base[name] = {}
            for kube in self.versions:
                try:
                    self.base[name][kube] = self.render(name, values, sets, kube)
                except RenderError as err:
                    self.base[name][kube] = err

    def render(self, label: str, values=(), sets=(), kube: str | None = None):
        """A render at `kube` (default: the newest claimed) with that version's APIs; kept
        for schema validation."""
        kube = kube or self.high
        render = self.helm.template(values, sets, f"{kube}.0", api_versions_of(kube))
        self.to_validate.append((label, kube, render.text))
        return render

    def fails(self, values=(), sets=(), kube: str | None = None) -> str:
        kube = kube or self.high
        return self.helm.fails(values, sets, f"{kube}.0", api_versions_of(kube))

    def prod(self, kube: str | None = None):
        return self.ok("values-prod.yaml", kube)

    def ok(self, name: str, kube: str | None = None):
        render = self.base[name][kube or self.high]
        if isinstance(render, RenderError):
            raise Failure(f"{name} does not render on {kube or self.high}: {render.stderr}")
        return render


def validate(ctx: Context, validator: str) -> tuple[int, list[str]]:
    """kubernetes-validate --strict over every render, once per claimed version. Returns the
    number of objects checked and the problems (a missing schema counts, except for CRDs)."""
    checked, problems = 0, []
    for kube in ctx.versions:
        files = []
        for i, (label, version, text) in enumerate(ctx.to_validate):
            if version != kube:
                continue
            path = ctx.tmp / f"render-{kube}-{i}-{label.replace(' ', '_').replace('/', '_')}.yaml"
            path.write_text(text)
            files.append(path)
            checked += sum(1 for o in yaml.safe_load_all(text) if o)
        done = subprocess.run(
            [validator, "--strict", "--quiet", "-k", kube, *map(str, files)],
            capture_output=True,
            text=True,
            check=False,
        )
        for line in (done.stdout + done.stderr).splitlines():
            crd = line.startswith("WARN") and any(f"kind {k} with api" in line for k in CRD_KINDS)
            if line.strip() and not crd:
                problems.append(f"Kubernetes {kube}: {line.replace(str(ctx.tmp) + '/', '')}")
        if done.returncode != 0 and not problems:
            problems.append(f"Kubernetes {kube}: kubernetes-validate exited {done.returncode}")
    return checked, problems


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=pathlib.Path, required=True)
    parser.add_argument("--helm", type=pathlib.Path, required=True)
    parser.add_argument("--validate", required=True)
    args = parser.parse_args()
    suite = Suite()
    with tempfile.TemporaryDirectory(prefix="ramen-charts.") as tmp:
        tmp = pathlib.Path(tmp)
        chart, removed = prepare(args.root, tmp)
        helm = Helm(args.helm, chart)
        tooling.run(suite, helm, args.root, removed)
        meta = yaml.safe_load((chart / "Chart.yaml").read_text())
        suite.check("Chart.yaml claims an explicit Kubernetes range", kube_range, meta)
        if suite.failed and "Chart.yaml claims an explicit Kubernetes range" in suite.failed:
            print(f"run-charts: {suite.passed} passed, {len(suite.failed)} failed")
            return 1
        ctx = Context(args.root, helm, tmp, removed)
        for name in BASES:
            for kube in ctx.versions:
                suite.check(f"{name} renders on Kubernetes {kube}", ctx.ok, name, kube)
        tooling.kube_claim(suite, ctx)
        objects.run(suite, ctx)
        bad_values.run(suite, ctx)
        images.run(suite, ctx)
        compose.run(suite, ctx)
        sources.run(suite, ctx)
        checked, problems = validate(ctx, args.validate)

        def schemas_hold() -> None:
            if problems:
                shown = problems[:10] + (
                    [f"... and {len(problems) - 10} more"] if len(problems) > 10 else []
                )
                raise Failure(f"{len(problems)} problems\n  " + "\n  ".join(shown))

        suite.check(f"kubernetes-validate --strict on {ctx.low} and {ctx.high}", schemas_hold)
        counts = []
        for name in BASES:
            per = [ctx.base[name][k] for k in ctx.versions]
            counts.append(
                f"{name} "
                + "/".join(
                    str(r.count()) if not isinstance(r, RenderError) else "failed" for r in per
                )
            )
        print(
            f"run-charts: objects on Kubernetes {ctx.low}/{ctx.high}: {', '.join(counts)}"
            " (values.yaml with a NATS URL; values-dev.yaml with its bundled NATS chart off:"
            " its repository is unreachable here)",
            file=sys.stderr,
        )
        print(
            f"run-charts: kubernetes-validate --strict: {checked} objects of"
            f" {len(ctx.to_validate)} renders (CRDs by assertions only)",
            file=sys.stderr,
        )
    print(f"run-charts: {suite.passed} passed, {len(suite.failed)} failed")
    return 1 if suite.failed else 0


if __name__ == "__main__":
    sys.exit(main())
