"""What must be in the rendered chart, part 2: drain-aware grace periods, the auth bundle and
backends Secrets, the zone-manager's RBAC and admission policy, and the pods themselves
(probes, non-root, env names the binary reads, endpoints that name real Services)."""
import base64
import pathlib

import yaml

import rust_src
from harness import NAMESPACE, RELEASE, Suite, container, env_of, expect, seconds

ALL = {"get", "list", "watch", "create", "update", "patch", "delete"}
WRITE = {"create", "update", "patch", "delete"}
READ = {"get", "list", "watch"}
# What the Kubernetes provider managing ramen-<group>-<zone> namespaces needs, and nothing more.
RULES = {
    ("", "namespaces"): ALL, ("", "services"): ALL, ("", "serviceaccounts"): ALL,
    ("", "secrets"): WRITE,  # written, never read back
    ("", "pods"): READ, ("", "pods/log"): {"get"}, ("", "events"): READ,
    ("apps", "deployments"): ALL, ("apps", "deployments/status"): {"get"},
    ("autoscaling", "horizontalpodautoscalers"): ALL,
    ("policy", "poddisruptionbudgets"): ALL,
    ("networking.k8s.io", "networkpolicies"): ALL,
}
ZM = f"{RELEASE}-zone-manager"
FULL = pathlib.Path(__file__).resolve().parent / "values" / "full-config.yaml"
# values path under global.config -> the variable the chart renders it as (libs/config names).
CONFIG_ENV = {
    "logLevel": "RAMEN_LOG_LEVEL", "logFormat": "RAMEN_LOG_FORMAT",
    "nats.url": "RAMEN_NATS_URL", "nats.stream": "RAMEN_NATS_STREAM", "nats.kvBucket": "RAMEN_NATS_KV_BUCKET",
    "nats.dlqStream": "RAMEN_NATS_DLQ_STREAM", "nats.eventsStream": "RAMEN_NATS__EVENTS_STREAM",
    "nats.maxAckPending": "RAMEN_NATS_MAX_ACK_PENDING", "nats.maxDeliver": "RAMEN_NATS_MAX_DELIVER",
    "nats.ackWait": "RAMEN_NATS_ACK_WAIT", "nats.maxAge": "RAMEN_NATS_MAX_AGE", "nats.dlqMaxAge": "RAMEN_NATS_DLQ_MAX_AGE",
    "nats.maxPayload": "RAMEN_NATS_MAX_PAYLOAD", "mongo.uri": "RAMEN_MONGO_URI", "mongo.db": "RAMEN_MONGO_DB",
    "s3.bucket": "RAMEN_S3_BUCKET", "s3.endpoint": "RAMEN_S3_ENDPOINT", "s3.region": "RAMEN_S3_REGION",
    "s3.forcePathStyle": "RAMEN_S3__FORCE_PATH_STYLE", "redis.url": "RAMEN_REDIS_URL",
    "redis.sentinelAddrs": "RAMEN_REDIS_SENTINEL_ADDRS", "redis.masterName": "RAMEN_REDIS_MASTER_NAME",
    "redis.timeout": "RAMEN_REDIS__TIMEOUT", "drain.mode": "RAMEN_DRAIN__MODE",
}
# Not env: the KEDA scrape target, and the margin that only sizes the grace period.
CONFIG_NOT_ENV = {"nats.monitoringEndpoint", "drain.marginSeconds", "drain.timeoutSeconds", "extraEnv"}
AUTH_ENV = {"jwtSecret": "RAMEN_JWT_SECRET", "secretsKey": "RAMEN_SECRETS_KEY", "bootstrapAdminEmail": "RAMEN_BOOTSTRAP_ADMIN_EMAIL",
            "jwtPreviousSecret": "RAMEN_JWT_PREVIOUS_SECRET", "secretsPreviousKey": "RAMEN_SECRETS_PREVIOUS_KEY"}
BACKENDS_ENV = {"mongoUri": "RAMEN_MONGO_URI", "redisUrl": "RAMEN_REDIS_URL", "redisPassword": "RAMEN_REDIS_PASSWORD",
                "redisSentinelPassword": "RAMEN_REDIS_SENTINEL_PASSWORD", "s3AccessKeyId": "AWS_ACCESS_KEY_ID",
                "s3SecretAccessKey": "AWS_SECRET_ACCESS_KEY"}
ROLE = f"{NAMESPACE}-{RELEASE}-zone-manager"


