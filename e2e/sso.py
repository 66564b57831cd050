"""SSO for people end to end (issue 29 item 4): people sign in to ramen's console and CLI with
an OpenID provider (npm `oidc-provider`, the script libs/testkit starts: its confidential client
`ramen`, its users alice — email verified, groups payments and staff — and bob, whose email is
not verified).

SSO is static config, so the provider runs before ramen starts (`People`, from scenario.py's
main) and ramen gets `sso.*` in its environment: `payments` maps to the scenario's group as
member, and the super-admin group is one alice is not in.

A browser here is an HTTP client with a cookie jar whose redirects are followed by hand, so a
step can stop at any hop (the callback, the CLI's loopback) and replay it elsewhere; it answers
the provider's login and consent pages as its person would. A signed-in callback answers a page
that moves on (meta refresh) rather than a redirect: the session cookies are SameSite=Strict,
and a browser does not send them on a redirect chain that began on the provider's site (the
console's browser test puts the provider on another site to prove it). What is proved: the console's flow
(start, the provider, the callback: a session, back on `next`, the mapped membership); a
callback taken to another browser, or replayed, gets no session; `next` never leaves the site;
bob's unverified email does not take over bob's password account, and without one he gets his
own; `ramen login --sso` signs the CLI in through the same flow and its loopback; the CLI's code
needs its verifier and works once; the sign-ins are audited. In `up`, a second short `ramen up`
with password sign-in turned off: logins and password changes refused naming it, no bootstrap
admin, SSO sign-in works and makes super admins from the mapped group.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import secrets
import subprocess
import threading
import urllib.parse
from pathlib import Path
from typing import Any, Callable

import httpx2

from oauth import Provider

CLIENT_ID = "ramen"
CLIENT_SECRET = "ramen-secret"
DISPLAY_NAME = "Example IdP"
CALLBACK = "/api/auth/sso/callback"
SESSION_COOKIES = ("ramen_access", "ramen_refresh", "ramen_csrf")
# A provider group alice is not in: she must not become a super admin.
ADMIN_GROUP = "ramen-admins"
BOB_PASSWORD = "bob-password-0123456789"
REDIRECTS = (302, 303, 307)


class People:
    """The provider people sign in with, started before ramen. `spare_api`: also registers the
    callback of a second ramen (the password-off instance) on a port reserved now."""

    def __init__(self, work: Path, free_port: Callable[[], int], api: str, spare_api: bool = False,
                 issuer_host: str = "127.0.0.1") -> None:
        self.spare_port = free_port() if spare_api else None
        apis = [api] + ([f"http://127.0.0.1:{self.spare_port}"] if self.spare_port else [])
        self.provider = Provider(work, free_port(), sso_redirect_uris=[f"{a}{CALLBACK}" for a in apis],
                                 issuer_host=issuer_host)
        self.issuer = self.provider.issuer
        self.log = self.provider.log

    def settings(self, memberships: str, **overrides: str) -> dict[str, str]:
        """ramen's `sso.*` as environment variables (`overrides`: other keys, lower case)."""
        keys = {"issuer": self.issuer, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                # The test provider sends groups only for the `groups` scope (as Okta does).
                "scopes": "openid,email,profile,groups", "display_name": DISPLAY_NAME,
                "memberships": memberships, "super_admin_groups": ADMIN_GROUP, **overrides}
        return {f"RAMEN_SSO__{k.upper()}": v for k, v in keys.items()}

    def stop(self) -> None:
        self.provider.stop()


