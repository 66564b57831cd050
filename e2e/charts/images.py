"""The images, checked without a Docker engine: pinned bases, locked build, COPY sources that
exist and pass the .dockerignore, non-root users, and that what the chart and
docker-compose.yml start (`ramen serve <service>`, `ramen worker --config ...`) is what the
images build and the CLI in services/ramen/src/main.rs accepts."""

import re
import subprocess

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
        suite.check(
            f"{path}: bases pinned by exact tag and digest, Rust >= rust-version",
            pinned,
            ctx,
            stages,
        )
        suite.check(
            f"{path}: cargo build --locked of the ramen binary, copied to {BINARY}",
            built,
            ctx,
            stages,
        )
        suite.check(
            f"{path}: COPY sources exist and pass its .dockerignore", copies, ctx, path, stages
        )
        suite.check(
            f"{path}: .dockerignore keeps target/, .git, .env out and the sources in",
            ignored,
            ctx,
            path,
        )
        suite.check(f"{path}: runs as the chart's non-root uid", non_root, ctx, stages)
    suite.check(
        "both images build from the same pinned bases",
        lambda: expect(
            [s.image for s in images[DOCKERFILES[0]]] == [s.image for s in images[DOCKERFILES[1]]],
            f"bases differ: {[[s.image for s in v] for v in images.values()]}",
        ),
    )
    suite.check(
        "worker image: the Python runtime's interpreter and venv, control plane without",
        python,
        images,
    )
    suite.check(
        "chart runs `ramen serve <service>` from the control-plane image",
        chart_commands,
        ctx,
        images["deploy/Dockerfile"],
    )


def pinned(ctx, stages) -> None:
    _, rust_version = rust_src.workspace(ctx.root)
    for stage in stages:
        match = PINNED.match(stage.image)
        expect(bool(match), f"FROM {stage.image}: want <image>:<exact tag>@sha256:<digest>")
        tag = match.group("tag")
        expect(
            bool(re.search(r"\d+\.\d+\.\d+|\d{8}", tag)),
            f"FROM {stage.image}: tag {tag!r} floats (no full version or date)",
        )
        if stage.image.startswith("rust:"):
            have = tuple(int(p) for p in re.match(r"(\d+)\.(\d+)\.(\d+)", tag).groups())
            want = tuple(int(p) for p in (rust_version + ".0").split(".")[:3])
            expect(have >= want, f"builder Rust {tag} is older than rust-version {rust_version}")


def built(ctx, stages) -> None:
    builder, final = stages[0], stages[-1]
    expect(
        re.search(r"cargo build --release --locked -p ramen\b", builder.run_text()),
        f"builder RUN: {builder.run_text()}",
    )
    name = rust_src.binary_name(ctx.root)
    out = re.search(rf"install -D -m 0755 target/release/{name} (\S+)", builder.run_text())
    expect(out, f"builder does not install target/release/{name}")
    copied = [copy_sources(c) for c in final.all("COPY") if copy_sources(c)[0] == builder.name]
    expect(
        copied == [(builder.name, [out.group(1)], BINARY)],
        f"final stage copies {copied}, want {out.group(1)} -> {BINARY}",
    )


def copies(ctx, path, stages) -> None:
    ignore = Ignore(ctx.root / f"{path}.dockerignore")
    for stage in stages:
        for instruction in stage.all("COPY"):
            source_from, sources, _ = copy_sources(instruction)
            if source_from:
                continue
            for source in sources:
                expect(
                    (ctx.root / source).exists(), f"COPY {source}: no such path in the repository"
                )
                expect(
                    source == "." or not ignore.excluded(source),
                    f"COPY {source}: excluded by {path}.dockerignore",
                )


