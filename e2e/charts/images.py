"""The images, checked without a Docker engine: pinned bases, locked build, COPY sources that
exist and pass the .dockerignore, non-root users, and that what the chart and
docker-compose.yml start (`ramen serve <service>`, `ramen worker --config ...`) is what the
images build and the CLI in services/ramen/src/main.rs accepts."""
import re
import subprocess
import tomllib

import yaml

import rust_src
from dockerfile import Ignore, apt_packages, copy_sources, parse
from harness import RELEASE, Suite, container, expect

DOCKERFILES = ("deploy/Dockerfile", "deploy/worker.Dockerfile")
BINARY = "/usr/local/bin/ramen"
TINI = ["/usr/bin/tini", "--"]
PINNED = re.compile(r"^[\w./-]+:(?P<tag>[\w.-]+)@sha256:[0-9a-f]{64}$")


def run(suite: Suite, ctx) -> None:
    images = {path: parse(ctx.root / path)[0] for path in DOCKERFILES}
    for path, stages in images.items():
        suite.check(f"{path}: bases pinned by exact tag and digest, Rust >= rust-version", pinned, ctx, stages)
        suite.check(f"{path}: cargo build --locked of the ramen binary, copied to {BINARY}", built, ctx, stages)
        suite.check(f"{path}: COPY sources exist and pass its .dockerignore", copies, ctx, path, stages)
        suite.check(f"{path}: .dockerignore keeps target/, .git, .env out and the sources in", ignored, ctx, path)
        suite.check(f"{path}: runs as the chart's non-root uid", non_root, ctx, stages)
    suite.check("both images build from the same pinned bases", lambda: expect(
        [s.image for s in images[DOCKERFILES[0]]] == [s.image for s in images[DOCKERFILES[1]]],
        f"bases differ: {[[s.image for s in v] for v in images.values()]}"))
    suite.check("worker image: the Python runtime's interpreter and venv, control plane without", python, images)
    suite.check("chart runs `ramen serve <service>` from the control-plane image", chart_commands, ctx, images["deploy/Dockerfile"])
    compose = yaml.safe_load((ctx.root / "docker-compose.yml").read_text())
    suite.check("compose starts `ramen serve <service>` / `ramen worker --config` from the images", compose_commands, ctx, compose)
    suite.check("compose worker config is a valid node config on the healthcheck's port", compose_worker, ctx, compose)
    suite.check("compose stop_grace_period exceeds each drain timeout + 30 s", compose_grace, compose)
    suite.check("compose RAMEN_* variables are ones the binary reads", compose_env, ctx, compose)


def pinned(ctx, stages) -> None:
    _, rust_version = rust_src.workspace(ctx.root)
    for stage in stages:
        match = PINNED.match(stage.image)
        expect(bool(match), f"FROM {stage.image}: want <image>:<exact tag>@sha256:<digest>")
        tag = match.group("tag")
        expect(bool(re.search(r"\d+\.\d+\.\d+|\d{8}", tag)), f"FROM {stage.image}: tag {tag!r} floats (no full version or date)")
        if stage.image.startswith("rust:"):
            have = tuple(int(p) for p in re.match(r"(\d+)\.(\d+)\.(\d+)", tag).groups())
            want = tuple(int(p) for p in (rust_version + ".0").split(".")[:3])
            expect(have >= want, f"builder Rust {tag} is older than rust-version {rust_version}")


def built(ctx, stages) -> None:
    builder, final = stages[0], stages[-1]
    expect(re.search(r"cargo build --release --locked -p ramen\b", builder.run_text()), f"builder RUN: {builder.run_text()}")
    name = rust_src.binary_name(ctx.root)
    out = re.search(rf"install -D -m 0755 target/release/{name} (\S+)", builder.run_text())
    expect(out, f"builder does not install target/release/{name}")
    copied = [copy_sources(c) for c in final.all("COPY") if copy_sources(c)[0] == builder.name]
    expect(copied == [(builder.name, [out.group(1)], BINARY)], f"final stage copies {copied}, want {out.group(1)} -> {BINARY}")