class Browser:
    """One person's browser: cookies, and redirects followed one at a time."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.http = httpx2.Client(timeout=15, follow_redirects=False)

    def get(self, url: str) -> httpx2.Response:
        return self.http.get(url)

    def until(self, url: str, stop: Callable[[str], bool]) -> str:
        """Goes to `url` and on through redirects and the provider's pages (login as this
        person with any password, consent), until the next URL is one `stop` accepts; returns
        that URL without loading it."""
        for _ in range(40):
            if stop(url):
                return url
            page = self.http.get(url)
            if page.status_code in REDIRECTS:
                url = urllib.parse.urljoin(str(page.url), page.headers["location"])
                continue
            action = re.search(r'<form[^>]*action="([^"]+)"', page.text)
            if page.status_code != 200 or action is None:
                raise RuntimeError(f"{self.user}'s browser stuck at {url}: {page.status_code} {page.text[:500]}")
            form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
            if 'name="login"' in page.text:
                form.update(login=self.user, password="any")
            answer = self.http.post(urllib.parse.urljoin(str(page.url), action.group(1)), data=form)
            if answer.status_code not in REDIRECTS:
                raise RuntimeError(f"the provider did not take {self.user}'s form: {answer.status_code} {answer.text[:500]}")
            url = urllib.parse.urljoin(str(answer.url), answer.headers["location"])
        raise RuntimeError(f"{self.user}'s browser went round in circles from {url}")

    def to_callback(self, api: str, **query: str) -> str:
        """The console's flow from its start to the provider's redirect back to ramen: the
        callback URL, not yet loaded."""
        start = f"{api}/api/auth/sso/start?{urllib.parse.urlencode(query)}"
        return self.until(start, lambda u: u.startswith(f"{api}{CALLBACK}"))

    def me(self, api: str) -> dict[str, Any]:
        answer = self.http.get(f"{api}/api/auth/me")
        if answer.status_code != 200:
            raise RuntimeError(f"/api/auth/me with the browser's session: {answer.status_code} {answer.text}")
        return answer.json()


def set_cookies(answer: httpx2.Response) -> dict[str, str]:
    """The cookies an answer sets (name → the whole Set-Cookie value), ones it clears left out."""
    found = {}
    for value in answer.headers.get_list("set-cookie"):
        name, _, rest = value.partition("=")
        if not rest.startswith(";") and "max-age=0" not in rest.lower():
            found[name.strip()] = value
    return found


def landing(api: str, answer: httpx2.Response) -> str:
    """Where a redirect sends the browser, as an absolute URL ("" when it is no redirect)."""
    if answer.status_code not in REDIRECTS:
        return ""
    return urllib.parse.urljoin(f"{api}/", answer.headers.get("location", ""))


def moves_on(api: str, answer: httpx2.Response) -> str:
    """Where a signed-in callback's page sends the browser (its meta refresh), absolute; ""
    when the answer is no such page."""
    refresh = re.search(r'<meta http-equiv="?refresh"? content="0;url=([^"]+)"', answer.text)
    if answer.status_code != 200 or refresh is None:
        return ""
    return urllib.parse.urljoin(f"{api}/", html.unescape(refresh.group(1)))


def button_view(password_sign_in: bool) -> dict[str, Any]:
    """GET /api/auth/sso as built (see the report: the design named `display_name`)."""
    return {"enabled": True, "button": f"Sign in with {DISPLAY_NAME}", "password_sign_in": password_sign_in}


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class Admin:
    """The REST API with the scenario's CLI session (the bootstrap super admin)."""

    def __init__(self, cluster: Any, errors: list[str]) -> None:
        self.cluster, self.errors = cluster, errors

    def call(self, method: str, path: str, body: Any = None) -> httpx2.Response:
        token = json.loads((self.cluster.work / "cli.json").read_text())["access_token"]
        answer = httpx2.request(method, f"{self.cluster.api}{path}", json=body, timeout=15,
                                headers={"authorization": f"Bearer {token}"})
        if answer.status_code >= 400:
            self.errors.append(f"{answer.status_code} {path}: {answer.text}")
            raise RuntimeError(f"{method} {path}: {answer.status_code} {answer.text}")
        return answer


