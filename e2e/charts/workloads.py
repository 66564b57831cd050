"""What must be in the rendered chart, part 2: drain-aware grace periods and the pods
themselves (probes, non-root, endpoints that name real Services). Then RBAC (rbac.py) and
the configuration reaching the pods (config.py)."""

import yaml

import config
import rbac
from harness import RELEASE, Suite, container, env, env_of, expect, seconds


def run(suite: Suite, ctx) -> None:
    for name in ("values.yaml", "values-prod.yaml", "values-dev.yaml"):
        suite.check(
            f"grace >= preStop + drain + margin, progress deadline above it ({name})",
            grace,
            ctx,
            name,
        )
    suite.check(
        "grace: explicit values that keep the invariant render as given", grace_explicit, ctx
    )
    rbac.run(suite, ctx)
    config.run(suite, ctx)
    suite.check("pods: probes on admin /healthz and /readyz, non-root, read-only root", pods, ctx)
    suite.check("pods: RAMEN_ENDPOINTS__* name the Services and their ports", endpoints, ctx)


def merged_values(ctx, files) -> dict:
    def merge(base: dict, over: dict) -> dict:
        for key, value in over.items():
            base[key] = (
                merge(base.get(key, {}), value)
                if isinstance(value, dict) and isinstance(base.get(key), dict)
                else value
            )
        return base

    values = yaml.safe_load((ctx.helm.chart / "values.yaml").read_text())
    for path in files:
        values = merge(values, yaml.safe_load((ctx.helm.chart / path).read_text()) or {})
    return values


def grace(ctx, name: str) -> None:
    render = ctx.ok(name)
    files = () if name == "values.yaml" else (name,)
    margin = merged_values(ctx, files)["global"]["config"]["drain"]["marginSeconds"]
    for deployment in render.kinds("Deployment"):
        spec = deployment["spec"]
        pod = spec["template"]["spec"]
        drain = seconds(env_of(deployment)["RAMEN_DRAIN__TIMEOUT"])
        hook = (
            container(deployment)
            .get("lifecycle", {})
            .get("preStop", {})
            .get("exec", {})
            .get("command")
        )
        sleep = int(hook[1]) if hook else 0
        grace_s, deadline = pod["terminationGracePeriodSeconds"], spec["progressDeadlineSeconds"]
        who = deployment["metadata"]["name"]
        expect(
            grace_s >= sleep + drain + margin,
            f"{who}: grace {grace_s} < preStop {sleep} + drain {drain} + margin {margin}",
        )
        expect(deadline > grace_s, f"{who}: progressDeadlineSeconds {deadline} <= grace {grace_s}")


def grace_explicit(ctx) -> None:
    sets = (
        ("--set", "deployer.terminationGracePeriodSeconds=1000"),
        ("--set", "deployer.progressDeadlineSeconds=1100"),
    )
    spec = ctx.render("grace-explicit", ("values-prod.yaml",), sets).get(
        "Deployment", f"{RELEASE}-deployer"
    )["spec"]
    got = (
        spec["template"]["spec"]["terminationGracePeriodSeconds"],
        spec["progressDeadlineSeconds"],
    )
    expect(got == (1000, 1100), f"deployer grace/deadline {got}, want (1000, 1100)")


def pods(ctx) -> None:
    for deployment in ctx.prod().kinds("Deployment"):
        name, pod, main = (
            deployment["metadata"]["name"],
            deployment["spec"]["template"]["spec"],
            container(deployment),
        )
        probes = {
            k: main[k]["httpGet"] for k in ("startupProbe", "livenessProbe", "readinessProbe")
        }
        want = {
            "startupProbe": "/healthz",
            "livenessProbe": "/healthz",
            "readinessProbe": "/readyz",
        }
        expect(
            {k: (v["path"], v["port"]) for k, v in probes.items()}
            == {k: (p, "admin") for k, p in want.items()},
            f"{name}: probes {probes}",
        )
        security = pod["securityContext"]
        expect(
            security.get("runAsNonRoot") is True and security.get("runAsUser", 0) > 0,
            f"{name}: pod securityContext {security}",
        )
        c = main["securityContext"]
        expect(
            c.get("readOnlyRootFilesystem") is True
            and c.get("allowPrivilegeEscalation") is False
            and c.get("capabilities", {}).get("drop") == ["ALL"],
            f"{name}: container securityContext {c}",
        )


def endpoints(ctx) -> None:
    render = ctx.prod()
    services = {
        s["metadata"]["name"]: {p["port"] for p in s["spec"]["ports"]}
        for s in render.kinds("Service")
    }
    for service in ctx.cli.services:
        values = env(render, service)
        for var, url in values.items():
            if var.startswith("RAMEN_ENDPOINTS__"):
                host, port = url.removeprefix("http://").split(":")
                expect(
                    int(port) in services.get(host, set()),
                    f"{service}: {var}={url}, Services {services}",
                )
        own = values[
            "RAMEN_LISTEN__"
            + ("API" if service == "api-gateway" else service.upper().replace("-", "_"))
        ]
        expect(
            int(own.rsplit(":", 1)[1]) in services[f"{RELEASE}-{service}"],
            f"{service}: listens on {own}, Service ports {services[f'{RELEASE}-{service}']}",
        )
