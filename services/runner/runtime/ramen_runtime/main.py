"""Entry point: ``python -m ramen_runtime --root <snapshot-dir> [--no-namespace]``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys

from .runtime import Runtime


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ramen_runtime", description=__doc__)
    p.add_argument("--root", required=True, help="snapshot directory (a repo's files at a commit)")
    p.add_argument(
        "--no-namespace",
        action="store_true",
        help="expose tool and prompt names without the '<package>.' prefix (overrides ramen.toml)",
    )
    return p.parse_args(argv)


def _take_stdio() -> tuple[int, int]:
    """Keep fds 0/1 for the protocol; give packages /dev/null for stdin and stderr for stdout."""
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)  # C-level writes and child processes writing to fd 1 land on stderr
    for fd in (in_fd, out_fd):
        os.set_inheritable(fd, False)
    sys.stdout = sys.stderr  # print() lands on stderr
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives for the process
    return in_fd, out_fd


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("RAMEN_RUNTIME_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not os.path.isdir(args.root):
        logging.getLogger("ramen_runtime").error("--root %s is not a directory", args.root)
        sys.stderr.flush()
        os._exit(2)
    in_fd, out_fd = _take_stdio()
    rt = Runtime(args.root, False if args.no_namespace else None)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, rt.finish, 0)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
            pass
    try:
        code = loop.run_until_complete(rt.run(in_fd, out_fd))
    except BaseException:  # noqa: BLE001
        logging.getLogger("ramen_runtime").exception("runtime failed")
        code = 1
    sys.stderr.flush()
    # Not a normal interpreter exit: a sync tool stuck in a worker thread must not
    # keep the process alive after shutdown.
    os._exit(code)
