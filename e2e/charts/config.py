"""What must be in the rendered chart, part 3: the configuration reaching the pods. The auth
bundle and backends Secrets (from existingSecret: none rendered; else generated), every
global.config knob and secret value as the variable libs/config reads, and no RAMEN_*
variable the binary does not read."""

import base64
import pathlib

import yaml

import rust_src
import sso
from harness import RELEASE, Suite, container, env, env_of, expect

FULL = pathlib.Path(__file__).resolve().parent / "values" / "full-config.yaml"
# values path under global.config -> the variable the chart renders it as (libs/config names).
CONFIG_ENV = {
    "logLevel": "RAMEN_LOG_LEVEL",
    "logFormat": "RAMEN_LOG_FORMAT",
    "nats.url": "RAMEN_NATS_URL",
    "nats.stream": "RAMEN_NATS_STREAM",
    "nats.kvBucket": "RAMEN_NATS_KV_BUCKET",
    "nats.dlqStream": "RAMEN_NATS_DLQ_STREAM",
    "nats.eventsStream": "RAMEN_NATS__EVENTS_STREAM",
    "nats.maxAckPending": "RAMEN_NATS_MAX_ACK_PENDING",
    "nats.maxDeliver": "RAMEN_NATS_MAX_DELIVER",
    "nats.ackWait": "RAMEN_NATS_ACK_WAIT",
    "nats.maxAge": "RAMEN_NATS_MAX_AGE",
    "nats.dlqMaxAge": "RAMEN_NATS_DLQ_MAX_AGE",
    "nats.maxPayload": "RAMEN_NATS_MAX_PAYLOAD",
    "mongo.uri": "RAMEN_MONGO_URI",
    "mongo.db": "RAMEN_MONGO_DB",
    "s3.bucket": "RAMEN_S3_BUCKET",
    "s3.endpoint": "RAMEN_S3_ENDPOINT",
    "s3.region": "RAMEN_S3_REGION",
    "s3.forcePathStyle": "RAMEN_S3__FORCE_PATH_STYLE",
    "redis.url": "RAMEN_REDIS_URL",
    "redis.sentinelAddrs": "RAMEN_REDIS_SENTINEL_ADDRS",
    "redis.masterName": "RAMEN_REDIS_MASTER_NAME",
    "redis.timeout": "RAMEN_REDIS__TIMEOUT",
    "drain.mode": "RAMEN_DRAIN__MODE",
    "mcpAuth.publicUrl": "RAMEN_MCP_AUTH__PUBLIC_URL",
    "mcpAuth.defaultMode": "RAMEN_MCP_AUTH__DEFAULT_MODE",
    "mcpAuth.issuers": "RAMEN_MCP_AUTH__ISSUERS",
    "mcpAuth.scopes": "RAMEN_MCP_AUTH__SCOPES",
    "sso.issuer": "RAMEN_SSO__ISSUER",
    "sso.clientId": "RAMEN_SSO__CLIENT_ID",
    "sso.publicUrl": "RAMEN_SSO__PUBLIC_URL",
    "sso.scopes": "RAMEN_SSO__SCOPES",
    "sso.displayName": "RAMEN_SSO__DISPLAY_NAME",
    "sso.groupsClaim": "RAMEN_SSO__GROUPS_CLAIM",
    "sso.superAdminGroups": "RAMEN_SSO__SUPER_ADMIN_GROUPS",
    "sso.memberships": "RAMEN_SSO__MEMBERSHIPS",
    "sso.trustEmail": "RAMEN_SSO__TRUST_EMAIL",
    "sso.passwordSignIn": "RAMEN_SSO__PASSWORD_SIGN_IN",
}
# Not env: the KEDA scrape target, and the margin that only sizes the grace period.
CONFIG_NOT_ENV = {
    "nats.monitoringEndpoint",
    "drain.marginSeconds",
    "drain.timeoutSeconds",
    "extraEnv",
}
AUTH_ENV = {
    "jwtSecret": "RAMEN_JWT_SECRET",
    "secretsKey": "RAMEN_SECRETS_KEY",
    "bootstrapAdminEmail": "RAMEN_BOOTSTRAP_ADMIN_EMAIL",
    "jwtPreviousSecret": "RAMEN_JWT_PREVIOUS_SECRET",
    "secretsPreviousKey": "RAMEN_SECRETS_PREVIOUS_KEY",
}
BACKENDS_ENV = {
    "mongoUri": "RAMEN_MONGO_URI",
    "redisUrl": "RAMEN_REDIS_URL",
    "redisPassword": "RAMEN_REDIS_PASSWORD",
    "redisSentinelPassword": "RAMEN_REDIS_SENTINEL_PASSWORD",
    "s3AccessKeyId": "AWS_ACCESS_KEY_ID",
    "s3SecretAccessKey": "AWS_SECRET_ACCESS_KEY",
}