def run(suite: Suite, ctx) -> None:
    for name in ("values.yaml", "values-prod.yaml", "values-dev.yaml"):
        suite.check(f"grace >= preStop + drain + margin, progress deadline above it ({name})", grace, ctx, name)
    suite.check("grace: explicit values that keep the invariant render as given", grace_explicit, ctx)
    suite.check("auth/backends Secrets from existingSecret: no Secret rendered (prod)", secrets_existing, ctx)
    suite.check("auth bundle generated without existingSecret (dev, defaults)", secrets_generated, ctx)
    suite.check("zone-manager ClusterRole: exactly the provider's rules", rbac_rules, ctx)
    suite.check("zone-manager ClusterRoleBinding and ServiceAccount", rbac_binding, ctx)
    suite.check("admission policy holds every write to ramen-* (1.30+ only)", admission, ctx)
    suite.check("zone-manager.rbac.extraRules reach the ClusterRole and the policy", rbac_extra, ctx)
    suite.check("pods: probes on admin /healthz and /readyz, non-root, read-only root", pods, ctx)
    suite.check("every global.config knob and secret value reaches the pods", full_config, ctx)
    suite.check("pods: every RAMEN_* variable is one the binary reads", env_names, ctx)
    suite.check("pods: RAMEN_ENDPOINTS__* name the Services and their ports", endpoints, ctx)


def env(render, service: str) -> dict[str, str]:
    return env_of(render.get("Deployment", f"{RELEASE}-{service}"))


