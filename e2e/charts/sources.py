"""Where the chart's and docker-compose.yml's third-party pieces come from: no image or chart
from a deprecated source (DEPRECATED_IMAGES / DEPRECATED_CHARTS, each entry with the reason),
every image reference pinned to a version tag, and the development stack wired the same way
in both (same images, the endpoints naming the stores, one key pair, one bucket script).
The rules are first run on the stack they replaced (MinIO, Bitnami), which they must refuse."""

import re
import tomllib
import urllib.parse

import yaml

from harness import RELEASE, BUNDLED, Failure, Suite, expect

# Image repositories nothing may pull, after normalize(): an entry ending in "/" is a whole
# namespace, otherwise one repository.
DEPRECATED_IMAGES = {
    "minio/minio": "MinIO's community edition is archived upstream; Docker Hub has not served"
    " its images since September 2026 (`docker compose up` failed at pull)",
    "minio/mc": "the client of the archived MinIO community edition, gone from Docker Hub with it",
    "quay.io/minio/": "the same archived MinIO community builds: no further releases",
    "bitnami/": "Bitnami's free catalogue was discontinued in 2025: its images moved to"
    " bitnamilegacy/ and get no updates",
    "bitnamilegacy/": "the frozen copy of Bitnami's discontinued catalogue: no updates, no"
    " security fixes",
}
# Chart repositories (Chart.yaml `repository`), matched as substrings of the URL.
DEPRECATED_CHARTS = {
    "charts.bitnami.com": "Bitnami's chart catalogue was discontinued in 2025 (its images moved"
    " to a legacy repository with no updates; its MinIO chart is deprecated)",
    "registry-1.docker.io/bitnamicharts": "Bitnami's OCI chart catalogue, discontinued in 2025",
    "docker.io/bitnamicharts": "Bitnami's OCI chart catalogue, discontinued in 2025",
    "charts.min.io": "MinIO's chart of the archived community edition",
}
# Tags that move: whatever they name today is not what they name next month.
FLOATING_TAGS = {"latest", "stable", "edge", "main", "master", "nightly", "dev", "alpine"}
DOCKER_HUB = ("docker.io/", "index.docker.io/", "registry-1.docker.io/")
INTERPOLATION = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
# The development stack: compose service -> the chart's StatefulSet and container.
STORES = {
    "mongo": ("mongo", "mongo"),
    "seaweedfs": ("s3", "seaweedfs"),
    "valkey": ("valkey", "valkey"),
}


def run(suite: Suite, ctx) -> None:
    compose = yaml.safe_load((ctx.root / "docker-compose.yml").read_text())
    chart_yaml = yaml.safe_load((ctx.root / "charts/ramen/Chart.yaml").read_text())
    suite.check("source rules refuse the MinIO/Bitnami stack they replaced", rules_refuse_old)
    suite.check(
        "compose images: no deprecated source, pinned to a version tag", compose_images, compose
    )
    suite.check(
        "chart dependencies: no deprecated repository, bundled ones in harness.BUNDLED",
        chart_dependencies,
        chart_yaml,
    )
    suite.check(
        "chart images (every values file, every pod): no deprecated source, pinned",
        chart_images,
        ctx,
    )
    suite.check(
        "chart values files name no deprecated image or chart", values_sources, ctx.root
    )
    suite.check("dev stack: the chart runs the images compose runs", same_images, ctx, compose)
    suite.check(
        "dev stack (chart): endpoints name its Services, S3 keys from ramen's Secret, bucket Job",
        chart_wiring,
        ctx,
    )
    suite.check(
        "dev stack (compose): endpoint, key pair, bucket and worker.toml agree",
        compose_wiring,
        ctx,
        compose,
    )
    suite.check(
        "dev stack: compose's s3-init runs the chart's bucket script", same_script, ctx, compose
    )


def normalize(image: str) -> str:
    """The repository of an image reference, Docker Hub's implicit prefixes removed."""
    name = image.split("@", 1)[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]
    for prefix in DOCKER_HUB:
        name = name.removeprefix(prefix)
    return name.removeprefix("library/")


def deprecated_image(image: str) -> str | None:
    repository = normalize(image)
    for entry, reason in DEPRECATED_IMAGES.items():
        if repository == entry or (entry.endswith("/") and repository.startswith(entry)):
            return f"{image} comes from {entry}: {reason}"
    return None


def pinned(image: str, who: str) -> None:
    """A tag that names a version (a digest pins too); no deprecated source either."""
    reason = deprecated_image(image)
    expect(reason is None, f"{who}: {reason}")
    if "@sha256:" in image:
        return
    last = image.rsplit("/", 1)[-1]
    expect(":" in last, f"{who}: image {image!r} has no tag (Docker pulls `latest`)")
    tag = last.rsplit(":", 1)[1]
    expect(
        tag.split("-")[0] not in FLOATING_TAGS and re.search(r"\d", tag) is not None,
        f"{who}: image {image!r} has the floating tag {tag!r}; pin a version",
    )


