"""The official Python MCP SDK (PyPI `mcp`: stdio_client + ClientSession) against an MCP
server given on the command line (examples/mcp-server). Every check raises on failure; the
last line printed is `python-sdk: all checks passed`. Run by examples/mcp-server/tests/sdk_interop.rs."""

import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from sdk_checks import cancel_long_task, check

EXPECTED_TOOLS = {"add", "echo", "count", "fail", "long_task"}


async def main(command, args):
    logs = []

    async def on_log(params):
        logs.append((params.level, params.data))

    params = StdioServerParameters(command=command, args=args)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            init = await session.initialize()
            check(init.server_info.name == "rpcwire-example", f"initialize: serverInfo {init.server_info.name}")
            check(init.protocol_version == "2025-11-25", f"initialize: protocol version {init.protocol_version}")
            check(init.capabilities.tools is not None, "initialize: tools capability")
            check(init.capabilities.logging is not None, "initialize: logging capability")

            await session.send_ping()
            check(True, "ping")

            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            check(names == EXPECTED_TOOLS, f"tools/list: {sorted(names)}")
            for t in tools:
                check(t.input_schema.get("type") == "object", f"tools/list: {t.name} has an object input schema")

            r = await session.call_tool("add", {"a": 2, "b": 40})
            check(not r.is_error and r.content[0].text == "42", "call add: 42")
            r = await session.call_tool("echo", {"text": "héllo \"mcp\""})
            check(r.content[0].text == "héllo \"mcp\"", "call echo: text back unchanged")

            progress = []

            async def on_progress(p, total, message):
                progress.append((p, total, message))

            r = await session.call_tool("count", {"to": 5, "delay_ms": 5}, progress_callback=on_progress)
            check(not r.is_error and r.content[0].text == "counted to 5", "call count: result")
            check([p for p, _, _ in progress] == [1, 2, 3, 4, 5], f"call count: progress 1..5 received ({progress})")
            check(all(t == 5 for _, t, _ in progress), "call count: total 5")
            check(any(lvl == "info" and "counting to 5" in str(d) for lvl, d in logs), "log message received")

            r = await session.call_tool("fail", {"reason": "disk on fire"})
            check(r.is_error, "call fail: isError true")
            check(r.content[0].text == "disk on fire", "call fail: its message")

            r = await session.call_tool("add", {"a": "x"})
            check(r.is_error, "call add with bad arguments: isError true")

            try:
                await session.call_tool("no_such_tool", {})
                check(False, "unknown tool refused")
            except Exception as e:  # McpError
                check("Unknown tool" in str(e), f"unknown tool: protocol error ({e})")

            # Cancel the long task once it has reported progress: the server stops it (its
            # cancellation log arrives), its progress ends, and the session goes on.
            cancelled, long_progress = await cancel_long_task(session, after=3)
            check(cancelled, "long_task: call cancelled by the client")

            with anyio.fail_after(5):
                while not any("long_task cancelled" in str(d) for _, d in logs):
                    await anyio.sleep(0.02)
            check(True, "long_task: the server stopped it (its cancellation log arrived)")
            stopped_at = len(long_progress)
            await anyio.sleep(0.5)
            check(len(long_progress) == stopped_at and stopped_at < 300, f"long_task: progress ended at {stopped_at}")

            await session.send_ping()
            r = await session.call_tool("add", {"a": 1, "b": 1})
            check(r.content[0].text == "2", "session goes on after the cancellation")

            await session.set_logging_level("error")
            before = len(logs)
            await session.call_tool("count", {"to": 1, "delay_ms": 1})
            check(len(logs) == before, "logging/setLevel error: info messages filtered out")
    print("python-sdk: all checks passed", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:])
