"""What must be in the rendered chart, single sign-on for people: global.config.sso reaches
auth (which runs the flow) and the api-gateway (which serves it), and the client secret reaches
auth alone, as a secretKeyRef to the operator's Secret or to the one the chart renders, so its
value is in no pod spec. Without sso values nothing of it is rendered."""

import yaml

from harness import RELEASE, Suite, container, env, expect

SECRET_VAR = "RAMEN_SSO__CLIENT_SECRET"
# A value that would be found if the chart wrote it inline anywhere in a Deployment.
VALUE = "sso-secret-that-must-stay-in-its-Secret"
SETTINGS = {
    "global.config.sso.issuer": ("RAMEN_SSO__ISSUER", "https://login.example.com/tenant/v2.0"),
    "global.config.sso.clientId": ("RAMEN_SSO__CLIENT_ID", "ramen-people"),
    "global.config.sso.publicUrl": ("RAMEN_SSO__PUBLIC_URL", "https://ramen.example.com"),
    "global.config.sso.superAdminGroups": ("RAMEN_SSO__SUPER_ADMIN_GROUPS", "platform-admins"),
    "global.config.sso.passwordSignIn": ("RAMEN_SSO__PASSWORD_SIGN_IN", "false"),
}
SETS = tuple(("--set", f"{key}={value}") for key, (_, value) in SETTINGS.items())


def run(suite: Suite, ctx, full_render) -> None:
    suite.check("sso: settings reach auth and api-gateway (existing Secret)", existing, ctx)
    suite.check("sso: client secret from global.secrets.sso.clientSecret", generated, ctx)
    suite.check("sso: every global.config.sso knob, chart's Secret", full, full_render, ctx)
    suite.check("sso: nothing rendered without sso values", absent, ctx)


def _secret_ref(render, service: str):
    """The client-secret entry of a service's env: its secretKeyRef, None when absent."""
    deployment = render.get("Deployment", f"{RELEASE}-{service}")
    entries = [e for e in container(deployment).get("env", []) if e["name"] == SECRET_VAR]
    if not entries:
        return None
    expect(len(entries) == 1, f"{service}: {SECRET_VAR} {len(entries)} times")
    entry = entries[0]
    expect("value" not in entry, f"{service}: {SECRET_VAR} is inline: {entry}")
    return entry.get("valueFrom", {}).get("secretKeyRef")


def _only_auth_holds_secret(render, ref: dict, ctx) -> None:
    got = _secret_ref(render, "auth")
    expect(got == ref, f"auth: {SECRET_VAR} secretKeyRef {got}, want {ref}")
    for service in ctx.cli.services:
        if service != "auth":
            other = _secret_ref(render, service)
            expect(
                other is None, f"{service} holds the client secret ({other}); only auth needs it"
            )
    for deployment in render.kinds("Deployment"):
        expect(
            VALUE not in yaml.safe_dump(deployment),
            f"{deployment['metadata']['name']}: the client secret's value is in the pod spec",
        )


def _settings_reach(render) -> None:
    for service in ("auth", "api-gateway"):
        got = env(render, service)
        for key, (var, value) in SETTINGS.items():
            expect(
                got.get(var) == value, f"{service}: {var}={got.get(var)!r}, want {value!r} ({key})"
            )


def existing(ctx) -> None:
    render = ctx.render(
        "sso-existing",
        ("values-prod.yaml",),
        SETS
        + (
            ("--set", "global.secrets.sso.existingSecret=idp-client"),
            ("--set", "global.secrets.sso.existingSecretKey=secret"),
        ),
    )
    _settings_reach(render)
    _only_auth_holds_secret(render, {"name": "idp-client", "key": "secret"}, ctx)
    secrets = render.names("Secret")
    expect(not secrets, f"Secrets rendered beside existingSecret: {secrets}")


def generated(ctx) -> None:
    render = ctx.render(
        "sso-generated",
        ("values-prod.yaml",),
        SETS + (("--set", f"global.secrets.sso.clientSecret={VALUE}"),),
    )
    _settings_reach(render)
    _only_auth_holds_secret(render, {"name": f"{RELEASE}-sso", "key": "client-secret"}, ctx)
    data = render.get("Secret", f"{RELEASE}-sso")["stringData"]
    expect(data == {"client-secret": VALUE}, f"{RELEASE}-sso holds {sorted(data)}")


def full(full_render, ctx) -> None:
    """full-config.yaml sets every knob (config.py checks each reaches every service); its
    client secret goes to auth only."""
    render = full_render(ctx)
    _only_auth_holds_secret(render, {"name": f"{RELEASE}-sso", "key": "client-secret"}, ctx)
    data = render.get("Secret", f"{RELEASE}-sso")["stringData"]
    expect(data == {"client-secret": "full-sso-client-secret"}, f"{RELEASE}-sso holds {data}")


def absent(ctx) -> None:
    for name in ("values.yaml", "values-prod.yaml", "values-dev.yaml"):
        render = ctx.ok(name)
        expect(f"{RELEASE}-sso" not in render.names("Secret"), f"{name}: {RELEASE}-sso rendered")
        for service in ctx.cli.services:
            got = {k for k in env(render, service) if k.startswith("RAMEN_SSO__")}
            # The two booleans carry the binary's own defaults; nothing else is rendered.
            want = {"RAMEN_SSO__TRUST_EMAIL", "RAMEN_SSO__PASSWORD_SIGN_IN"}
            expect(got == want, f"{name} {service}: {sorted(got)}, want only {sorted(want)}")
            passwords = env(render, service)["RAMEN_SSO__PASSWORD_SIGN_IN"]
            expect(passwords == "true", f"{name} {service}: passwords {passwords}")
            expect(_secret_ref(render, service) is None, f"{name} {service}: a client secret")