def chart_repository(dep: dict) -> None:
    repository = dep.get("repository", "")
    for entry, reason in DEPRECATED_CHARTS.items():
        expect(
            entry not in repository,
            f"chart dependency {dep['name']} comes from {repository}: {reason}",
        )


def interpolate(value: str, who: str) -> str:
    """Compose's ${VAR:-default} with the default (an image that only a variable names
    cannot be checked, so it is refused)."""

    def default(match: re.Match) -> str:
        expect(
            match.group("op") in (":-", "-"),
            f"{who}: {match.group(0)} has no default image to check",
        )
        return match.group("arg")

    return INTERPOLATION.sub(default, value)


def compose_third_party(compose: dict):
    """(service, image) of every image compose pulls; ramen's own (`build:`) are built from
    this checkout and tagged locally (ramen:dev), so they are not pulled."""
    for name, service in compose["services"].items():
        if "build" in service:
            continue
        yield name, interpolate(service.get("image", ""), f"compose {name}")


def compose_images(compose: dict) -> None:
    found = list(compose_third_party(compose))
    expect(found, "compose pulls no image at all")
    for name, image in found:
        pinned(image, f"compose {name}")


def chart_dependencies(chart_yaml: dict) -> None:
    for dep in chart_yaml["dependencies"]:
        chart_repository(dep)
    remote = sorted(d["name"] for d in chart_yaml["dependencies"] if d.get("repository"))
    expect(remote == sorted(BUNDLED), f"remote chart dependencies {remote}, want {BUNDLED}")


def pod_images(render) -> list[tuple[str, str]]:
    found = []
    for obj in render.objects:
        spec = obj.get("spec", {})
        pod = spec.get("jobTemplate", {}).get("spec", spec).get("template", {}).get("spec")
        if not pod:
            continue
        for container in pod.get("initContainers", []) + pod.get("containers", []):
            found.append((f"{obj['kind']} {obj['metadata']['name']}", container["image"]))
    return found


def chart_images(ctx) -> None:
    seen = set()
    for name in ("values.yaml", "values-prod.yaml", "values-dev.yaml"):
        for kube in ctx.versions:
            for who, image in pod_images(ctx.ok(name, kube)):
                pinned(image, f"{name} {who}")
                seen.add(normalize(image))
    expect(
        {"mongo", "chrislusf/seaweedfs", "valkey/valkey"} <= seen,
        f"values-dev.yaml renders images {sorted(seen)}: the development stack is missing",
    )


def _strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def values_sources(root) -> None:
    """Every string in the chart's values files (a bundled chart's image.repository, say):
    a value naming a deprecated image or chart repository would bring it back unrendered."""
    files = sorted(root.glob("charts/ramen/**/values*.yaml"))
    expect(files, "no values files under charts/ramen")
    for path in files:
        for text in _strings(yaml.safe_load(path.read_text()) or {}):
            where = path.relative_to(root)
            reason = deprecated_image(text) if " " not in text else None
            expect(reason is None, f"{where}: {reason}")
            for entry, why in DEPRECATED_CHARTS.items():
                expect(entry not in text, f"{where}: {text!r} names {entry}: {why}")


def _statefulset(render, store: str) -> dict:
    return render.get("StatefulSet", f"{RELEASE}-{store}")


def same_images(ctx, compose) -> None:
    render = ctx.ok("values-dev.yaml")
    for service, (store, container) in STORES.items():
        pod = _statefulset(render, store)["spec"]["template"]["spec"]
        chart = next(c["image"] for c in pod["containers"] if c["name"] == container)
        composed = interpolate(_service(compose, service)["image"], f"compose {service}")
        expect(chart == composed, f"{store}: the chart runs {chart}, compose {composed}")
    bucket_job = _service(compose, "s3-init")["image"]
    expect(
        bucket_job == _service(compose, "seaweedfs")["image"],
        f"compose s3-init runs {bucket_job}, not the SeaweedFS image",
    )


def _host_port(url: str, who: str) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(url)
    expect(parsed.hostname and parsed.port, f"{who}: {url!r} names no host:port")
    return parsed.hostname, parsed.port


