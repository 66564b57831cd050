"""Values the chart must refuse: each render fails, and Helm's error names the value to fix
(and, where it helps, what was wrong with it)."""

import pathlib

from harness import Suite, expect

PROD = ("values-prod.yaml",)
DEV = ("values-dev.yaml",)


def s(key: str, value: str) -> tuple[str, str]:
    return ("--set", f"{key}={value}")


def ss(key: str, value: str) -> tuple[str, str]:
    return ("--set-string", f"{key}={value}")


NATS_AUTH = str(pathlib.Path(__file__).resolve().parent / "values" / "nats-auth.yaml")

# (case, values files, --set flags, the texts the error must contain)
CASES = [
    (
        "NATS credentials beside an existing NATS Secret",
        PROD,
        [s("global.secrets.nats.signingKey", "SAAB")],
        ["global.secrets.nats.credentials/signingKey", "existingSecret (ramen-nats-auth)"],
    ),
    (
        "NATS credentials missing a service",
        DEV + (NATS_AUTH,),
        [s("global.secrets.nats.credentials.rebalancer", ""), s("nats.enabled", "false")],
        ["global.secrets.nats.credentials.rebalancer", "ramen nats-auth init"],
    ),
    (
        "NATS node signing key that is no account seed",
        DEV + (NATS_AUTH,),
        [s("global.secrets.nats.signingKey", "not-a-seed"), s("nats.enabled", "false")],
        ["global.secrets.nats.signingKey", "node-signing.nk"],
    ),
    ("values.yaml alone (no NATS URL)", (), (), ["global.config.nats.url is required"]),
    (
        "NATS URL with an http scheme",
        PROD,
        [s("global.config.nats.url", "http://nats.shared:4222")],
        ['global.config.nats.url is "http://nats.shared:4222"'],
    ),
    (
        "KEDA monitoring endpoint with a scheme",
        PROD,
        [
            s("deployer.keda.enabled", "true"),
            s("global.config.nats.monitoringEndpoint", "http://nats.shared:8222"),
        ],
        ['global.config.nats.monitoringEndpoint is "http://nats.shared:8222"', "without a scheme"],
    ),
    (
        "grace below drain + margin",
        PROD,
        [s("deployer.terminationGracePeriodSeconds", "100")],
        ["deployer.terminationGracePeriodSeconds=100", "= 930"],
    ),
    (
        "progress deadline not above grace",
        PROD,
        [s("deployer.progressDeadlineSeconds", "930")],
        ["deployer.progressDeadlineSeconds=930", "terminationGracePeriodSeconds (930)"],
    ),
    (
        "grace below preStop + drain + margin (api-gateway)",
        PROD,
        [s("api-gateway.terminationGracePeriodSeconds", "64")],
        ["api-gateway.terminationGracePeriodSeconds=64", "preStopSleepSeconds (5)", "= 65"],
    ),
    (
        "unknown drain mode (service)",
        PROD,
        [s("auth.drain.mode", "graceful")],
        ['auth.drain.mode is "graceful"', "complete or interrupt"],
    ),
    (
        "unknown drain mode (global)",
        PROD,
        [s("global.config.drain.mode", "later")],
        ['global.config.drain.mode is "later"'],
    ),
    (
        "negative drain timeout",
        PROD,
        [s("rebalancer.drain.timeoutSeconds", "-5")],
        ["rebalancer.drain.timeoutSeconds is -5", "at least 1"],
    ),
    (
        "drain margin not a number",
        PROD,
        [ss("global.config.drain.marginSeconds", "lots")],
        ["global.config.drain.marginSeconds is lots", "whole number"],
    ),
    (
        "short JWT secret",
        DEV,
        [s("global.secrets.auth.jwtSecret", "short")],
        ["global.secrets.auth.jwtSecret must be at least 32 bytes"],
    ),
    (
        "sealing key not 32 bytes",
        DEV,
        [s("global.secrets.auth.secretsKey", "c2l4dGVlbiBieXRlcyEhIQ==")],
        ["global.secrets.auth.secretsKey must be exactly 32 bytes"],
    ),
    (
        "auth value beside existingSecret",
        PROD,
        [s("global.secrets.auth.jwtSecret", "0123456789abcdef0123456789abcdef")],
        [
            "global.secrets.auth.jwtSecret is set together with"
            " global.secrets.auth.existingSecret (ramen-auth)"
        ],
    ),
    (
        "backends value beside existingSecret",
        PROD,
        [s("global.secrets.backends.mongoUri", "mongodb://m:27017")],
        [
            "global.secrets.backends.mongoUri is set together with"
            " global.secrets.backends.existingSecret (ramen-backends)"
        ],
    ),
    (
        "sso client secret beside existingSecret",
        PROD,
        [s("global.secrets.sso.existingSecret", "idp"), s("global.secrets.sso.clientSecret", "x")],
        [
            "global.secrets.sso.clientSecret is set together with"
            " global.secrets.sso.existingSecret (idp)",
            "key client-secret",
        ],
    ),
    (
        "passwords off without single sign-on (no one could sign in)",
        PROD,
        [s("global.config.sso.passwordSignIn", "false")],
        ["global.config.sso.passwordSignIn=false needs global.config.sso.issuer"],
    ),
    (
        "sso issuer without a client id",
        PROD,
        [
            s("global.config.sso.issuer", "https://idp.example.com"),
            s("global.config.sso.publicUrl", "https://ramen.example.com"),
        ],
        ["global.config.sso.clientId is required with global.config.sso.issuer"],
    ),
    (
        "sso issuer without the public URL (the redirect URI)",
        PROD,
        [
            s("global.config.sso.issuer", "https://idp.example.com"),
            s("global.config.sso.clientId", "r"),
        ],
        ["global.config.sso.publicUrl is required", "/api/auth/sso/callback"],
    ),
    (
        "KEDA min above max",
        PROD,
        [
            s("deployer.keda.enabled", "true"),
            s("deployer.keda.minReplicas", "5"),
            s("deployer.keda.maxReplicas", "2"),
        ],
        ["deployer.keda.minReplicas (5) is above deployer.keda.maxReplicas (2)"],
    ),
    (
        "KEDA consumer empty",
        PROD,
        [s("deployer.keda.enabled", "true"), s("deployer.keda.consumer", "")],
        ["deployer.keda.consumer is empty"],
    ),
    (
        "api-gateway replicas without shared state",
        DEV,
        [s("api-gateway.replicaCount", "3"), s("global.config.redis.url", "")],
        ["api-gateway.replicaCount=3 needs shared replica state", "global.config.redis.url"],
    ),
    (
        "development S3 store without an access key pair (it would serve anyone)",
        DEV,
        [s("global.secrets.backends.s3SecretAccessKey", ""), s("nats.enabled", "false")],
        ["devStack.s3 needs global.secrets.backends.s3AccessKeyId and s3SecretAccessKey"],
    ),
    (
        "Sentinels without a master name",
        PROD,
        [s("global.config.redis.masterName", "")],
        ["global.config.redis.masterName is required with global.config.redis.sentinelAddrs"],
    ),
    (
        "egress port out of range",
        PROD,
        [("--set-json", "global.networkPolicy.egress.dependencies.nats.ports=[70000]")],
        ["global.networkPolicy.egress.dependencies.nats.ports has 70000"],
    ),
    (
        "egress dependency without ports",
        PROD,
        [("--set-json", "global.networkPolicy.egress.dependencies.s3.ports=[]")],
        ["global.networkPolicy.egress.dependencies.s3.ports is empty"],
    ),
    (
        "namespace prefix without a trailing dash",
        PROD,
        [s("zone-manager.rbac.namespacePrefix", "ramen")],
        ['zone-manager.rbac.namespacePrefix is "ramen"'],
    ),
]


def run(suite: Suite, ctx) -> None:
    for case, values, sets, texts in CASES:
        suite.check(f"refused: {case}", refused, ctx, values, tuple(sets), texts)


def refused(ctx, values, sets, texts) -> None:
    error = ctx.fails(values, sets)
    missing = [t for t in texts if t not in error]
    expect(not missing, f"error does not say {missing}: {error}")
