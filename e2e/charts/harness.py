"""The chart check's plumbing: the chart copy Helm can render offline, `helm` invocations, the
rendered objects, and a tiny test runner whose failures say what was found."""

import dataclasses
import pathlib
import re
import shutil
import subprocess
import sys

import yaml

RELEASE = "ramen"
NAMESPACE = "ramen"
# The bundled third-party chart (values-dev.yaml's NATS): its repository is not reachable here.
# MongoDB, the S3 store and Valkey are the chart's own templates (devStack), rendered in full.
BUNDLED = ("nats",)
# Kinds from CRDs, which kubernetes-validate has no schema for (checked by assertions instead).
CRD_KINDS = {"PodMonitor", "PrometheusRule", "ScaledObject"}


class Failure(Exception):
    """An assertion that did not hold; the message says what was found."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


class Suite:
    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []

    def check(self, name: str, fn, *args) -> None:
        try:
            fn(*args)
        except Failure as err:
            self.fail(name, str(err))
        except Exception as err:  # a check that broke is a failure too, with what broke it
            self.fail(name, f"{type(err).__name__}: {err}")
        else:
            self.passed += 1

    def fail(self, name: str, message: str) -> None:
        self.failed.append(name)
        print(f"FAIL {name}: {message}", file=sys.stderr)


@dataclasses.dataclass
class Render:
    text: str
    objects: list[dict]

    def kinds(self, kind: str) -> list[dict]:
        return [o for o in self.objects if o["kind"] == kind]

    def get(self, kind: str, name: str) -> dict:
        found = [o for o in self.kinds(kind) if o["metadata"]["name"] == name]
        expect(
            len(found) == 1, f"want one {kind} {name}, found {len(found)} among {self.names(kind)}"
        )
        return found[0]

    def names(self, kind: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self.kinds(kind))

    def count(self) -> int:
        return len(self.objects)


class RenderError(Exception):
    def __init__(self, stderr: str):
        super().__init__(stderr)
        self.stderr = stderr


@dataclasses.dataclass
class Helm:
    binary: pathlib.Path
    chart: pathlib.Path

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.binary), *args], capture_output=True, text=True, check=False
        )

    def template(self, values=(), sets=(), kube: str | None = None, api_versions=()) -> Render:
        """`helm template` of the chart copy; raises RenderError with Helm's stderr."""
        args = ["template", RELEASE, str(self.chart), "--namespace", NAMESPACE]
        for path in values:
            path = pathlib.Path(path)
            args += ["-f", str(path if path.is_absolute() else self.chart / path)]
        for flag, value in sets:
            args += [flag, value]
        if kube:
            args += ["--kube-version", kube]
        for api in api_versions:
            args += ["--api-versions", api]
        done = self.run(*args)
        if done.returncode != 0:
            raise RenderError(done.stderr.strip())
        objects = [o for o in yaml.safe_load_all(done.stdout) if o]
        return Render(done.stdout, objects)

    def fails(self, values=(), sets=(), kube=None, api_versions=()) -> str:
        """The error of a render that must fail (Failure when it renders)."""
        try:
            render = self.template(values, sets, kube, api_versions)
        except RenderError as err:
            return err.stderr
        raise Failure(f"rendered {render.count()} objects, want a failure")


def kube_range(chart_yaml: dict) -> tuple[str, str]:
    """(lowest, newest) Kubernetes minor the chart claims: kubeVersion ">=A.B.x-0 <C.D.0-0"."""
    claim = str(chart_yaml.get("kubeVersion", ""))
    match = re.fullmatch(
        r">=\s*(\d+)\.(\d+)\.\d+(?:-0)?\s+<\s*(\d+)\.(\d+)\.0(?:-0)?", claim.strip()
    )
    expect(
        bool(match),
        f"Chart.yaml kubeVersion is {claim!r}: want an explicit range '>=1.A.0-0 <1.B.0-0'",
    )
    low = (int(match.group(1)), int(match.group(2)))
    high = (int(match.group(3)), int(match.group(4)) - 1)
    expect(high >= low, f"Chart.yaml kubeVersion {claim!r} is empty")
    return f"{low[0]}.{low[1]}", f"{high[0]}.{high[1]}"


def api_versions_of(kube: str) -> list[str]:
    """What a real cluster of that version serves and `helm template` does not assume: the
    ValidatingAdmissionPolicy kinds are GA (admissionregistration.k8s.io/v1) from 1.30."""
    if tuple(int(p) for p in kube.split(".")) >= (1, 30):
        return [
            "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy",
            "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding",
        ]
    return []


def prepare(root: pathlib.Path, tmp: pathlib.Path) -> tuple[pathlib.Path, list[dict]]:
    """A copy of charts/ramen without the bundled third-party dependencies (so Helm never
    reaches for their repositories), and the dependencies it removed."""
    chart = tmp / "ramen"
    shutil.copytree(
        root / "charts/ramen", chart, ignore=shutil.ignore_patterns("*.tgz", "Chart.lock")
    )
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    removed = [d for d in meta["dependencies"] if d["name"] in BUNDLED]
    meta["dependencies"] = [d for d in meta["dependencies"] if d["name"] not in BUNDLED]
    (chart / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return chart, removed


def container(deployment: dict) -> dict:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    expect(
        len(containers) == 1,
        f"{deployment['metadata']['name']}: {len(containers)} containers, want 1",
    )
    return containers[0]


def env_of(deployment: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container(deployment).get("env", [])}


def env(render: Render, service: str) -> dict[str, str]:
    """The env of a service's Deployment."""
    return env_of(render.get("Deployment", f"{RELEASE}-{service}"))


def seconds(duration: str) -> int:
    match = re.fullmatch(r"(\d+)s", duration)
    expect(bool(match), f"duration {duration!r}: want <n>s")
    return int(match.group(1))