def chart_wiring(ctx) -> None:
    render = ctx.ok("values-dev.yaml")
    config = yaml.safe_load((ctx.root / "charts/ramen/values-dev.yaml").read_text())["global"]
    services = {s["metadata"]["name"]: s for s in render.kinds("Service")}
    gateway = _api_gateway(render)
    envfrom = {f["secretRef"]["name"] for f in gateway["envFrom"]}
    backends = [s for s in render.kinds("Secret") if s["metadata"]["name"] in envfrom]
    expect(len(backends) == 2, f"ramen reads Secrets {envfrom}, rendered {render.names('Secret')}")
    secret = next(s for s in backends if "AWS_ACCESS_KEY_ID" in s.get("stringData", {}))
    # A URL may be plain env (global.config) or in the backends Secret (credentials).
    env = {e["name"]: e.get("value") for e in gateway.get("env", [])} | secret["stringData"]
    urls = {
        "mongo": env.get("RAMEN_MONGO_URI"),
        "s3": env.get("RAMEN_S3_ENDPOINT"),
        "valkey": env.get("RAMEN_REDIS_URL"),
    }
    for store, url in urls.items():
        expect(url, f"values-dev.yaml gives ramen no URL for {store} (env {sorted(env)})")
        host, port = _host_port(url, store)
        name = f"{RELEASE}-{store}"
        expect(
            host == name or host.startswith(f"{RELEASE}-{store}-0.{name}."),
            f"{store}: ramen connects to {host}, not the Service {name}",
        )
        service = services.get(name)
        expect(service is not None, f"{store}: no Service {name}")
        expect(
            port in {p["port"] for p in service["spec"]["ports"]},
            f"{store}: ramen connects to port {port}, Service {name} has"
            f" {service['spec']['ports']}",
        )
    mongo = _statefulset(render, "mongo")["spec"]["template"]["spec"]["containers"][0]
    probe = " ".join(mongo["readinessProbe"]["exec"]["command"])
    member = urllib.parse.urlsplit(urls["mongo"]).netloc
    expect(
        f"host: '{member}'" in probe,
        f"mongo: the replica set advertises {probe}, ramen asks {member}",
    )

    s3 = _statefulset(render, "s3")["spec"]["template"]["spec"]["containers"][0]
    keys = {
        e["name"]: e["valueFrom"]["secretKeyRef"] for e in s3.get("env", []) if "valueFrom" in e
    }
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        ref = keys.get(var)
        expect(ref and ref["key"] == var, f"s3: {var} from {ref}, want the backends Secret's {var}")
        expect(
            ref["name"] in envfrom, f"s3: {var} from Secret {ref['name']}, ramen reads {envfrom}"
        )
        expect(var in secret["stringData"], f"Secret {secret['metadata']['name']} lacks {var}")
    jobs = render.kinds("Job")
    expect(len(jobs) == 1, f"want one bucket Job, found {render.names('Job')}")
    job = jobs[0]["spec"]["template"]["spec"]["containers"][0]
    job_env = {e["name"]: e.get("value") for e in job["env"]}
    expect(
        job_env.get("RAMEN_S3_BUCKET") == config["config"]["s3"]["bucket"],
        f"the bucket Job creates {job_env.get('RAMEN_S3_BUCKET')}, ramen uses"
        f" {config['config']['s3']['bucket']}",
    )
    for var in ("WEED_MASTER", "WEED_FILER"):
        host, port = _host_port(f"x://{job_env.get(var)}", f"bucket Job {var}")
        expect(host == f"{RELEASE}-s3", f"bucket Job {var}={job_env.get(var)}")
        expect(
            {port, port + 10000} <= {p["port"] for p in services[host]["spec"]["ports"]},
            f"bucket Job {var}: Service {host} lacks {port} or its gRPC port {port + 10000}",
        )


def _api_gateway(render) -> dict:
    return render.get("Deployment", f"{RELEASE}-api-gateway")["spec"]["template"]["spec"][
        "containers"
    ][0]


def _service(compose, name: str) -> dict:
    services = compose["services"]
    expect(name in services, f"compose has no {name} service (it has {sorted(services)})")
    return services[name]


