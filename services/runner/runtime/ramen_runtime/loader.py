"""Find the packages of a snapshot, import them and locate their MCP server objects."""

from __future__ import annotations

import importlib
import os
import re
import sys
import tomllib
import traceback
from dataclasses import dataclass, field
from typing import Any

from .adapter_stdio import StdioAdapter
from .adapters import Adapter
from .kinds import Undrivable, client_class, detect_kind, looks_like_server, make_adapter

MANIFEST = "ramen.toml"
SERVER_ATTRS = ("mcp", "server", "app")
SKIP_DIRS = {"tests"}
# a stdio package's name only ends up in "<name>.<tool>": MCP tool-name characters, no dot
STDIO_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


class ManifestError(Exception):
    pass


@dataclass
class PackageSpec:
    name: str
    server: str | None = None  # "module:attribute" from the manifest
    command: list[str] | None = None  # a stdio MCP server program instead of a Python package
    env: dict[str, str] | None = None  # extra environment for `command`
    cwd: str | None = None  # working directory of `command`, relative to the snapshot root


@dataclass
class Package:
    name: str
    server_ref: str | None = None
    kind: str | None = None
    adapter: Adapter | None = None
    error: dict[str, str] | None = None
    # as listed by the server (original, un-namespaced names)
    tools: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    resource_templates: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)

    def fail(self, message: str, tb: str = "") -> None:
        self.error = {"message": message, "traceback": tb}


_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


def _internal_frame(filename: str) -> bool:
    return filename.startswith(_RUNTIME_DIR) or "importlib" in filename


def error_from_exception(message: str) -> dict[str, str]:
    """The exception being handled -> {"message", "traceback"}, without the runtime's own frames on top."""
    exc = sys.exc_info()[1]
    if exc is None:
        return {"message": message, "traceback": ""}
    tb = exc.__traceback__
    while tb is not None and _internal_frame(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    if tb is None:
        tb = exc.__traceback__
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return {"message": f"{message}: {type(exc).__name__}: {exc}", "traceback": text}


def read_manifest(root: str) -> tuple[bool | None, list[PackageSpec] | None]:
    """Returns (namespace, packages); (None, None) when there is no manifest."""
    path = os.path.join(root, MANIFEST)
    if not os.path.isfile(path):
        return None, None
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"cannot read {MANIFEST}: {exc}") from exc
    namespace = data.get("namespace")
    if namespace is not None and not isinstance(namespace, bool):
        raise ManifestError(f"{MANIFEST}: 'namespace' must be true or false")
    raw = data.get("packages")
    if raw is None:
        return namespace, None
    if isinstance(raw, dict):  # [packages.<name>] tables: the key is the name
        entries = []
        for name, entry in raw.items():
            if not isinstance(entry, dict):
                raise ManifestError(f"{MANIFEST}: packages.{name} must be a table")
            if entry.get("name", name) != name:
                raise ManifestError(f"{MANIFEST}: packages.{name} has a different 'name' ({entry['name']!r})")
            entries.append(dict(entry, name=name))
    elif isinstance(raw, list):
        entries = raw
    else:
        raise ManifestError(
            f"{MANIFEST}: 'packages' must be an array of tables ([[packages]]) or tables ([packages.NAME])"
        )
    specs: list[PackageSpec] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ManifestError(f"{MANIFEST}: packages[{i}] needs a string 'name'")
        if entry["name"] in seen:
            raise ManifestError(f"{MANIFEST}: package {entry['name']!r} is listed twice")
        seen.add(entry["name"])
        specs.append(_spec(entry, f"packages[{i}]" if isinstance(raw, list) else f"packages.{entry['name']}"))
    return namespace, specs


def _spec(entry: dict[str, Any], where: str) -> PackageSpec:
    server = entry.get("server")
    if server is not None and (not isinstance(server, str) or not server):
        raise ManifestError(f"{MANIFEST}: {where}.server must be a string 'module:attribute'")
    command = entry.get("command")
    if command is None:
        for key in ("env", "cwd"):
            if key in entry:
                raise ManifestError(f"{MANIFEST}: {where}.{key} needs a 'command'")
        return PackageSpec(entry["name"], server)
    if server is not None:
        raise ManifestError(f"{MANIFEST}: {where} has both 'server' and 'command'; choose one")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) and a for a in command):
        raise ManifestError(f"{MANIFEST}: {where}.command must be a non-empty array of strings")
    if not STDIO_NAME.match(entry["name"]):
        raise ManifestError(
            f"{MANIFEST}: {where}: a command package's name must be a letter followed by letters, digits, '_' or '-'"
        )
    env = entry.get("env")
    if env is not None and (not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values())):
        raise ManifestError(f"{MANIFEST}: {where}.env must be a table of strings")
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise ManifestError(f"{MANIFEST}: {where}.cwd must be a string")
    return PackageSpec(entry["name"], command=list(command), env=env, cwd=cwd)


