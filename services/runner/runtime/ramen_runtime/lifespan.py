"""A server's lifespan, held open by one dedicated task from load to stop.

An async context manager has to be exited in the context it was entered in: fastmcp's
lifespan sets ContextVars (its current server, uncalled_for's ``SharedContext``) and
resets them on exit, which fails with "Token ... was created in a different Context" when
the lifespan is entered on the load path and exited from a shutdown task. So one task per
package enters the lifespan, parks until stop, and exits it.

The context that task has once the lifespan is entered (holding whatever ContextVars the
lifespan set) is also the context the package's calls run in, a copy per call. fastmcp
needs that (its ``Shared()`` dependencies and ``CurrentFastMCP`` read those ContextVars;
its own server re-applies them per request), SDK 1.x serves requests from inside its
lifespan the same way; SDK 2.x's dispatcher does not, so there it is a harmless superset.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any


class Lifespan:
    def __init__(self, package: str, cm: Any) -> None:
        self.package = package
        self._cm = cm
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.context: contextvars.Context | None = None

    async def enter(self) -> Any:
        """Start the holding task; returns what the lifespan yielded, or raises what it raised."""
        loop = asyncio.get_running_loop()
        entered: asyncio.Future[Any] = loop.create_future()
        self._task = loop.create_task(self._hold(entered), name=f"lifespan of package {self.package}")
        return await entered

    async def _hold(self, entered: asyncio.Future[Any]) -> None:
        try:
            async with self._cm as value:
                self.context = contextvars.copy_context()
                entered.set_result(value)
                await self._stop.wait()
        except BaseException as exc:
            if entered.done():
                raise  # failed while exiting: the owner's exit() reports it
            if isinstance(exc, asyncio.CancelledError):
                entered.cancel()
            else:
                entered.set_exception(exc)

    async def exit(self) -> None:
        """Let the holding task exit the lifespan, and wait for it (exceptions propagate)."""
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        await task
