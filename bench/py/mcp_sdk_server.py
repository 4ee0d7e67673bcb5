"""The reference server of the MCP store benchmark (`cargo bench -p rpcwire-bench --bench
mcp_store`): the official Python SDK's `MCPServer` (PyPI `mcp` 2.3.0, installed by
.ci/install/mcp-interop.sh) over Streamable HTTP with sessions (the SDK's
`StreamableHTTPSessionManager`, in a Starlette app under uvicorn), with the two tools of
examples/mcp-server the benchmark calls, the same logic:

- `add(a, b)`: the sum as text.
- `count(to, delay_ms=10)`: logs "counting to N" (info), then every DELAY_MS a progress
  notification I of N "step I", logs "counting done" (debug), answers "counted to N".

The SDK keeps its sessions in process memory and ships no shared store and no event store
(mcp 2.3.0 has only the abstract `EventStore`; its in-memory one is an example in the SDK's
repository, not in the package). `--event-store memory` gives the server the small in-memory
`EventStore` below (every message of every stream kept for `Last-Event-ID`, bounded like
rpcwire's default buffer: the newest 256 events per stream), so that its streams are
resumable as rpcwire's are; without it (the default) they are not.

usage: mcp_sdk_server.py [--http 127.0.0.1:PORT] [--event-store none|memory]

It prints `listening http://127.0.0.1:PORT` once it serves.
"""

import argparse
import asyncio
import collections
import itertools
import socket

import uvicorn

from mcp.server.mcpserver import Context
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import EventMessage, EventStore
from mcp.server.transport_security import TransportSecuritySettings

mcp = MCPServer("python-sdk-bench")


@mcp.tool()
def add(a: int, b: int) -> str:
    """Adds two integers."""
    return str(a + b)


@mcp.tool()
async def count(to: int, ctx: Context, delay_ms: int | None = None) -> str:
    """Counts to `to`, reporting progress at each step."""
    if to > 1000:
        raise ValueError("`to` is at most 1000")
    delay = min(delay_ms if delay_ms is not None else 10, 1000) / 1000
    await ctx.info(f"counting to {to}")
    for i in range(1, to + 1):
        await asyncio.sleep(delay)
        await ctx.report_progress(i, to, f"step {i}")
    await ctx.debug("counting done")
    return f"counted to {to}"


class MemoryEventStore(EventStore):
    """Every stream's newest 256 events, for `Last-Event-ID` (event ids are global)."""

    def __init__(self, per_stream: int = 256) -> None:
        self.per_stream = per_stream
        self.ids = itertools.count(1)
        # stream id -> deque of (event id, message)
        self.streams: dict[str, collections.deque] = {}
        # event id -> stream id
        self.owner: dict[str, str] = {}

    async def store_event(self, stream_id, message):
        event_id = str(next(self.ids))
        events = self.streams.setdefault(stream_id, collections.deque())
        events.append((event_id, message))
        self.owner[event_id] = stream_id
        while len(events) > self.per_stream:
            old, _ = events.popleft()
            self.owner.pop(old, None)
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        stream_id = self.owner.get(last_event_id)
        if stream_id is None:
            return None
        after = False
        for event_id, message in self.streams.get(stream_id, ()):
            if after and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id


async def serve(addr: str, event_store: str) -> None:
    host, port = addr.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    host, port = sock.getsockname()[:2]
    app = mcp.streamable_http_app(
        event_store=MemoryEventStore() if event_store == "memory" else None,
        # Room for every session the bench opens (the SDK's default is 10 000), as
        # `mcp-server --max-sessions` gives rpcwire's servers.
        max_sessions=100_000,
        transport_security=TransportSecuritySettings(
            allowed_hosts=[f"127.0.0.1:{port}"], allowed_origins=[]
        ),
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    running = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if running.done():
            await running
            return
        await asyncio.sleep(0.01)
    print(f"listening http://{host}:{port}", flush=True)
    await running


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http", default="127.0.0.1:0", help="address to serve on")
    parser.add_argument("--event-store", choices=["none", "memory"], default="none")
    args = parser.parse_args()
    asyncio.run(serve(args.http, args.event_store))


if __name__ == "__main__":
    main()
