"""Just enough of the Dockerfile and .dockerignore formats to check the images without a
Docker engine: stages with their instructions (ARGs resolved), and BuildKit's ignore rules."""

import dataclasses
import json
import pathlib
import re


@dataclasses.dataclass
class Instruction:
    keyword: str
    args: str

    def exec_form(self) -> list[str] | None:
        try:
            value = json.loads(self.args)
        except ValueError:
            return None
        return value if isinstance(value, list) else None


@dataclasses.dataclass
class Stage:
    image: str  # resolved
    name: str
    instructions: list[Instruction]

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def run_text(self) -> str:
        return "\n".join(i.args for i in self.all("RUN"))


def _lines(text: str) -> list[str]:
    logical, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        logical.append(current + line)
        current = ""
    if current:
        logical.append(current)
    return logical


def _resolve(text: str, args: dict[str, str]) -> str:
    return re.sub(
        r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), text
    )


def parse(path: pathlib.Path) -> tuple[list[Stage], dict[str, str]]:
    """The stages of a Dockerfile and its global ARG defaults; ARG values resolved in FROM,
    USER, COPY, RUN, ENTRYPOINT and CMD (the stage's own ARGs and the global ones)."""
    stages: list[Stage] = []
    global_args: dict[str, str] = {}
    scope: dict[str, str] = {}
    for line in _lines(path.read_text()):
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "ARG":
            name, _, default = rest.partition("=")
            target = scope if stages else global_args
            target[name] = (
                _resolve(default, {**global_args, **scope})
                if default
                else global_args.get(name, "")
            )
            continue
        if keyword == "FROM":
            parts = rest.split()
            image = _resolve(parts[0], global_args)
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else ""
            stages.append(Stage(image, name, []))
            scope = {}
            continue
        if not stages:
            continue
        stages[-1].instructions.append(
            Instruction(keyword, _resolve(rest, {**global_args, **scope}))
        )
    return stages, global_args


def copy_sources(instruction: Instruction) -> tuple[str | None, list[str], str]:
    """(--from stage or None, sources, destination) of a COPY."""
    words = instruction.args.split()
    source_from = None
    while words and words[0].startswith("--"):
        flag = words.pop(0)
        if flag.startswith("--from="):
            source_from = flag.split("=", 1)[1]
    return source_from, words[:-1], words[-1]


def apt_packages(stage: Stage) -> set[str]:
    packages: set[str] = set()
    for command in re.split(r"&&|;", stage.run_text()):
        words = command.split()
        if "apt-get" in words and "install" in words:
            packages.update(w for w in words[words.index("install") + 1 :] if not w.startswith("-"))
    return packages


class Ignore:
    """BuildKit's .dockerignore: patterns match a path or any of its parents; `**` spans
    directories; the last matching pattern wins, `!` re-includes."""

    def __init__(self, path: pathlib.Path):
        self.rules: list[tuple[bool, re.Pattern]] = []
        for raw in path.read_text().splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            pattern = line[1:].strip() if negate else line
            self.rules.append((negate, re.compile(self._regex(pattern.strip("/")))))

    @staticmethod
    def _regex(pattern: str) -> str:
        out, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out, i = out + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                out, i = out + ".*", i + 2
            elif pattern[i] == "*":
                out, i = out + "[^/]*", i + 1
            elif pattern[i] == "?":
                out, i = out + "[^/]", i + 1
            else:
                out, i = out + re.escape(pattern[i]), i + 1
        return "^" + out + "$"

    def excluded(self, path: str) -> bool:
        parts = path.strip("/").split("/")
        candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        verdict = False
        for negate, regex in self.rules:
            if any(regex.match(c) for c in candidates):
                verdict = not negate
        return verdict