def ignored(ctx, path) -> None:
    ignore = Ignore(ctx.root / f"{path}.dockerignore")
    for out in (
        "target",
        "target/release/ramen",
        ".git",
        ".git/HEAD",
        ".env",
        "services/runner/runtime/ramen_runtime/__pycache__/x.pyc",
    ):
        expect(ignore.excluded(out), f"{out} reaches the build context")
    tracked = subprocess.run(
        ["git", "-C", str(ctx.root), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    cargo = (ctx.root / "Cargo.toml").read_text()
    members = re.findall(r'"((?:services|libs|proto)[\w/-]*)"', cargo)
    expect(members, "no workspace members found in Cargo.toml")
    needed = ["Cargo.toml", "Cargo.lock"] + [
        f for f in tracked if any(f.startswith(m + "/") for m in members) and "/tests/" not in f
    ]
    dropped = [f for f in needed if ignore.excluded(f)]
    expect(
        not dropped,
        f"the build needs {dropped[:5]} (of {len(dropped)}) but the .dockerignore drops them",
    )


def non_root(ctx, stages) -> None:
    final = stages[-1]
    user = final.last("USER")
    expect(
        user and re.fullmatch(r"\d+:\d+", user.args),
        f"USER {user.args if user else None}: want numeric uid:gid",
    )
    uid, gid = (int(p) for p in user.args.split(":"))
    expect(uid > 0 and gid > 0, f"USER {user.args} is root")
    expect(re.search(rf"useradd [^&]*--uid {uid}\b", final.run_text()), f"no useradd --uid {uid}")
    values = yaml.safe_load((ctx.root / "charts/ramen/values.yaml").read_text())["global"][
        "podSecurityContext"
    ]
    expect(
        (values["runAsUser"], values["runAsGroup"]) == (uid, gid),
        f"chart runs as {values['runAsUser']}:{values['runAsGroup']}, image as {uid}:{gid}",
    )


def python(images) -> None:
    worker = apt_packages(images["deploy/worker.Dockerfile"][-1])
    expect({"python3", "python3-venv", "tini"} <= worker, f"worker image installs {sorted(worker)}")
    control = apt_packages(images["deploy/Dockerfile"][-1])
    expect(
        not {p for p in control if p.startswith("python")},
        f"control-plane image installs {sorted(control)}",
    )


def entrypoint(stages) -> list[str]:
    return stages[-1].last("ENTRYPOINT").exec_form() or []


def cli_args(ctx, argv: list[str], who: str) -> list[str]:
    """argv after tini and the binary; checked against the binary the images build."""
    if argv[:2] == TINI:
        argv = argv[2:]
    expect(argv[:1] == [BINARY], f"{who}: runs {argv[:1]}, want {BINARY}")
    args = argv[1:]
    expect(
        args[:1] and args[0] in ctx.cli.subcommands,
        f"{who}: `{' '.join(args)}` is no subcommand of {ctx.cli.subcommands}",
    )
    if args[0] == "serve":
        expect(
            len(args) == 2 and args[1] in ctx.cli.services,
            f"{who}: serve {args[1:]}, services are {ctx.cli.services}",
        )
    if args[0] == "worker":
        expect(
            len(args) == 3 and args[1] in ctx.cli.worker_flags,
            f"{who}: worker {args[1:]}, takes {ctx.cli.worker_flags} <path>",
        )
    return args


def chart_commands(ctx, stages) -> None:
    entry = entrypoint(stages)
    expect(entry == TINI + [BINARY], f"control-plane ENTRYPOINT {entry}")
    expect(
        stages[-1].image.startswith("debian:"),
        f"runtime {stages[-1].image}: the chart's preStop runs /bin/sleep",
    )
    render = ctx.prod()
    values = yaml.safe_load((ctx.root / "charts/ramen/values.yaml").read_text())["global"]["image"]
    version, _ = rust_src.workspace(ctx.root)
    for deployment in render.kinds("Deployment"):
        main, name = container(deployment), deployment["metadata"]["name"]
        expect(
            "command" not in main,
            f"{name}: command {main.get('command')} replaces the image's ENTRYPOINT",
        )
        args = cli_args(ctx, entry + main["args"], name)
        expect(args == ["serve", name.removeprefix(f"{RELEASE}-")], f"{name}: runs {args}")
        expect(
            main["image"] == f"{values['repository']}:{version}", f"{name}: image {main['image']}"
        )