def merged_values(ctx, files) -> dict:
    def merge(base: dict, over: dict) -> dict:
        for key, value in over.items():
            base[key] = merge(base.get(key, {}), value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
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
        hook = container(deployment).get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command")
        sleep = int(hook[1]) if hook else 0
        grace_s, deadline = pod["terminationGracePeriodSeconds"], spec["progressDeadlineSeconds"]
        who = deployment["metadata"]["name"]
        expect(grace_s >= sleep + drain + margin, f"{who}: grace {grace_s} < preStop {sleep} + drain {drain} + margin {margin}")
        expect(deadline > grace_s, f"{who}: progressDeadlineSeconds {deadline} <= grace {grace_s}")


def grace_explicit(ctx) -> None:
    sets = (("--set", "deployer.terminationGracePeriodSeconds=1000"), ("--set", "deployer.progressDeadlineSeconds=1100"))
    spec = ctx.render("grace-explicit", ("values-prod.yaml",), sets).get("Deployment", f"{RELEASE}-deployer")["spec"]
    got = (spec["template"]["spec"]["terminationGracePeriodSeconds"], spec["progressDeadlineSeconds"])
    expect(got == (1000, 1100), f"deployer grace/deadline {got}, want (1000, 1100)")


def _env_from(render) -> set[tuple[str, ...]]:
    return {tuple(s["secretRef"]["name"] for s in container(d)["envFrom"]) for d in render.kinds("Deployment")}


def secrets_existing(ctx) -> None:
    render = ctx.prod()
    expect(not render.kinds("Secret"), f"Secrets rendered: {render.names('Secret')}")
    expect(_env_from(render) == {("ramen-auth", "ramen-backends")}, f"envFrom {_env_from(render)}")
    alone = ctx.render("existing-auth", (), (("--set", "global.config.nats.url=nats://n:4222"), ("--set", "global.secrets.auth.existingSecret=my-auth")))
    expect(not alone.kinds("Secret"), f"Secrets rendered with existingSecret: {alone.names('Secret')}")
    expect(_env_from(alone) == {("my-auth",)}, f"envFrom {_env_from(alone)}")


def secrets_generated(ctx) -> None:
    for name, backends in (("values-dev.yaml", True), ("values.yaml", False)):
        render = ctx.ok(name)
        want = [f"{RELEASE}-auth-bundle"] + ([f"{RELEASE}-backends"] if backends else [])
        expect(render.names("Secret") == sorted(want), f"{name}: Secrets {render.names('Secret')}, want {want}")
        bundle = render.get("Secret", f"{RELEASE}-auth-bundle")
        data = {k: base64.b64decode(v) for k, v in bundle["data"].items()}
        expect(len(data["RAMEN_JWT_SECRET"]) >= 32, f"{name}: RAMEN_JWT_SECRET is {len(data['RAMEN_JWT_SECRET'])} bytes")
        key = base64.b64decode(data["RAMEN_SECRETS_KEY"])
        expect(len(key) == 32, f"{name}: RAMEN_SECRETS_KEY decodes to {len(key)} bytes, want 32")
        expect(bundle["metadata"]["annotations"].get("helm.sh/resource-policy") == "keep", f"{name}: {bundle['metadata']}")
        expect(_env_from(render) == {tuple(want)}, f"{name}: envFrom {_env_from(render)}")


def _rules(role: dict) -> dict[tuple[str, str], set[str]]:
    found: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        expect(not rule.get("resourceNames") and not rule.get("nonResourceURLs"), f"rule {rule}")
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                found.setdefault((group, resource), set()).update(rule["verbs"])
    return found


def rbac_rules(ctx) -> None:
    render = ctx.prod()
    expect(render.names("ClusterRole") == [ROLE], f"ClusterRoles {render.names('ClusterRole')}, want [{ROLE}]")
    expect(not render.kinds("Role") and not render.kinds("RoleBinding"), f"Roles {render.names('Role')}")
    found = _rules(render.get("ClusterRole", ROLE))
    diff = {k: sorted(found.get(k, set()) ^ RULES.get(k, set())) for k in set(found) | set(RULES) if found.get(k) != RULES.get(k)}
    expect(not diff, f"rules differ (resource: verbs granted xor wanted): {diff}")


def rbac_binding(ctx) -> None:
    render = ctx.prod()
    binding = render.get("ClusterRoleBinding", ROLE)
    expect(binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE}, f"roleRef {binding['roleRef']}")
    expect(binding["subjects"] == [{"kind": "ServiceAccount", "name": ZM, "namespace": NAMESPACE}], f"subjects {binding['subjects']}")
    expect(render.get("ServiceAccount", ZM).get("automountServiceAccountToken") is True, "zone-manager SA does not mount a token")
    for deployment in render.kinds("Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        name = deployment["metadata"]["name"]
        expect(pod["serviceAccountName"] == name, f"{name}: serviceAccountName {pod['serviceAccountName']}")
        expect(pod["automountServiceAccountToken"] is (name == ZM), f"{name}: automountServiceAccountToken {pod['automountServiceAccountToken']}")


def _policy_resources(render) -> set[tuple[str, str]]:
    policy = render.get("ValidatingAdmissionPolicy", f"{ROLE}-namespaces")
    user = f"system:serviceaccount:{NAMESPACE}:{ZM}"
    expect(user in policy["spec"]["matchConditions"][0]["expression"], f"matchConditions {policy['spec']['matchConditions']}")
    expect("startsWith('ramen-')" in policy["spec"]["validations"][0]["expression"], f"validations {policy['spec']['validations']}")
    binding = render.get("ValidatingAdmissionPolicyBinding", f"{ROLE}-namespaces")
    expect(binding["spec"] == {"policyName": f"{ROLE}-namespaces", "validationActions": ["Deny"]}, f"binding {binding['spec']}")
    return {(g, r) for rule in policy["spec"]["matchConstraints"]["resourceRules"] for g in rule["apiGroups"] for r in rule["resources"]}


def _written(render) -> set[tuple[str, str]]:
    return {k for k, verbs in _rules(render.get("ClusterRole", ROLE)).items() if verbs & WRITE or "*" in verbs}


def admission(ctx) -> None:
    expect(not ctx.prod(ctx.low).kinds("ValidatingAdmissionPolicy"), f"policy rendered on {ctx.low}")
    render = ctx.prod(ctx.high)
    missing = _written(render) - _policy_resources(render)
    expect(not missing, f"writes the policy does not hold: {sorted(missing)}")


def rbac_extra(ctx) -> None:
    rule = '[{"apiGroups":["gateway.networking.k8s.io"],"resources":["httproutes"],"verbs":["get","create","update","delete"]}]'
    render = ctx.render("rbac-extra", ("values-prod.yaml",), (("--set-json", f"zone-manager.rbac.extraRules={rule}"),))
    key = ("gateway.networking.k8s.io", "httproutes")
    expect(key in _rules(render.get("ClusterRole", ROLE)), "extra rule not in the ClusterRole")
    expect(key in _policy_resources(render), "extra rule's writes not held by the policy")


def pods(ctx) -> None:
    for deployment in ctx.prod().kinds("Deployment"):
        name, pod, main = deployment["metadata"]["name"], deployment["spec"]["template"]["spec"], container(deployment)
        probes = {k: main[k]["httpGet"] for k in ("startupProbe", "livenessProbe", "readinessProbe")}
        want = {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"}
        expect({k: (v["path"], v["port"]) for k, v in probes.items()} == {k: (p, "admin") for k, p in want.items()}, f"{name}: probes {probes}")
        security = pod["securityContext"]
        expect(security.get("runAsNonRoot") is True and security.get("runAsUser", 0) > 0, f"{name}: pod securityContext {security}")
        c = main["securityContext"]
        expect(c.get("readOnlyRootFilesystem") is True and c.get("allowPrivilegeEscalation") is False and c.get("capabilities", {}).get("drop") == ["ALL"], f"{name}: container securityContext {c}")


def _leaves(tree: dict, prefix: str = ""):
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and path not in CONFIG_NOT_ENV:
            yield from _leaves(value, path + ".")
        else:
            yield path, value


def _text(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def full_render(ctx):
    if not hasattr(ctx, "full"):
        ctx.full = ctx.render("full-config", (FULL,))
    return ctx.full


def full_config(ctx) -> None:
    values = yaml.safe_load(FULL.read_text())["global"]
    render = full_render(ctx)
    for path, value in _leaves(values["config"]):
        if path in CONFIG_NOT_ENV:
            continue
        expect(path in CONFIG_ENV, f"global.config.{path}: this check does not know its variable")
        for service in ctx.cli.services:
            got = env(render, service).get(CONFIG_ENV[path])
            expect(got == _text(value), f"{service}: {CONFIG_ENV[path]}={got!r}, want {value!r} (global.config.{path})")
    for var, value in values["config"]["extraEnv"].items():
        expect(env(render, "auth").get(var) == value, f"extraEnv {var} not rendered")
    drain = {s: env(render, s)["RAMEN_DRAIN__TIMEOUT"] for s in ctx.cli.services}
    want = {s: "900s" if s == "deployer" else "45s" for s in ctx.cli.services}
    expect(drain == want, f"RAMEN_DRAIN__TIMEOUT {drain}, want {want} (deployer keeps its own 900)")
    auth = {k: base64.b64decode(v).decode() for k, v in render.get("Secret", f"{RELEASE}-auth-bundle")["data"].items()}
    expect(auth == {AUTH_ENV[k]: v for k, v in values["secrets"]["auth"].items()}, f"auth bundle {sorted(auth)}")
    backends = render.get("Secret", f"{RELEASE}-backends")["stringData"]
    expect(backends == {BACKENDS_ENV[k]: v for k, v in values["secrets"]["backends"].items()}, f"backends {sorted(backends)}")
    trigger = render.get("ScaledObject", f"{RELEASE}-deployer")["spec"]["triggers"][0]["metadata"]
    nats = values["config"]["nats"]
    expect((trigger["natsServerMonitoringEndpoint"], trigger["stream"]) == (nats["monitoringEndpoint"], nats["stream"]), f"trigger {trigger}")


def env_names(ctx) -> None:
    root = ctx.root
    keys, aliases, direct = rust_src.config_keys(root), rust_src.env_aliases(root), rust_src.env_names_read_directly(root)
    renders = [(n, ctx.ok(n)) for n in ("values.yaml", "values-prod.yaml", "values-dev.yaml")]
    for name, render in renders + [("full-config.yaml", full_render(ctx))]:
        for deployment in render.kinds("Deployment"):
            for var, value in env_of(deployment).items():
                who = f"{name} {deployment['metadata']['name']}"
                expect("{{" not in str(value), f"{who}: {var}={value} is an unrendered template")
                if var.startswith("RAMEN_"):
                    expect(rust_src.known_env(root, var, keys, aliases, direct), f"{who}: {var} is no key of libs/config (nor read directly)")
        for secret in render.kinds("Secret"):
            for var in list(secret.get("data", {})) + list(secret.get("stringData", {})):
                if var.startswith("RAMEN_"):
                    expect(rust_src.known_env(root, var, keys, aliases, direct), f"{name} Secret {secret['metadata']['name']}: {var} unknown")


def endpoints(ctx) -> None:
    render = ctx.prod()
    services = {s["metadata"]["name"]: {p["port"] for p in s["spec"]["ports"]} for s in render.kinds("Service")}
    for service in ctx.cli.services:
        values = env(render, service)
        for var, url in values.items():
            if var.startswith("RAMEN_ENDPOINTS__"):
                host, port = url.removeprefix("http://").split(":")
                expect(int(port) in services.get(host, set()), f"{service}: {var}={url}, Services {services}")
        own = values["RAMEN_LISTEN__" + ("API" if service == "api-gateway" else service.upper().replace("-", "_"))]
        expect(int(own.rsplit(":", 1)[1]) in services[f"{RELEASE}-{service}"], f"{service}: listens on {own}, Service ports {services[f'{RELEASE}-{service}']}")