def compose_wiring(ctx, compose) -> None:
    shared = compose["x-ramen-env"]
    store = _service(compose, "seaweedfs")
    host, port = _host_port(shared["RAMEN_S3_ENDPOINT"], "RAMEN_S3_ENDPOINT")
    expect(host == "seaweedfs", f"RAMEN_S3_ENDPOINT names {host}, not the seaweedfs service")
    healthcheck = " ".join(store["healthcheck"]["test"])
    expect(f":{port}/" in healthcheck, f"seaweedfs healthcheck {healthcheck} is not on {port}")
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        expect(
            store["environment"][var].split(":")[0] == shared[var].split(":")[0],
            f"{var}: seaweedfs gets {store['environment'][var]}, ramen {shared[var]}",
        )
    init = _service(compose, "s3-init")
    expect(
        init["environment"]["RAMEN_S3_BUCKET"] == shared["RAMEN_S3_BUCKET"],
        f"s3-init creates {init['environment']['RAMEN_S3_BUCKET']},"
        f" ramen uses {shared['RAMEN_S3_BUCKET']}",
    )
    expect(
        init["depends_on"]["seaweedfs"]["condition"] == "service_healthy",
        f"s3-init waits for {init['depends_on']}",
    )
    for var in ("WEED_MASTER", "WEED_FILER"):
        value = init["environment"][var]
        expect(value.startswith("seaweedfs:"), f"s3-init {var} is {value}, not on seaweedfs")
    def waits_for_bucket(name: str, seen: frozenset = frozenset()) -> bool:
        """Directly, or through a service it waits for (api-gateway waits for auth)."""
        depends = compose["services"][name].get("depends_on", {})
        if depends.get("s3-init", {}).get("condition") == "service_completed_successfully":
            return True
        return any(waits_for_bucket(d, seen | {name}) for d in depends if d not in seen)

    for name, service in compose["services"].items():
        if "build" in service and service.get("restart") != "no":
            expect(waits_for_bucket(name), f"compose {name} does not wait for s3-init (the bucket)")
    worker = compose["services"]["worker"]
    source = next(v.split(":")[0] for v in worker["volumes"] if v.endswith("worker.toml:ro"))
    blob = tomllib.loads((ctx.root / source).read_text())["blob"]["s3"]
    expect(
        blob["endpoint"] == shared["RAMEN_S3_ENDPOINT"],
        f"{source}: endpoint {blob['endpoint']}, RAMEN_S3_ENDPOINT {shared['RAMEN_S3_ENDPOINT']}",
    )
    bucket = interpolate(shared["RAMEN_S3_BUCKET"], "RAMEN_S3_BUCKET")
    expect(blob["bucket"] == bucket, f"{source}: bucket {blob['bucket']}, RAMEN_S3_BUCKET {bucket}")


def same_script(ctx, compose) -> None:
    init = _service(compose, "s3-init")
    expect(init["entrypoint"] == ["/bin/sh", "-c"], f"s3-init entrypoint {init['entrypoint']}")
    # Compose turns $$ into $; the chart has no such escaping.
    composed = init["command"][0].replace("$$", "$").strip()
    render = ctx.ok("values-dev.yaml")
    job = render.kinds("Job")[0]["spec"]["template"]["spec"]["containers"][0]
    expect(job["command"] == ["/bin/sh", "-c"], f"bucket Job command {job['command']}")
    charted = job["args"][0].strip()
    expect(composed == charted, f"scripts differ:\ncompose:\n{composed}\nchart:\n{charted}")
    expect("s3.bucket.create" in charted and "exit 1" in charted, f"bucket script {charted}")


# The stack this replaced, as the files had it: every line must be refused, with its reason.
OLD_COMPOSE = {
    "services": {
        "minio": {"image": "${MINIO_IMAGE:-minio/minio:latest}"},
        "minio-init": {"image": "${MINIO_MC_IMAGE:-minio/mc:latest}"},
    }
}
OLD_DEPENDENCIES = [
    {"name": "mongodb", "repository": "oci://registry-1.docker.io/bitnamicharts"},
    {"name": "minio", "repository": "oci://registry-1.docker.io/bitnamicharts"},
    {"name": "valkey", "repository": "https://charts.bitnami.com/bitnami"},
]
OLD_IMAGES = {
    "docker.io/bitnami/mongodb:8.0.4": "bitnami/",
    "bitnamilegacy/valkey:8.0.2": "bitnamilegacy/",
    "quay.io/minio/minio:RELEASE.2025-04-22T22-12-26Z": "quay.io/minio/",
    "mongo": "has no tag",
    "valkey/valkey:latest": "floating tag 'latest'",
    "nats:alpine": "floating tag 'alpine'",
    "docker.io/library/mongo:latest": "floating tag 'latest'",
}


def rules_refuse_old() -> None:
    def refused(fn, *args) -> str:
        try:
            fn(*args)
        except Failure as err:
            return str(err)
        raise Failure(f"{fn.__name__}{args} accepted what it must refuse")

    for image in ("minio/minio:latest", "minio/mc:latest"):
        message = refused(compose_images, {"services": {"x": {"image": image}}})
        expect("archived" in message, f"{image}: refused without the reason: {message}")
    message = refused(compose_images, OLD_COMPOSE)
    expect("minio/minio" in message and "archived" in message, message)
    for dep in OLD_DEPENDENCIES:
        message = refused(chart_repository, dep)
        expect("discontinued in 2025" in message, f"{dep}: {message}")
    for image, why in OLD_IMAGES.items():
        message = refused(pinned, image, "old")
        expect(why in message, f"{image}: refused, but not for {why!r}: {message}")
    message = refused(interpolate, "${MINIO_IMAGE}", "old")
    expect("no default image" in message, message)
    for image in ("mongo:7.0", "chrislusf/seaweedfs:4.44", "ghcr.io/ramen-mcp/ramen:0.1.0"):
        pinned(image, "accepted")