def discover(root: str) -> list[PackageSpec]:
    """Every top-level directory with an __init__.py (minus _*, .*, tests), sorted by name."""
    specs = []
    for entry in sorted(os.listdir(root)):
        if entry.startswith(("_", ".")) or entry in SKIP_DIRS:
            continue
        if os.path.isfile(os.path.join(root, entry, "__init__.py")):
            specs.append(PackageSpec(entry))
    return specs


def _resolve_attr(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _search_module(module: Any) -> tuple[Any, str] | None:
    for attr in SERVER_ATTRS:
        obj = getattr(module, attr, None)
        if looks_like_server(obj):
            return obj, f"{module.__name__}:{attr}"
    for attr, obj in list(vars(module).items()):
        if not attr.startswith("__") and looks_like_server(obj):
            return obj, f"{module.__name__}:{attr}"
    return None


def find_server(spec: PackageSpec) -> tuple[Any, str]:
    """Import the package and return (server object, "module:attr"). Raises on failure."""
    if spec.server:
        module_name, _, attr = spec.server.partition(":")
        module = importlib.import_module(module_name)
        if attr:
            obj = _resolve_attr(module, attr)
            client = client_class(obj)
            if client is not None:
                raise LookupError(f"{spec.server} is an MCP client ({client}), not a server")
            if not looks_like_server(obj):
                raise LookupError(
                    f"{spec.server} is a {type(obj).__name__}, not an MCP server object "
                    "(expected async list_tools and call_tool)"
                )
            return obj, spec.server
        found = _search_module(module)
        if found is None:
            raise LookupError(f"no MCP server object found in module {module_name!r}")
        return found

    package = importlib.import_module(spec.name)
    found = _search_module(package)
    if found is not None:
        return found
    sub_name = f"{spec.name}.server"
    try:
        sub = importlib.import_module(sub_name)
    except ModuleNotFoundError as exc:
        if exc.name != sub_name:
            raise
        sub = None
    if sub is not None:
        found = _search_module(sub)
        if found is not None:
            return found
    raise LookupError(
        f"no MCP server object found in package {spec.name!r} (looked for an attribute named "
        f"{', '.join(SERVER_ATTRS)} or any MCPServer/FastMCP instance in {spec.name} and {sub_name}); "
        f"name it with 'server = \"module:attribute\"' in {MANIFEST}"
    )


def undrivable_message(pkg: Package, reason: str) -> str:
    return f"cannot drive package {pkg.name!r} (kind {pkg.kind!r}, {pkg.server_ref}): {reason}"


def stdio_package(spec: PackageSpec, root: str) -> Package:
    """A package served by a stdio MCP server program (started by the adapter's start())."""
    assert spec.command is not None
    adapter = StdioAdapter(spec.name, spec.command, root, spec.cwd, spec.env)
    return Package(spec.name, server_ref=adapter.server_ref, kind=adapter.kind, adapter=adapter)


def import_package(spec: PackageSpec) -> Package:
    pkg = Package(spec.name)
    if not spec.name.isidentifier():
        pkg.fail(f"{spec.name!r} is not a valid Python package name")
        return pkg
    try:
        server, ref = find_server(spec)
    except LookupError as exc:
        pkg.fail(str(exc), traceback.format_exc() if spec.server else "")
        return pkg
    except BaseException as exc:  # noqa: BLE001 - SystemExit etc. from a package's import too
        if isinstance(exc, KeyboardInterrupt):
            raise
        pkg.error = error_from_exception(f"importing package {spec.name!r} failed")
        return pkg
    pkg.server_ref = ref
    pkg.kind = detect_kind(server)
    try:
        pkg.adapter = make_adapter(spec.name, server, ref)
    except Undrivable as exc:
        pkg.fail(undrivable_message(pkg, str(exc)))
        return pkg
    except Exception:
        pkg.error = error_from_exception(undrivable_message(pkg, "creating its adapter failed"))
        return pkg
    return pkg
