"""What must be in the rendered chart, part 1: the egress NetworkPolicies, KEDA's ScaledObject
for the deployer, the PodMonitors. Part 2 (workloads.py): grace periods, secrets, RBAC, pods."""

import pathlib

import yaml

import rust_src
import workloads
from harness import RELEASE, Suite, container, env, expect

HERE_VALUES = pathlib.Path(__file__).resolve().parent / "values"
DNS = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
# The runbook's backing services and their default ports (global.networkPolicy.egress.dependencies).
DEPENDENCY_PORTS = {"mongo": {27017}, "nats": {4222}, "s3": {443}, "valkey": {6379, 26379}}
KEDA_ON = (("--set", "deployer.keda.enabled=true"),)


def run(suite: Suite, ctx) -> None:
    services = ctx.cli.services
    suite.check("chart has one subchart per `ramen serve` service", subcharts, ctx)
    suite.check(
        "NetworkPolicy: default-deny egress, DNS + Mongo/NATS/S3/Valkey (prod)",
        egress_defaults,
        ctx,
        services,
    )
    suite.check(
        "NetworkPolicy: dependency peers and extraAllow appear when set",
        egress_extra,
        ctx,
        services,
    )
    suite.check(
        "NetworkPolicy: none when disabled (dev)",
        lambda: expect_none(ctx.ok("values-dev.yaml"), "NetworkPolicy"),
    )
    suite.check("KEDA: no ScaledObject when disabled, replicas set", keda_off, ctx)
    suite.check(
        "KEDA: external NATS uses global.config.nats.monitoringEndpoint", keda_external, ctx
    )
    suite.check("KEDA: bundled NATS uses <release>-nats:8222", keda_bundled, ctx)
    suite.check(
        "KEDA: external NATS without monitoringEndpoint fails naming it", keda_missing_endpoint, ctx
    )
    suite.check(
        "PodMonitor: one per service on admin /metrics when enabled", podmonitors, ctx, services
    )
    suite.check(
        "PodMonitor: none when disabled",
        lambda: [expect_none(ctx.ok(n), "PodMonitor") for n in ("values.yaml", "values-dev.yaml")],
    )
    suite.check("admin port (/metrics) is in no Service or Ingress", admin_private, ctx)
    workloads.run(suite, ctx)


def expect_none(render, kind: str) -> None:
    expect(not render.kinds(kind), f"found {kind} {render.names(kind)}")


def subcharts(ctx) -> None:
    meta = yaml.safe_load((ctx.helm.chart / "Chart.yaml").read_text())
    found = sorted(d["name"] for d in meta["dependencies"] if d["name"] != "ramen-common")
    expect(
        found == sorted(ctx.cli.services),
        f"subcharts {found}, `ramen serve` takes {sorted(ctx.cli.services)}",
    )
    deployments = ctx.prod().names("Deployment")
    expect(
        deployments == sorted(f"{RELEASE}-{s}" for s in ctx.cli.services),
        f"Deployments {deployments}",
    )


def _policy(render, service: str) -> dict:
    return render.get("NetworkPolicy", f"{RELEASE}-{service}")["spec"]


def egress_defaults(ctx, services) -> None:
    render = ctx.prod()
    expect(
        len(render.kinds("NetworkPolicy")) == len(services),
        f"NetworkPolicies {render.names('NetworkPolicy')}",
    )
    for service in services:
        spec = _policy(render, service)
        pods = render.get("Deployment", f"{RELEASE}-{service}")["spec"]["template"]["metadata"][
            "labels"
        ]
        selector = spec["podSelector"]["matchLabels"]
        expect(
            selector.items() <= pods.items(),
            f"{service}: podSelector {selector} misses the pods {pods}",
        )
        expect(spec["policyTypes"] == ["Egress"], f"{service}: policyTypes {spec['policyTypes']}")
        rules = spec["egress"]
        expect(rules[0] == DNS, f"{service}: first rule {rules[0]}, want DNS {DNS}")
        for rule in rules:
            expect(rule.get("to") or rule.get("ports"), f"{service}: rule {rule} allows everything")
        open_ports = [{p["port"] for p in r["ports"]} for r in rules[1:] if "to" not in r]
        want = list(DEPENDENCY_PORTS.values())
        expect(
            open_ports == want,
            f"{service}: port-only rules {open_ports}, want Mongo/NATS/S3/Valkey {want}",
        )
        for rule in rules[1:]:
            expect(
                all(p.get("protocol") == "TCP" for p in rule.get("ports", [])), f"{service}: {rule}"
            )
        # The rule to the workers must select the namespaces the zone-manager really labels
        # (it once named `ramen-zone-manager`, which no namespace carries: the control plane
        # could reach no worker where NetworkPolicy is enforced).
        key, value = rust_src.zone_namespace_label(ctx.root)
        workers = [r for r in rules if {"protocol": "TCP", "port": 8000} in r.get("ports", [])]
        expect(len(workers) == 1, f"{service}: one rule to the workers' port 8000, got {workers}")
        selectors = [t["namespaceSelector"]["matchLabels"] for t in workers[0]["to"]]
        expect(
            all(s.items() <= {key: value}.items() for s in selectors),
            f"{service}: workers' namespaces selected by {selectors}, the zone-manager labels them {key}={value}",
        )