def copies(ctx, path, stages) -> None:
    ignore = Ignore(ctx.root / f"{path}.dockerignore")
    for stage in stages:
        for instruction in stage.all("COPY"):
            source_from, sources, _ = copy_sources(instruction)
            if source_from:
                continue
            for source in sources:
                expect((ctx.root / source).exists(), f"COPY {source}: no such path in the repository")
                expect(source == "." or not ignore.excluded(source), f"COPY {source}: excluded by {path}.dockerignore")


def ignored(ctx, path) -> None:
    ignore = Ignore(ctx.root / f"{path}.dockerignore")
    for out in ("target", "target/release/ramen", ".git", ".git/HEAD", ".env", "services/runner/runtime/ramen_runtime/__pycache__/x.pyc"):
        expect(ignore.excluded(out), f"{out} reaches the build context")
    tracked = subprocess.run(["git", "-C", str(ctx.root), "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    cargo = (ctx.root / "Cargo.toml").read_text()
    members = re.findall(r'"((?:services|libs|proto)[\w/-]*)"', cargo)
    expect(members, "no workspace members found in Cargo.toml")
    needed = ["Cargo.toml", "Cargo.lock"] + [f for f in tracked if any(f.startswith(m + "/") for m in members) and "/tests/" not in f]
    dropped = [f for f in needed if ignore.excluded(f)]
    expect(not dropped, f"the build needs {dropped[:5]} (of {len(dropped)}) but the .dockerignore drops them")


def non_root(ctx, stages) -> None:
    final = stages[-1]
    user = final.last("USER")
    expect(user and re.fullmatch(r"\d+:\d+", user.args), f"USER {user.args if user else None}: want numeric uid:gid")
    uid, gid = (int(p) for p in user.args.split(":"))
    expect(uid > 0 and gid > 0, f"USER {user.args} is root")
    expect(re.search(rf"useradd [^&]*--uid {uid}\b", final.run_text()), f"no useradd --uid {uid}")
    values = yaml.safe_load((ctx.root / "charts/ramen/values.yaml").read_text())["global"]["podSecurityContext"]
    expect((values["runAsUser"], values["runAsGroup"]) == (uid, gid), f"chart runs as {values['runAsUser']}:{values['runAsGroup']}, image as {uid}:{gid}")


def python(images) -> None:
    worker = apt_packages(images["deploy/worker.Dockerfile"][-1])
    expect({"python3", "python3-venv", "tini"} <= worker, f"worker image installs {sorted(worker)}")
    control = apt_packages(images["deploy/Dockerfile"][-1])
    expect(not {p for p in control if p.startswith("python")}, f"control-plane image installs {sorted(control)}")


def _entrypoint(stages) -> list[str]:
    return stages[-1].last("ENTRYPOINT").exec_form() or []


def _cli_args(ctx, argv: list[str], who: str) -> list[str]:
    """argv after tini and the binary; checked against the binary the images build."""
    if argv[:2] == TINI:
        argv = argv[2:]
    expect(argv[:1] == [BINARY], f"{who}: runs {argv[:1]}, want {BINARY}")
    args = argv[1:]
    expect(args[:1] and args[0] in ctx.cli.subcommands, f"{who}: `{' '.join(args)}` is no subcommand of {ctx.cli.subcommands}")
    if args[0] == "serve":
        expect(len(args) == 2 and args[1] in ctx.cli.services, f"{who}: serve {args[1:]}, services are {ctx.cli.services}")
    if args[0] == "worker":
        expect(len(args) == 3 and args[1] in ctx.cli.worker_flags, f"{who}: worker {args[1:]}, takes {ctx.cli.worker_flags} <path>")
    return args


def chart_commands(ctx, stages) -> None:
    entry = _entrypoint(stages)
    expect(entry == TINI + [BINARY], f"control-plane ENTRYPOINT {entry}")
    expect(stages[-1].image.startswith("debian:"), f"runtime {stages[-1].image}: the chart's preStop runs /bin/sleep")
    render = ctx.prod()
    values = yaml.safe_load((ctx.root / "charts/ramen/values.yaml").read_text())["global"]["image"]
    version, _ = rust_src.workspace(ctx.root)
    for deployment in render.kinds("Deployment"):
        main, name = container(deployment), deployment["metadata"]["name"]
        expect("command" not in main, f"{name}: command {main.get('command')} replaces the image's ENTRYPOINT")
        args = _cli_args(ctx, entry + main["args"], name)
        expect(args == ["serve", name.removeprefix(f"{RELEASE}-")], f"{name}: runs {args}")
        expect(main["image"] == f"{values['repository']}:{version}", f"{name}: image {main['image']}")


def _ramen_services(compose):
    for name, service in compose["services"].items():
        dockerfile = (service.get("build") or {}).get("dockerfile")
        if dockerfile:
            yield name, service, dockerfile


def compose_commands(ctx, compose) -> None:
    found = []
    for name, service, dockerfile in _ramen_services(compose):
        expect(dockerfile in DOCKERFILES, f"{name}: builds {dockerfile}")
        stages = parse(ctx.root / dockerfile)[0]
        entry = service.get("entrypoint") or _entrypoint(stages)
        command = service.get("command") or stages[-1].last("CMD").exec_form()
        args = _cli_args(ctx, entry + command, f"compose {name}")
        want = ["serve", name] if args[0] == "serve" else args
        expect(args == want, f"compose {name}: runs {args}")
        if args[0] == "serve" and dockerfile.endswith("worker.Dockerfile"):
            expect(name == "zone-manager", f"compose {name}: runs from the worker image")
        found.append(args[0] if args[0] == "worker" else args[1])
    expect(sorted(found) == sorted(ctx.cli.services + ["worker"]), f"compose runs {sorted(found)}")


def compose_worker(ctx, compose) -> None:
    worker = compose["services"]["worker"]
    stages = parse(ctx.root / worker["build"]["dockerfile"])[0]
    args = (worker.get("command") or stages[-1].last("CMD").exec_form())
    path = args[args.index("--config") + 1]
    mounts = dict(reversed(v.split(":")[:2]) for v in worker["volumes"] if v.startswith("./"))
    expect(path in mounts, f"--config {path} is not mounted from the repository ({mounts})")
    config = tomllib.loads((ctx.root / mounts[path]).read_text())
    keys = rust_src.node_config_keys(ctx.root)

    def walk(table: dict, prefix: str) -> None:
        allowed = keys.get(prefix)
        expect(allowed is not None, f"{mounts[path]}: table [{prefix}] is not checked here")
        unknown = sorted(set(table) - allowed)
        expect(not unknown, f"{mounts[path]}: keys {unknown} are not in NodeConfig{'.' + prefix if prefix else ''} (the worker refuses them)")
        for key, value in table.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}.{key}" if prefix else key)

    walk(config, "")
    probe = " ".join(worker["healthcheck"]["test"])
    port = re.search(r"/dev/tcp/127\.0\.0\.1/(\d+)", probe).group(1)
    expect(config.get("admin", "").endswith(f":{port}"), f"admin {config.get('admin')}, the healthcheck asks {port}")
    for key in ("listen", "admin", "grpc"):
        expect(str(config.get(key, "")).startswith("0.0.0.0:"), f"{key} {config.get(key)} is unreachable from other containers")


def compose_grace(compose) -> None:
    for name, service, _ in _ramen_services(compose):
        drain = int(service["environment"]["RAMEN_DRAIN__TIMEOUT"].rstrip("s"))
        grace = int(str(service["stop_grace_period"]).rstrip("s"))
        expect(grace >= drain + 30, f"compose {name}: stop_grace_period {grace}s < drain {drain}s + 30s")


def compose_env(ctx, compose) -> None:
    root = ctx.root
    keys, aliases, direct = rust_src.config_keys(root), rust_src.env_aliases(root), rust_src.env_names_read_directly(root)
    for name, service, _ in _ramen_services(compose):
        for var in service["environment"]:
            if var.startswith("RAMEN_"):
                expect(rust_src.known_env(root, var, keys, aliases, direct), f"compose {name}: {var} is no key of libs/config")