def sso_flow(cluster: Any, group: str, people: People, helpers: dict[str, Any]) -> None:
    """`helpers`: the scenario's step, check, eventually, free_port, error_bodies and (in `up`)
    new_cluster(work, api_port)."""
    step, check = helpers["step"], helpers["check"]
    api = cluster.api
    admin = Admin(cluster, helpers["error_bodies"])
    cluster.never_shown(CLIENT_SECRET)

    step("SSO: GET /api/auth/sso names the provider's button; password sign-in still on")
    shown = httpx2.get(f"{api}/api/auth/sso", timeout=10).json()
    check(shown == button_view(password_sign_in=True),
          "SSO enabled with its button's words, passwords still allowed", shown)

    alice_id = console_sign_in(api, group, helpers)
    cross_browser_and_open_redirect(api, helpers)
    bob(api, admin, helpers)
    cli_sign_in(cluster, group, helpers)
    token_exchange(api, helpers)

    step("SSO: sign-ins audited: alice's, by her, with the membership the mapping gave; the console's "
         "and the CLI's; bob's refusal")
    eventually = helpers["eventually"]

    def audited() -> list[dict[str, Any]] | None:
        entries = admin.call("GET", "/api/audit?action_prefix=session.sso_login&page_size=200").json()["items"]
        hers = [e for e in entries if e["actor"] == alice_id and e["outcome"] == "success"]
        mapped = any(e["details"].get(f"member:{group}") == "member" for e in hers)
        via = {e["details"].get("via") for e in hers}
        refused = any(e["outcome"] in ("failure", "denied") and "bob@example.com" in e["details"].get("error", "")
                      for e in entries)
        if mapped and via >= {"console", "cli"} and refused:
            return entries
        seen = [(e["actor"], e["outcome"], e["details"]) for e in entries]
        raise RuntimeError(f"mapped={mapped} via={via} refused={refused} in {seen}")

    entries = eventually("session.sso_login entries: alice's (console and CLI, the mapped membership) and "
                         "bob's refusal", 60, audited)
    print(f"    {len(entries)} session.sso_login entries", flush=True)

    if "new_cluster" in helpers:
        password_off(cluster, people, helpers)


def console_sign_in(api: str, group: str, helpers: dict[str, Any]) -> str:
    """alice through the console's flow; a second load of the same callback. Returns her id."""
    check, errors = helpers["check"], helpers["error_bodies"]
    helpers["step"](f"SSO: alice signs in in a browser: the provider, back on /groups with a session, "
                    f"member of {group} by the mapping")
    alice = Browser("alice")
    start = alice.get(f"{api}/api/auth/sso/start?next=/groups")
    bound = set_cookies(start).get("ramen_sso", "")
    check(start.status_code in REDIRECTS and bound, "the start redirects and binds the flow to the browser",
          (start.status_code, start.headers))
    flags = bound.lower()
    check("httponly" in flags and "samesite=lax" in flags and "path=/api/auth/sso" in flags,
          "the flow's cookie HttpOnly, SameSite=Lax, on /api/auth/sso only", bound)
    query = urllib.parse.parse_qs(urllib.parse.urlparse(start.headers["location"]).query)
    check(query.get("client_id") == [CLIENT_ID] and query.get("code_challenge_method") == ["S256"]
          and query.get("state") and query.get("nonce") and "groups" in query.get("scope", [""])[0].split(),
          "code + PKCE S256 + state + nonce, the groups scope asked for", query)
    callback = alice.until(landing(api, start), lambda u: u.startswith(f"{api}{CALLBACK}"))
    signed_in = alice.get(callback)
    check(moves_on(api, signed_in) == f"{api}/groups", "the callback's page moves her on to /groups",
          (signed_in.status_code, signed_in.headers, signed_in.text[:300]))
    check(set(SESSION_COOKIES) <= set(set_cookies(signed_in)), "the session cookies set by the callback",
          signed_in.headers.get_list("set-cookie"))
    me = alice.me(api)
    user = me["user"]
    check(user["email"] == "alice@example.com" and user["super_admin"] is False and not user["must_change_password"],
          "alice's own account, no super admin (her groups do not include the admin group)", me)
    check([(m["group"], m["role"]) for m in me["memberships"]] == [(group, "member")],
          f"member of {group} from `payments`", me["memberships"])

    check("ramen_sso" in {c.split("=")[0] for c in signed_in.headers.get_list("set-cookie")}
          and "ramen_sso" not in set_cookies(signed_in), "the flow's cookie cleared", signed_in.headers)
    # The same callback again: in the same browser (its flow cookie is gone), and with the
    # flow's cookie put back by hand (the state itself is spent).
    state = urllib.parse.parse_qs(urllib.parse.urlparse(callback).query)["state"][0]
    for how, answer in (("in the same browser", alice.get(callback)),
                        ("with the flow's cookie", httpx2.get(callback, headers={"cookie": f"ramen_sso={state}"},
                                                              timeout=15))):
        errors.append(f"{answer.status_code} {CALLBACK}: {answer.text}")
        # 403 when the flow's cookie is gone (not this browser), 400 when the state is spent.
        check(answer.status_code in (400, 403) and not set(set_cookies(answer)) & set(SESSION_COOKIES),
              f"the same callback a second time {how}: refused, no session", (answer.status_code, answer.text))
        print(f"    again {how}: {answer.status_code} {answer.text[:160]}", flush=True)

    # An account SSO created has no password.
    refused = httpx2.post(f"{api}/api/auth/login", json={"email": "alice@example.com", "password": "any-password-123"},
                          timeout=10)
    errors.append(f"{refused.status_code} /api/auth/login: {refused.text}")
    check(refused.status_code == 401, "no password sign-in for an account SSO created", (refused.status_code, refused.text))
    return user["id"]


