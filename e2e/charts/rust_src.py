"""What the chart check needs to know about the Rust code, read from its sources (no cargo):
the `ramen` CLI's subcommands and services, the worker's config keys, the process config's
keys and env aliases, and the deployer's durable consumer. Regex-based on purpose: each reader
fails loudly (ParseError) when the code it reads changed shape, rather than guessing."""

import pathlib
import re


class ParseError(Exception):
    pass


def _read(root: pathlib.Path, rel: str) -> str:
    return (root / rel).read_text()


def _block(text: str, header: str, where: str) -> str:
    """The body of `header { ... }` (braces balanced)."""
    match = re.search(header + r"\s*\{", text)
    if not match:
        raise ParseError(f"{where}: no `{header}` found")
    depth, start = 0, match.end() - 1
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1 : i]
    raise ParseError(f"{where}: `{header}` is not closed")


def kebab(name: str) -> str:
    """clap's default name for a variant: ApiGateway -> api-gateway."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def _variants(body: str) -> list[tuple[str, str]]:
    """(name, attributes just before it) of each top-level enum variant."""
    found, attrs, depth = [], "", 0
    for line in body.splitlines():
        stripped = line.strip()
        if depth == 0:
            if stripped.startswith("#["):
                attrs += stripped
            elif m := re.match(r"([A-Z][A-Za-z0-9]*)\s*([,{(]|$)", stripped):
                found.append((m.group(1), attrs))
                attrs = ""
            elif stripped and not stripped.startswith("//"):
                attrs = ""
        depth += line.count("{") + line.count("(") - line.count("}") - line.count(")")
    return found


class Cli:
    """`ramen`'s subcommands (services/ramen/src/main.rs)."""

    def __init__(self, root: pathlib.Path):
        where = "services/ramen/src/main.rs"
        text = _read(root, where)
        command = _block(text, r"enum Command", where)
        self.subcommands = [kebab(n) for n, a in _variants(command) if "flatten" not in a]
        self.services = [kebab(n) for n, _ in _variants(_block(text, r"enum Service", where))]
        worker = re.search(r"Worker\s*\{(.*?)\}", command, re.S)
        if not worker:
            raise ParseError(f"{where}: no `Worker {{ ... }}` subcommand")
        self.worker_flags = [
            "--" + name.replace("_", "-")
            for name in re.findall(r"#\[arg\(long[^)]*\)\]\s*(\w+)\s*:", worker.group(1))
        ]
        if not self.subcommands or not self.services or not self.worker_flags:
            raise ParseError(
                f"{where}: found {self.subcommands}, {self.services}, {self.worker_flags}"
            )


def struct_fields(text: str, name: str, where: str) -> dict[str, str]:
    """`pub field: Type` of `struct name`, as {field: type}."""
    body = _block(text, rf"pub struct {name}", where)
    fields = dict(re.findall(r"^\s*pub (\w+):\s*([^,\n]+),", body, re.M))
    if not fields:
        raise ParseError(f"{where}: struct {name} has no pub fields")
    return fields


def node_config_keys(root: pathlib.Path) -> dict[str, set[str]]:
    """The worker's TOML keys: {"": top level, "blob": ..., "blob.s3": ..., "snapshot": ...}."""
    # The node's config is the contract between the control plane and the node.
    where = "libs/node-contract/src/config.rs"
    text = _read(root, where)
    model = _read(root, "libs/config/src/model.rs")
    return {
        "": set(struct_fields(text, "NodeConfig", where)),
        "blob": set(struct_fields(text, "BlobConfig", where)),
        "blob.s3": set(struct_fields(model, "S3Config", "libs/config/src/model.rs")),
        "snapshot": set(struct_fields(text, "SnapshotRef", where)),
        "policy": set(
            struct_fields(
                _read(root, "libs/node-contract/src/policy.rs"),
                "PolicyConfig",
                "libs/node-contract/src/policy.rs",
            )
        ),
    }