def egress_extra(ctx, services) -> None:
    extra = yaml.safe_load((HERE_VALUES / "egress.yaml").read_text())
    global_rule = extra["global"]["networkPolicy"]["egress"]["extraAllow"][0]
    zm_rule = extra["zone-manager"]["networkPolicy"]["extraAllow"][0]
    mongo_to = extra["global"]["networkPolicy"]["egress"]["dependencies"]["mongo"]["to"]
    render = ctx.render("egress", ("values-prod.yaml", HERE_VALUES / "egress.yaml"))
    for service in services:
        rules = _policy(render, service)["egress"]
        expect(global_rule in rules, f"{service}: global extraAllow {global_rule} not in {rules}")
        expect(
            (zm_rule in rules) == (service == "zone-manager"),
            f"{service}: zone-manager.networkPolicy.extraAllow placement, rules {rules}",
        )
        mongo = [r for r in rules if r.get("ports") == [{"protocol": "TCP", "port": 27017}]]
        expect(
            mongo and mongo[0].get("to") == mongo_to,
            f"{service}: mongo rule {mongo}, want to={mongo_to}",
        )
        valkey = [r for r in rules if {"protocol": "TCP", "port": 6379} in r.get("ports", [])]
        expect(
            not valkey, f"{service}: valkey rule {valkey} though dependencies.valkey.enabled=false"
        )


def _scaled(render) -> dict:
    return render.get("ScaledObject", f"{RELEASE}-deployer")


def keda_off(ctx) -> None:
    render = ctx.prod()
    expect_none(render, "ScaledObject")
    replicas = render.get("Deployment", f"{RELEASE}-deployer")["spec"].get("replicas")
    expect(replicas == 2, f"deployer replicas {replicas}, want values-prod's 2")


def _trigger(render, ctx, endpoint: str, stream: str) -> None:
    scaled = _scaled(render)
    target = scaled["spec"]["scaleTargetRef"]["name"]
    deployment = render.get("Deployment", target)
    expect(target == f"{RELEASE}-deployer", f"scaleTargetRef {target}")
    expect(
        "replicas" not in deployment["spec"],
        f"deployer sets replicas {deployment['spec'].get('replicas')} under KEDA",
    )
    triggers = scaled["spec"]["triggers"]
    expect([t["type"] for t in triggers] == ["nats-jetstream"], f"triggers {triggers}")
    meta = triggers[0]["metadata"]
    durable = rust_src.deployer_durable(ctx.root)
    want = {"natsServerMonitoringEndpoint": endpoint, "stream": stream, "consumer": durable}
    got = {k: meta.get(k) for k in want}
    expect(
        got == want,
        f"trigger metadata {got}, want {want} (consumer: WORK_DURABLE in services/deployer)",
    )
    deployer = env(render, "deployer")
    expect(
        deployer.get("RAMEN_NATS_STREAM", "RAMEN_JOBS") == stream,
        f"deployer RAMEN_NATS_STREAM {deployer.get('RAMEN_NATS_STREAM')}",
    )


def keda_external(ctx) -> None:
    render = ctx.render("keda-prod", ("values-prod.yaml",), KEDA_ON)
    _trigger(render, ctx, "nats.shared:8222", "RAMEN_JOBS")
    custom = ctx.render(
        "keda-stream",
        ("values-prod.yaml",),
        KEDA_ON + (("--set", "global.config.nats.stream=OPS_JOBS"),),
    )
    _trigger(custom, ctx, "nats.shared:8222", "OPS_JOBS")


def keda_bundled(ctx) -> None:
    render = ctx.render("keda-dev", ("values-dev.yaml",), KEDA_ON)
    _trigger(render, ctx, f"{RELEASE}-nats:8222", "RAMEN_JOBS")


def keda_missing_endpoint(ctx) -> None:
    error = ctx.fails(
        ("values-prod.yaml",), KEDA_ON + (("--set", "global.config.nats.monitoringEndpoint="),)
    )
    expect(
        "global.config.nats.monitoringEndpoint is required" in error and "nats.shared" in error,
        f"error: {error}",
    )


def podmonitors(ctx, services) -> None:
    labels = '{"release":"kube-prometheus-stack"}'
    render = ctx.render(
        "podmonitor-labels",
        ("values-prod.yaml",),
        (("--set-json", f"global.metrics.podMonitor.labels={labels}"),),
    )
    expect(
        len(render.kinds("PodMonitor")) == len(services),
        f"PodMonitors {render.names('PodMonitor')}",
    )
    for service in services:
        monitor = render.get("PodMonitor", f"{RELEASE}-{service}")
        deployment = render.get("Deployment", f"{RELEASE}-{service}")
        selector = monitor["spec"]["selector"]["matchLabels"]
        expect(
            selector == deployment["spec"]["selector"]["matchLabels"],
            f"{service}: selector {selector}",
        )
        endpoints = monitor["spec"]["podMetricsEndpoints"]
        expect(
            endpoints == [{"port": "admin", "path": "/metrics", "interval": "30s"}],
            f"{service}: {endpoints}",
        )
        expect(
            monitor["metadata"]["labels"].get("release") == "kube-prometheus-stack",
            f"{service}: labels {monitor['metadata']['labels']}",
        )
        ports = {p["name"]: p["containerPort"] for p in container(deployment)["ports"]}
        admin = env(render, service)["RAMEN_LISTEN__ADMIN"]
        expect(
            ports.get("admin") == int(admin.rsplit(":", 1)[1]),
            f"{service}: admin port {ports}, RAMEN_LISTEN__ADMIN {admin}",
        )


def admin_private(ctx) -> None:
    render = ctx.prod()
    for service in render.kinds("Service"):
        for port in service["spec"]["ports"]:
            expect(
                port["port"] != 9090 and port.get("targetPort") != "admin",
                f"{service['metadata']['name']} exposes {port}",
            )
    for ingress in render.kinds("Ingress"):
        for rule in ingress["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                expect(
                    backend == {"name": f"{RELEASE}-api-gateway", "port": {"name": "http"}},
                    f"Ingress backend {backend}",
                )
    expect(render.kinds("Ingress"), "values-prod.yaml renders no Ingress")
