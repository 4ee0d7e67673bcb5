"""The official Python MCP SDK's Streamable HTTP client (PyPI `mcp`: streamable_http_client +
ClientSession) against `mcp-server --http` (URL on the command line). Every check raises on
failure; the last line printed is `python-sdk-http: all checks passed`.
Run by examples/mcp-server/tests/sdk_http.rs."""

import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from sdk_checks import cancel_long_task, check


class Recorder:
    """Records every HTTP exchange the SDK makes (method, status, session id)."""

    def __init__(self):
        self.seen = []

    async def on_response(self, response):
        self.seen.append((response.request.method, response.status_code,
                          response.headers.get("mcp-session-id") or response.request.headers.get("mcp-session-id")))

    def session_ids(self):
        return [s for _, _, s in self.seen if s]


async def session_round(url, rec):
    """Initialize, list and call tools (progress over SSE); the context's end sends DELETE."""
    logs = []

    async def on_log(params):
        logs.append((params.level, params.data))

    client = httpx2.AsyncClient(event_hooks={"response": [rec.on_response]}, timeout=30)
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write, logging_callback=on_log) as session:
                init = await session.initialize()
                check(init.server_info.name == "rpcwire-example", f"initialize: serverInfo {init.server_info.name}")
                check(init.protocol_version == "2025-11-25", f"initialize: protocol version {init.protocol_version}")
                await session.send_ping()
                names = {t.name for t in (await session.list_tools()).tools}
                check({"add", "count", "fail", "test_simple_text"} <= names, f"tools/list: {len(names)} tools")
                r = await session.call_tool("add", {"a": 2, "b": 40})
                check(not r.is_error and r.content[0].text == "42", "call add: 42")
                progress = []

                async def on_progress(p, total, message):
                    progress.append(p)

                r = await session.call_tool("count", {"to": 4, "delay_ms": 5}, progress_callback=on_progress)
                check(not r.is_error and r.content[0].text == "counted to 4", "call count: result")
                check(progress == [1, 2, 3, 4], f"call count: progress 1..4 over SSE ({progress})")
                check(any("counting to 4" in str(d) for _, d in logs), "log message over SSE")
                r = await session.call_tool("fail", {"reason": "nope"})
                check(r.is_error and "nope" in r.content[0].text, "call fail: isError")

                # Cancel a long task after two progress notifications: the SDK sends
                # notifications/cancelled, the server stops the task and ends its stream with no
                # answer (MCP), and the session goes on.
                cancelled, long_progress = await cancel_long_task(session, after=2)
                check(cancelled, "long_task: call cancelled by the client")
                await anyio.sleep(0.5)
                stopped_at = len(long_progress)
                await anyio.sleep(0.5)
                check(len(long_progress) == stopped_at, f"long_task: progress ended at {stopped_at}")
                r = await session.call_tool("add", {"a": 1, "b": 1})
                check(r.content[0].text == "2", "the session goes on after the cancellation")
        ids = set(rec.session_ids())
        check(len(ids) == 1, f"one session id ({ids})")
        sid = ids.pop()
        check(sid.startswith("mcp-"), f"session id carries the server's prefix ({sid})")
        check(("DELETE", 200, sid) in rec.seen, "the SDK ended the session with DELETE (200)")
    return sid


async def main(url):
    rec = Recorder()
    sid = await session_round(url, rec)

    # The ended session is gone: 404.
    async with httpx2.AsyncClient() as raw:
        r = await raw.post(url, headers={"mcp-session-id": sid, "accept": "application/json, text/event-stream",
                                         "content-type": "application/json", "mcp-protocol-version": "2025-11-25"},
                           json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        check(r.status_code == 404, f"POST on the ended session: {r.status_code}")

    # A session ended under the client's feet: its next call fails (404), the client starts over.
    rec2 = Recorder()
    client = httpx2.AsyncClient(event_hooks={"response": [rec2.on_response]}, timeout=30)
    async with client:
        async with streamable_http_client(url, http_client=client, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                sid2 = rec2.session_ids()[0]
                async with httpx2.AsyncClient() as raw:
                    r = await raw.delete(url, headers={"mcp-session-id": sid2})
                    check(r.status_code == 200, "DELETE from outside: 200")
                try:
                    await session.list_tools()
                    check(False, "a call on a deleted session fails")
                except MCPError as e:
                    check(True, f"a call on a deleted session fails ({e})")
                check(any(m == "POST" and st == 404 for m, st, _ in rec2.seen), "the server answered 404")
    rec3 = Recorder()
    sid3 = await session_round(url, rec3)
    check(sid3 not in (sid, sid2), "re-initialized: a new session")
    print("python-sdk-http: all checks passed", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