def config_keys(root: pathlib.Path) -> set[str]:
    """Every dotted key of the process config (libs/config), e.g. nats.events_stream."""
    where = "libs/config/src/model.rs"
    model = _read(root, where)
    keys: set[str] = set()

    def walk(struct: str, prefix: str) -> None:
        for field, ty in struct_fields(model, struct, where).items():
            keys.add(prefix + field)
            ty = ty.strip()
            if re.search(rf"pub struct {ty}\b", model):
                walk(ty, prefix + field + ".")

    walk("Config", "")
    return keys


def env_aliases(root: pathlib.Path) -> dict[str, str]:
    """Flat RAMEN_* names -> dotted keys (libs/config/src/env.rs ALIASES)."""
    where = "libs/config/src/env.rs"
    section = re.search(r"pub const ALIASES[^=]*=\s*&\[(.*?)\];", _read(root, where), re.S)
    pairs = re.findall(r'\("(\w+)",\s*"([\w.]+)"\)', section.group(1) if section else "")
    if not pairs:
        raise ParseError(f"{where}: no ALIASES pairs")
    return {"RAMEN_" + flat.upper(): nested for flat, nested in pairs}


def env_names_read_directly(root: pathlib.Path) -> set[str]:
    """RAMEN_* names some code reads with std::env::var itself (outside libs/config)."""
    names = set()
    for path in list(root.glob("services/*/src/**/*.rs")) + list(root.glob("libs/*/src/**/*.rs")):
        names.update(re.findall(r'env::var(?:_os)?\("(RAMEN_[A-Z0-9_]+)"', path.read_text()))
    return names


def known_env(
    root: pathlib.Path, name: str, keys: set[str], aliases: dict[str, str], direct: set[str]
) -> bool:
    """Whether the process reads RAMEN_* variable `name` (figment: `__` nests, else an alias,
    else the lowercased name as a top-level key)."""
    if name in direct:
        return True
    rest = name[len("RAMEN_") :].lower()
    if "__" in rest:
        return rest.replace("__", ".") in keys
    return aliases.get(name, rest) in keys


def zone_namespace_label(root: pathlib.Path) -> tuple[str, str]:
    """The (key, value) label the zone-manager puts on every namespace and object it makes."""
    where = "services/zone-manager/src/provider/kubernetes/manifests.rs"
    text = _read(root, where)
    key = re.search(r'pub const MANAGED_BY: &str = "([^"]+)";', text)
    value = re.search(r'pub const MANAGER: &str = "([^"]+)";', text)
    if not key or not value:
        raise ParseError(f"{where}: no MANAGED_BY / MANAGER constants")
    return key.group(1), value.group(1)


def deployer_durable(root: pathlib.Path) -> str:
    where = "services/deployer/src/jobs/mod.rs"
    match = re.search(r'pub const WORK_DURABLE: &str = "([^"]+)";', _read(root, where))
    if not match:
        raise ParseError(f"{where}: no `pub const WORK_DURABLE`")
    return match.group(1)


def workspace(root: pathlib.Path) -> tuple[str, str]:
    """(version, rust-version) of [workspace.package]."""
    cargo = _read(root, "Cargo.toml")
    package = re.search(r"^\[workspace\.package\]\s*$(.*?)^\[", cargo, re.S | re.M)
    body = package.group(1) if package else ""
    version = re.search(r'^version\s*=\s*"([^"]+)"', body, re.M)
    rust = re.search(r'^rust-version\s*=\s*"([^"]+)"', body, re.M)
    if not version or not rust:
        raise ParseError("Cargo.toml: [workspace.package] needs version and rust-version")
    return version.group(1), rust.group(1)


def binary_name(root: pathlib.Path) -> str:
    """The binary `cargo build -p ramen` produces."""
    cargo = _read(root, "services/ramen/Cargo.toml")
    bins = re.findall(r'^\[\[bin\]\]\s*\nname\s*=\s*"([^"]+)"', cargo, re.M)
    package = re.search(r'^name\s*=\s*"([^"]+)"', cargo, re.M)
    if bins:
        return bins[0]
    if not package:
        raise ParseError("services/ramen/Cargo.toml: no package name")
    return package.group(1)