def run(suite: Suite, ctx) -> None:
    suite.check(
        "auth/backends Secrets from existingSecret: no Secret rendered (prod)",
        secrets_existing,
        ctx,
    )
    suite.check(
        "auth bundle generated without existingSecret (dev, defaults)", secrets_generated, ctx
    )
    suite.check("every global.config knob and secret value reaches the pods", full_config, ctx)
    suite.check("pods: every RAMEN_* variable is one the binary reads", env_names, ctx)
    suite.check("NATS users: each service mounts its own credentials", nats_users, ctx)
    sso.run(suite, ctx, full_render)


def _env_from(render) -> set[tuple[str, ...]]:
    return {
        tuple(s["secretRef"]["name"] for s in container(d)["envFrom"])
        for d in render.kinds("Deployment")
    }


def secrets_existing(ctx) -> None:
    render = ctx.prod()
    expect(not render.kinds("Secret"), f"Secrets rendered: {render.names('Secret')}")
    expect(_env_from(render) == {("ramen-auth", "ramen-backends")}, f"envFrom {_env_from(render)}")
    alone = ctx.render(
        "existing-auth",
        (),
        (
            ("--set", "global.config.nats.url=nats://n:4222"),
            ("--set", "global.secrets.auth.existingSecret=my-auth"),
        ),
    )
    expect(
        not alone.kinds("Secret"), f"Secrets rendered with existingSecret: {alone.names('Secret')}"
    )
    expect(_env_from(alone) == {("my-auth",)}, f"envFrom {_env_from(alone)}")


def secrets_generated(ctx) -> None:
    for name, backends in (("values-dev.yaml", True), ("values.yaml", False)):
        render = ctx.ok(name)
        want = [f"{RELEASE}-auth-bundle"] + ([f"{RELEASE}-backends"] if backends else [])
        expect(
            render.names("Secret") == sorted(want),
            f"{name}: Secrets {render.names('Secret')}, want {want}",
        )
        bundle = render.get("Secret", f"{RELEASE}-auth-bundle")
        data = {k: base64.b64decode(v) for k, v in bundle["data"].items()}
        expect(
            len(data["RAMEN_JWT_SECRET"]) >= 32,
            f"{name}: RAMEN_JWT_SECRET is {len(data['RAMEN_JWT_SECRET'])} bytes",
        )
        key = base64.b64decode(data["RAMEN_SECRETS_KEY"])
        expect(len(key) == 32, f"{name}: RAMEN_SECRETS_KEY decodes to {len(key)} bytes, want 32")
        expect(
            bundle["metadata"]["annotations"].get("helm.sh/resource-policy") == "keep",
            f"{name}: {bundle['metadata']}",
        )
        expect(_env_from(render) == {tuple(want)}, f"{name}: envFrom {_env_from(render)}")


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
            expect(
                got == _text(value),
                f"{service}: {CONFIG_ENV[path]}={got!r}, want {value!r} (global.config.{path})",
            )
    for var, value in values["config"]["extraEnv"].items():
        expect(env(render, "auth").get(var) == value, f"extraEnv {var} not rendered")
    drain = {s: env(render, s)["RAMEN_DRAIN__TIMEOUT"] for s in ctx.cli.services}
    want = {s: "900s" if s == "deployer" else "45s" for s in ctx.cli.services}
    expect(drain == want, f"RAMEN_DRAIN__TIMEOUT {drain}, want {want} (deployer keeps its own 900)")
    auth = {
        k: base64.b64decode(v).decode()
        for k, v in render.get("Secret", f"{RELEASE}-auth-bundle")["data"].items()
    }
    expect(
        auth == {AUTH_ENV[k]: v for k, v in values["secrets"]["auth"].items()},
        f"auth bundle {sorted(auth)}",
    )
    backends = render.get("Secret", f"{RELEASE}-backends")["stringData"]
    expect(
        backends == {BACKENDS_ENV[k]: v for k, v in values["secrets"]["backends"].items()},
        f"backends {sorted(backends)}",
    )
    trigger = render.get("ScaledObject", f"{RELEASE}-deployer")["spec"]["triggers"][0]["metadata"]
    nats = values["config"]["nats"]
    expect(
        (trigger["natsServerMonitoringEndpoint"], trigger["stream"])
        == (nats["monitoringEndpoint"], nats["stream"]),
        f"trigger {trigger}",
    )


