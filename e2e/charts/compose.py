"""docker-compose.yml against the images and the CLI: each ramen service starts
`ramen serve <its name>` or `ramen worker --config <file>` from the image it builds, the
worker's config file is a node config the worker accepts (on the port its healthcheck asks),
every stop_grace_period outlasts its drain, and every RAMEN_* variable is one the binary reads."""

import re
import tomllib

import yaml

import rust_src
from dockerfile import parse
from harness import Suite, expect
from images import DOCKERFILES, cli_args, entrypoint


def run(suite: Suite, ctx) -> None:
    compose = yaml.safe_load((ctx.root / "docker-compose.yml").read_text())
    suite.check(
        "compose starts `ramen serve <service>` / `ramen worker --config` from the images",
        compose_commands,
        ctx,
        compose,
    )
    suite.check(
        "compose worker config is a valid node config on the healthcheck's port",
        compose_worker,
        ctx,
        compose,
    )
    suite.check(
        "compose stop_grace_period exceeds each drain timeout + 30 s", compose_grace, compose
    )
    suite.check("compose RAMEN_* variables are ones the binary reads", compose_env, ctx, compose)
    suite.check(
        "compose NATS runs in operator mode and each service connects as its own user",
        compose_nats_auth,
        ctx,
        compose,
    )


def _ramen_services(compose):
    """The long-running ramen containers (one-shots such as `nats-auth-init` excluded)."""
    for name, service in compose["services"].items():
        dockerfile = (service.get("build") or {}).get("dockerfile")
        if dockerfile and service.get("restart") != "no":
            yield name, service, dockerfile


def compose_commands(ctx, compose) -> None:
    found = []
    for name, service, dockerfile in _ramen_services(compose):
        expect(dockerfile in DOCKERFILES, f"{name}: builds {dockerfile}")
        stages = parse(ctx.root / dockerfile)[0]
        entry = service.get("entrypoint") or entrypoint(stages)
        command = service.get("command") or stages[-1].last("CMD").exec_form()
        args = cli_args(ctx, entry + command, f"compose {name}")
        want = ["serve", name] if args[0] == "serve" else args
        expect(args == want, f"compose {name}: runs {args}")
        if args[0] == "serve" and dockerfile.endswith("worker.Dockerfile"):
            expect(name == "zone-manager", f"compose {name}: runs from the worker image")
        found.append(args[0] if args[0] == "worker" else args[1])
    expect(sorted(found) == sorted(ctx.cli.services + ["worker"]), f"compose runs {sorted(found)}")


def compose_worker(ctx, compose) -> None:
    worker = compose["services"]["worker"]
    stages = parse(ctx.root / worker["build"]["dockerfile"])[0]
    args = worker.get("command") or stages[-1].last("CMD").exec_form()
    path = args[args.index("--config") + 1]
    mounts = dict(reversed(v.split(":")[:2]) for v in worker["volumes"] if v.startswith("./"))
    expect(path in mounts, f"--config {path} is not mounted from the repository ({mounts})")
    config = tomllib.loads((ctx.root / mounts[path]).read_text())
    keys = rust_src.node_config_keys(ctx.root)

    def walk(table: dict, prefix: str) -> None:
        allowed = keys.get(prefix)
        expect(allowed is not None, f"{mounts[path]}: table [{prefix}] is not checked here")
        unknown = sorted(set(table) - allowed)
        expect(
            not unknown,
            f"{mounts[path]}: keys {unknown} are not in NodeConfig"
            f"{'.' + prefix if prefix else ''} (the worker refuses them)",
        )
        for key, value in table.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}.{key}" if prefix else key)

    walk(config, "")
    probe = " ".join(worker["healthcheck"]["test"])
    port = re.search(r"/dev/tcp/127\.0\.0\.1/(\d+)", probe).group(1)
    expect(
        config.get("admin", "").endswith(f":{port}"),
        f"admin {config.get('admin')}, the healthcheck asks {port}",
    )
    for key in ("listen", "admin", "grpc"):
        expect(
            str(config.get(key, "")).startswith("0.0.0.0:"),
            f"{key} {config.get(key)} is unreachable from other containers",
        )


def compose_grace(compose) -> None:
    for name, service, _ in _ramen_services(compose):
        drain = int(service["environment"]["RAMEN_DRAIN__TIMEOUT"].rstrip("s"))
        grace = int(str(service["stop_grace_period"]).rstrip("s"))
        expect(
            grace >= drain + 30,
            f"compose {name}: stop_grace_period {grace}s < drain {drain}s + 30s",
        )


def compose_env(ctx, compose) -> None:
    root = ctx.root
    keys, aliases, direct = (
        rust_src.config_keys(root),
        rust_src.env_aliases(root),
        rust_src.env_names_read_directly(root),
    )
    for name, service, _ in _ramen_services(compose):
        for var in service["environment"]:
            if var.startswith("RAMEN_"):
                expect(
                    rust_src.known_env(root, var, keys, aliases, direct),
                    f"compose {name}: {var} is no key of libs/config",
                )


def compose_nats_auth(ctx, compose) -> None:
    """`nats-auth-init` runs `ramen nats-auth init` into the volume nats reads its configuration
    from; every ramen service mounts it and names its own `.creds` (the zone-manager also the
    node signing key); the worker config names no bus (a static node has no placement user)."""
    init = compose["services"]["nats-auth-init"]
    stages = parse(ctx.root / init["build"]["dockerfile"])[0]
    entry = init.get("entrypoint") or entrypoint(stages)
    args = cli_args(ctx, entry + init["command"], "compose nats-auth-init")
    expect(args[:2] == ["nats-auth", "init"], f"nats-auth-init runs {args}")
    out = args[args.index("--out") + 1]
    volume, at = init["volumes"][0].split(":")[:2]
    expect(out.startswith(at + "/"), f"--out {out} is not in the volume at {at}")
    inside = out[len(at) + 1 :]
    nats = compose["services"]["nats"]
    mount = next((v.split(":")[1] for v in nats["volumes"] if v.startswith(volume + ":")), None)
    expect(mount is not None, f"nats does not mount {volume}")
    conf = nats["command"][nats["command"].index("-c") + 1]
    expect(conf == f"{mount}/{inside}/server-auth.conf", f"nats reads {conf}")
    for name, service, _ in _ramen_services(compose):
        if name == "worker":
            continue
        env = service["environment"]
        mounted = next(
            (v.split(":")[1] for v in service.get("volumes", []) if v.startswith(volume + ":")),
            None,
        )
        expect(mounted is not None, f"compose {name}: does not mount {volume}")
        want = f"{mounted}/{inside}/{name}.creds"
        expect(env.get("RAMEN_NATS_CREDS") == want, f"compose {name}: RAMEN_NATS_CREDS is {env.get('RAMEN_NATS_CREDS')}, not {want}")
        if name == "zone-manager":
            key = f"{mounted}/{inside}/node-signing.nk"
            expect(env.get("RAMEN_NATS_SIGNING_KEY") == key, f"zone-manager: RAMEN_NATS_SIGNING_KEY {env.get('RAMEN_NATS_SIGNING_KEY')}")
    worker = compose["services"]["worker"]
    path = worker["command"][worker["command"].index("--config") + 1]
    source = next(v.split(":")[0] for v in worker["volumes"] if v.split(":")[1] == path)
    config = tomllib.loads((ctx.root / source).read_text())
    expect("nats_url" not in config, "the static compose worker must not connect to the bus")
