"""Hostile clients against one HTTP listener, for `hostile-bench`: slowloris connections that
trickle header bytes, connections that send a body one byte at a time, idle connections that
send nothing, oversized header and body requests. Runs until killed; prints what the server
did to them every few seconds (closed after how long, or answered with what status).

    python attacker.py HOST PORT CONNECTIONS [PATH]

PATH (default `/mcp`, a node's endpoint) is the target of every request: on the gateway, one
whose handler reads the body (an environment's edge path, `/api/auth/login`), or a trickled
body would be refused at once by a 404 instead of being read."""

import asyncio
import collections
import sys
import time

host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
path = (sys.argv[4] if len(sys.argv) > 4 else "/mcp").encode()
seen: collections.Counter[str] = collections.Counter()
lifetimes: dict[str, list[float]] = collections.defaultdict(list)


async def one(kind: str) -> None:
    while True:
        started = time.monotonic()
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            seen[f"{kind}: connect refused"] += 1
            await asyncio.sleep(0.5)
            continue
        try:
            if kind == "slow-headers":
                writer.write(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\n")
                while True:
                    writer.write(b"X-Slow: a\r\n")
                    await writer.drain()
                    if await wait_closed(reader, 1.0):
                        break
            elif kind == "slow-body":
                writer.write(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
                while True:
                    writer.write(b" ")
                    await writer.drain()
                    if await wait_closed(reader, 1.0):
                        break
            elif kind == "idle":
                await wait_closed(reader, 3600)
            elif kind == "big-headers":
                writer.write(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 600_000 + b"\r\n\r\n")
                await writer.drain()
                await wait_closed(reader, 30)
            elif kind == "big-body":
                writer.write(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n" + b"a" * 65536)
                await writer.drain()
                await wait_closed(reader, 30)
        except (ConnectionError, OSError):
            pass
        lifetimes[kind].append(time.monotonic() - started)
        writer.close()
        await asyncio.sleep(0.1)


async def wait_closed(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        data = await asyncio.wait_for(reader.read(65536), seconds)
    except TimeoutError:
        return False
    except (ConnectionError, OSError):
        return True
    if data:
        seen[data.split(b"\r\n", 1)[0].decode(errors="replace")] += 1
    return True


async def report() -> None:
    while True:
        await asyncio.sleep(5)
        held = {k: f"{max(v):.1f}s max of {len(v)}" for k, v in lifetimes.items() if v}
        print({"answers": dict(seen), "connection lifetimes": held}, flush=True)


async def main() -> None:
    kinds = ["slow-headers"] * (count // 2) + ["slow-body"] * (count // 4) + ["idle"] * (count // 4)
    kinds += ["big-headers", "big-body"] * 4
    await asyncio.gather(report(), *(one(k) for k in kinds))


asyncio.run(main())