def env_names(ctx) -> None:
    root = ctx.root
    keys, aliases, direct = (
        rust_src.config_keys(root),
        rust_src.env_aliases(root),
        rust_src.env_names_read_directly(root),
    )
    renders = [(n, ctx.ok(n)) for n in ("values.yaml", "values-prod.yaml", "values-dev.yaml")]
    for name, render in renders + [("full-config.yaml", full_render(ctx))]:
        for deployment in render.kinds("Deployment"):
            for var, value in env_of(deployment).items():
                who = f"{name} {deployment['metadata']['name']}"
                expect("{{" not in str(value), f"{who}: {var}={value} is an unrendered template")
                if var.startswith("RAMEN_"):
                    expect(
                        rust_src.known_env(root, var, keys, aliases, direct),
                        f"{who}: {var} is no key of libs/config (nor read directly)",
                    )
        for secret in render.kinds("Secret"):
            for var in list(secret.get("data", {})) + list(secret.get("stringData", {})):
                if var.startswith("RAMEN_"):
                    expect(
                        rust_src.known_env(root, var, keys, aliases, direct),
                        f"{name} Secret {secret['metadata']['name']}: {var} unknown",
                    )


NATS_AUTH = pathlib.Path(__file__).resolve().parent / "values" / "nats-auth.yaml"
NATS_DIR = "/etc/ramen/nats"


def _nats_mounts(render, secret: str) -> None:
    """Each service mounts only its own `.creds` from `secret` (the zone-manager also the node
    signing key) and names it in RAMEN_NATS_CREDS."""
    for deployment in render.kinds("Deployment"):
        service = deployment["metadata"]["name"].removeprefix(f"{RELEASE}-")
        pod = deployment["spec"]["template"]["spec"]
        volume = next((v for v in pod["volumes"] if v["name"] == "nats-auth"), None)
        expect(volume is not None, f"{service}: no nats-auth volume")
        expect(volume["secret"]["secretName"] == secret, f"{service}: mounts {volume['secret']}")
        keys = sorted(i["key"] for i in volume["secret"]["items"])
        want = sorted([f"{service}.creds"] + (["node-signing.nk"] if service == "zone-manager" else []))
        expect(keys == want, f"{service}: mounts {keys}, want only {want}")
        mounts = [m for m in container(deployment)["volumeMounts"] if m["name"] == "nats-auth"]
        expect(
            mounts == [{"name": "nats-auth", "mountPath": NATS_DIR, "readOnly": True}],
            f"{service}: {mounts}",
        )
        got = env_of(deployment)
        expect(
            got.get("RAMEN_NATS_CREDS") == f"{NATS_DIR}/{service}.creds",
            f"{service}: RAMEN_NATS_CREDS={got.get('RAMEN_NATS_CREDS')}",
        )
        key = got.get("RAMEN_NATS_SIGNING_KEY")
        want_key = f"{NATS_DIR}/node-signing.nk" if service == "zone-manager" else None
        expect(key == want_key, f"{service}: RAMEN_NATS_SIGNING_KEY={key}")


def nats_users(ctx) -> None:
    """prod: from the existing Secret; dev + the generated values: <release>-nats-auth with one
    key per service and the node signing key; values.yaml alone: nothing mounted."""
    _nats_mounts(ctx.prod(), "ramen-nats-auth")
    render = ctx.render("nats-auth", ("values-dev.yaml", NATS_AUTH), ctx.dev_sets)
    _nats_mounts(render, f"{RELEASE}-nats-auth")
    secret = render.get("Secret", f"{RELEASE}-nats-auth")
    keys = sorted(secret["data"])
    want = sorted([f"{s}.creds" for s in ctx.cli.services] + ["node-signing.nk"])
    expect(keys == want, f"{RELEASE}-nats-auth keys {keys}, want {want}")
    fixture = yaml.safe_load(NATS_AUTH.read_text())["global"]["secrets"]["nats"]
    creds = base64.b64decode(secret["data"]["deployer.creds"]).decode()
    expect(creds == fixture["credentials"]["deployer"], "deployer.creds is not the value given")
    for deployment in ctx.ok("values.yaml").kinds("Deployment"):
        expect("RAMEN_NATS_CREDS" not in env_of(deployment), "values.yaml alone mounts credentials")
