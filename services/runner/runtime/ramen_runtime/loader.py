"""Find the packages of a snapshot, import them and locate their MCP server objects."""

from __future__ import annotations

import importlib
import os
import sys
import tomllib
import traceback
from dataclasses import dataclass, field
from typing import Any

from .adapters import Adapter, looks_like_server, make_adapter

MANIFEST = "ramen.toml"
SERVER_ATTRS = ("mcp", "server", "app")
SKIP_DIRS = {"tests"}


class ManifestError(Exception):
    pass


@dataclass
class PackageSpec:
    name: str
    server: str | None = None  # "module:attribute" from the manifest


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
    if not isinstance(raw, list):
        raise ManifestError(f"{MANIFEST}: 'packages' must be an array of tables ([[packages]])")
    specs: list[PackageSpec] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ManifestError(f"{MANIFEST}: packages[{i}] needs a string 'name'")
        server = entry.get("server")
        if server is not None and (not isinstance(server, str) or not server):
            raise ManifestError(f"{MANIFEST}: packages[{i}].server must be a string 'module:attribute'")
        if entry["name"] in seen:
            raise ManifestError(f"{MANIFEST}: package {entry['name']!r} is listed twice")
        seen.add(entry["name"])
        specs.append(PackageSpec(entry["name"], server))
    return namespace, specs


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
    try:
        pkg.adapter = make_adapter(spec.name, server, ref)
    except Exception:
        pkg.error = error_from_exception(f"cannot drive the server object {ref}")
        return pkg
    pkg.kind = pkg.adapter.kind
    return pkg