def cross_browser_and_open_redirect(api: str, helpers: dict[str, Any]) -> None:
    check, errors = helpers["check"], helpers["error_bodies"]
    helpers["step"]("SSO: a callback taken to another browser is refused; `next` never leaves the site")
    # The callback an attacker holds after signing in at the provider: loaded by a browser
    # that never started a flow, and by one that started its own, it signs neither in.
    attacker = Browser("alice")
    callback = attacker.to_callback(api, next="/groups")
    other = Browser("bob")
    started = other.get(f"{api}/api/auth/sso/start?next=/groups")
    check("ramen_sso" in set_cookies(started), "the other browser's own flow cookie", started.headers)
    for who, browser in (("no flow of its own", Browser("bob")), ("its own flow", other)):
        answer = browser.get(callback)
        errors.append(f"{answer.status_code} {CALLBACK}: {answer.text}")
        check(answer.status_code == 403 and answer.headers.get("content-type", "").startswith("application/json")
              and "browser" in answer.json().get("error", {}).get("message", ""),
              f"403 JSON naming the browser for one with {who}", (answer.status_code, answer.text))
        check(not set(set_cookies(answer)) & set(SESSION_COOKIES), f"no session for a browser with {who}",
              answer.headers.get_list("set-cookie"))
        print(f"    {who}: {answer.status_code} {answer.text[:200]}", flush=True)
    # Those refusals spent nothing: the browser that started the flow still finishes it.
    own = attacker.get(callback)
    check(moves_on(api, own) == f"{api}/groups" and set(SESSION_COOKIES) <= set(set_cookies(own)),
          "the browser that started it signs in with the same callback", (own.status_code, own.text[:300]))

    for next_ in ("//evil.example", "https://evil.example/x", "/\\evil.example"):
        back = attacker.get(attacker.to_callback(api, next=next_))
        check(moves_on(api, back) == f"{api}/", f"next={next_} ends at /", (back.status_code, back.text[:300]))


def bob(api: str, admin: Admin, helpers: dict[str, Any]) -> None:
    check = helpers["check"]
    helpers["step"]("SSO: bob's unverified email does not take over bob@example.com's password account; "
                    "without one he gets his own")
    existing = admin.call("POST", "/api/users", {"email": "bob@example.com", "password": BOB_PASSWORD}).json()["user"]
    browser = Browser("bob")
    refused = browser.get(browser.to_callback(api, next="/groups"))
    where = landing(api, refused)
    error = urllib.parse.parse_qs(urllib.parse.urlparse(where).query).get("error", [""])[0]
    check(refused.status_code in REDIRECTS and where.startswith(f"{api}/sign-in?") and "bob@example.com" in error,
          "back on the sign-in page with an error naming the email", (refused.status_code, where))
    check(not set(set_cookies(refused)) & set(SESSION_COOKIES), "no session for bob", refused.headers.get_list("set-cookie"))
    print(f"    refused: {error}", flush=True)
    page = browser.get(where)
    check(page.status_code == 200 and "Single sign-on failed" in page.text and "bob@example.com" in page.text,
          "the sign-in page shows why", page.text[:500])
    users = admin.call("GET", "/api/users?email_prefix=bob").json()["items"]
    check([u["id"] for u in users] == [existing["id"]], "bob's password account alone, untouched", users)
    still = httpx2.post(f"{api}/api/auth/login", json={"email": "bob@example.com", "password": BOB_PASSWORD}, timeout=10)
    check(still.status_code == 200, "bob's password still signs him in", (still.status_code, still.text))

    admin.call("DELETE", f"/api/users/{existing['id']}")
    welcomed = browser.get(browser.to_callback(api, next="/groups"))
    check(moves_on(api, welcomed) == f"{api}/groups", "without that account bob is signed in",
          (welcomed.status_code, welcomed.headers.get("location"), welcomed.text[:300]))
    me = browser.me(api)
    check(me["user"]["email"] == "bob@example.com" and me["user"]["id"] != existing["id"] and me["memberships"] == [],
          "a new account for bob, no memberships (`staff` maps to nothing)", me)


