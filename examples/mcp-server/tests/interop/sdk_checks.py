"""Checks both Python SDK scripts run (stdio and Streamable HTTP)."""

import anyio


def check(cond, what):
    """Raises on a failed check; prints the passed one."""
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


async def cancel_long_task(session, after):
    """Calls `long_task` and cancels the call (an anyio cancel scope: the SDK sends
    notifications/cancelled) once `after` progress notifications have come. Returns whether
    the call was cancelled and the progress values seen."""
    started = anyio.Event()
    progress = []

    async def on_progress(p, total, message):
        progress.append(p)
        if len(progress) >= after:
            started.set()

    scope = anyio.CancelScope()

    async def run():
        with scope:
            await session.call_tool("long_task", {"seconds": 30}, progress_callback=on_progress)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            scope.cancel()
    return scope.cancelled_caught, progress