def cli_sign_in(cluster: Any, group: str, helpers: dict[str, Any]) -> None:
    check, eventually = helpers["check"], helpers["eventually"]
    helpers["step"]("SSO: `ramen login --sso --no-browser`: the URL it prints, the browser, its loopback; "
                    "then a command as alice")
    config = cluster.work / "cli-alice.json"
    env = dict(cluster.base_env, RAMEN_CLI_CONFIG=str(config))
    proc = subprocess.Popen([str(cluster.ramen), "login", "--sso", "--no-browser", "--api", cluster.api],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        def printed() -> str | None:
            for i, line in enumerate(lines[1:], 1):
                if line.startswith("  http") and lines[i - 1].strip() == "Open this URL in a browser to sign in:":
                    return line.strip()
            if proc.poll() is not None:
                raise RuntimeError(f"the CLI exited {proc.returncode}: {''.join(lines)}")
            return None

        url = eventually("the CLI's sign-in URL on stderr", 30, printed)
        query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
        check(url.startswith(f"{cluster.api}/api/auth/sso/start?") and query.get("cli_port")
              and query.get("code_challenge"), "the gateway's start with the CLI's port and challenge", url)
        port = query["cli_port"][0]
        loopback = Browser("alice").until(url, lambda u: urllib.parse.urlparse(u).netloc == f"127.0.0.1:{port}")
        check(urllib.parse.urlparse(loopback).path == "/callback"
              and urllib.parse.parse_qs(urllib.parse.urlparse(loopback).query).get("code"),
              "the gateway sends the browser to the CLI's loopback with a code", loopback)
        answered = httpx2.get(loopback, timeout=15)
        check(answered.status_code < 400, "the CLI's loopback answers the browser", (answered.status_code, answered.text))
        proc.wait(timeout=60)
        reader.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = proc.stdout.read()
    said = out + "".join(lines)
    cluster.cli_errors.append(said)
    check(proc.returncode == 0 and "Signed in as alice@example.com" in said, "the CLI exits 0, signed in as alice",
          (proc.returncode, said))
    stored = json.loads(config.read_text())
    check(stored["email"] == "alice@example.com" and stored["refresh_token"] and config.stat().st_mode & 0o077 == 0,
          "alice's credentials stored like a password login's, readable by her alone", oct(config.stat().st_mode))
    listed = subprocess.run([str(cluster.ramen), "--json", "group", "list"], env=env, capture_output=True,
                            text=True, timeout=60)
    cluster.cli_errors.append(listed.stderr)
    check(listed.returncode == 0, "`ramen group list` as alice", listed.stderr)
    answer = json.loads(listed.stdout)
    names = [g["name"] for g in (answer["items"] if isinstance(answer, dict) else answer)]
    check(names == [group], f"alice sees {group}, hers by the mapping, and nothing else", names)
    check(json.loads((cluster.work / "cli.json").read_text())["email"] != "alice@example.com",
          "the admin's own CLI login untouched", None)


def token_exchange(api: str, helpers: dict[str, Any]) -> None:
    check, errors = helpers["check"], helpers["error_bodies"]
    helpers["step"]("SSO: the CLI's code needs its verifier, and works once")
    browser = Browser("alice")

    def code(verifier: str) -> str:
        # The CLI's flow without the CLI: nothing listens on the port, the code is read off
        # the redirect to it.
        port = helpers["free_port"]()
        start = f"{api}/api/auth/sso/start?{urllib.parse.urlencode({'cli_port': port, 'code_challenge': s256(verifier)})}"
        loopback = browser.until(start, lambda u: urllib.parse.urlparse(u).netloc == f"127.0.0.1:{port}")
        return urllib.parse.parse_qs(urllib.parse.urlparse(loopback).query)["code"][0]

    def exchange(code_: str, verifier: str) -> httpx2.Response:
        answer = httpx2.post(f"{api}/api/auth/sso/token", json={"code": code_, "code_verifier": verifier}, timeout=10)
        if answer.status_code >= 400:
            errors.append(f"{answer.status_code} /api/auth/sso/token: {answer.text}")
        return answer

    verifier = secrets.token_urlsafe(48)
    wrong = exchange(code(verifier), secrets.token_urlsafe(48))
    check(wrong.status_code in (400, 401) and "access_token" not in wrong.text,
          "a wrong code_verifier refused", (wrong.status_code, wrong.text))
    right = code(verifier)
    session = exchange(right, verifier)
    check(session.status_code == 200 and session.json()["access_token"]
          and session.json()["user"]["email"] == "alice@example.com",
          "the right verifier: alice's session", (session.status_code, session.text))
    twice = exchange(right, verifier)
    check(twice.status_code in (400, 401) and "access_token" not in twice.text,
          "the same code a second time refused", (twice.status_code, twice.text))


def password_off(cluster: Any, people: People, helpers: dict[str, Any]) -> None:
    """A second, short `ramen up` with sso.password_sign_in = false (its own data dir, on the
    port whose callback the provider knows)."""
    step, check, eventually = helpers["step"], helpers["check"], helpers["eventually"]
    errors = helpers["error_bodies"]
    step("SSO: a second ramen up with password sign-in turned off")
    work = cluster.work / "password-off"
    work.mkdir()
    other = helpers["new_cluster"](work, people.spare_port)
    other.base_env.update(people.settings(memberships="payments=absent-group:member",
                                          super_admin_groups="staff", password_sign_in="false"))
    try:
        other.start_up()
        api = other.api
        shown = httpx2.get(f"{api}/api/auth/sso", timeout=10).json()
        check(shown == button_view(password_sign_in=False), "SSO on, passwords off", shown)
        status = httpx2.get(f"{api}/api/auth/bootstrap", timeout=10).json()
        check(status == {"has_users": False, "bootstrap_password_pending": False},
              "no bootstrap admin with a one-time password", status)
        check("one-time password" not in other.logs["ramen"].read_text(errors="replace"),
              "no one-time password in the log", other.tail("ramen"))
        login = httpx2.post(f"{api}/api/auth/login", json={"email": "admin@example.com", "password": "whatever-123"},
                            timeout=10)
        errors.append(f"{login.status_code} /api/auth/login: {login.text}")
        check(login.status_code == 403 and "password sign-in is turned off" in login.text,
              "POST /api/auth/login: 403 naming it", (login.status_code, login.text))

        alice = Browser("alice")
        back = alice.get(alice.to_callback(api, next="/groups"))
        check(moves_on(api, back) == f"{api}/groups", "SSO sign-in still works",
              (back.status_code, back.headers.get("location"), back.text[:300]))
        me = alice.me(api)
        check(me["user"]["email"] == "alice@example.com" and me["user"]["super_admin"] is True and me["memberships"] == [],
              "alice a super admin from `staff`; the mapping to a group that does not exist skipped", me)
        log = other.logs["ramen"]
        eventually("the skipped mapping warned about in the log", 30, lambda: any(
            "WARN" in line and "absent-group" in line for line in log.read_text(errors="replace").splitlines()))
        csrf = alice.http.cookies.get("ramen_csrf")
        change = alice.http.post(f"{api}/api/auth/password", headers={"x-csrf-token": csrf or ""},
                                 json={"current_password": "none", "new_password": "a-new-password-0123456789"})
        errors.append(f"{change.status_code} /api/auth/password: {change.text}")
        check(change.status_code == 403 and "password sign-in is turned off" in change.text,
              "a password change: 403 naming it", (change.status_code, change.text))
    finally:
        other.stop()
        other.traces.stop()
