"""The official Python MCP SDK (PyPI `mcp`: stdio_client + ClientSession) against the MCP
firmware (examples/firmware, image rpcwire-firmware-mcp) on qemu, reached through
`rpcwire bridge --serial PTY`, the way an MCP host runs a serial device. Every check raises on
failure; the last line printed is `firmware-mcp: all checks passed`.

Usage: firmware_mcp_client.py RPCWIRE_BINARY PTY [BRIDGE_ARGS...]

It waits after starting the bridge until the test says the bridge has seen the device's boot
notification (the file named by RPCWIRE_DEVICE_BOOTED exists; at most 60 s) before
initializing: a boot seen while a call waits would fail that call, as a device reset must."""

import os
import re
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp import MCPError

TOOLS = {"read_counter", "set_led", "add", "blink"}


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def text(result):
    check(len(result.content) == 1 and result.content[0].type == "text", "one text content item")
    return result.content[0].text


async def main(rpcwire, pty, extra):
    params = StdioServerParameters(command=rpcwire, args=["bridge", "--serial", pty, *extra])
    async with stdio_client(params) as (read, write):
        booted = os.environ.get("RPCWIRE_DEVICE_BOOTED")
        for _ in range(600):
            if booted is None or os.path.exists(booted):
                break
            await anyio.sleep(0.1)
        else:
            raise AssertionError("the bridge never reported the device's boot")
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "rpcwire-firmware-mcp", f"initialize: serverInfo {init.server_info.name}")
            check(init.protocol_version == "2025-11-25", f"initialize: protocol version {init.protocol_version}")
            check(init.capabilities.tools is not None, "initialize: tools capability")

            await session.send_ping()
            check(True, "ping")

            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            check(names == TOOLS, f"tools/list: {sorted(names)}")
            for t in tools:
                check(t.input_schema.get("type") == "object", f"tools/list: {t.name} has an object input schema")

            r = await session.call_tool("read_counter", {})
            m = re.fullmatch(r"counter=(\d+) uptime_ms=(\d+) stack_used=(\d+)", text(r))
            check(not r.is_error and m is not None, f"read_counter: {text(r)}")
            first = int(m.group(1))

            r = await session.call_tool("set_led", {"on": True})
            check(not r.is_error and text(r) == "LED on", "set_led on: LED on")
            r = await session.call_tool("set_led", {"on": False})
            check(not r.is_error and text(r) == "LED off", "set_led off: LED off")
            r = await session.call_tool("set_led", {"on": "yes"})
            check(r.is_error, "set_led with a string: isError result")

            r = await session.call_tool("add", {"a": 2, "b": 40})
            check(not r.is_error and text(r) == "42", "add 2 + 40: 42")
            r = await session.call_tool("add", {"a": -9007199254740993, "b": 1})
            check(not r.is_error and text(r) == "-9007199254740992", "add with 64-bit integers")
            r = await session.call_tool("add", {"a": 9223372036854775807, "b": 1})
            check(r.is_error and "overflow" in text(r), "add overflowing: isError result")

            progress = []

            async def on_progress(p, total, message):
                progress.append((p, total))

            r = await session.call_tool("blink", {"times": 5}, progress_callback=on_progress)
            check(not r.is_error and text(r) == "blinked 5 times", "blink 5: result")
            # The SDK may run the last progress handler just after the result: let it.
            await anyio.sleep(0.2)
            check(progress == [(i, 5) for i in range(1, 6)], f"blink 5: progress {progress}")

            r = await session.call_tool("blink", {"times": 2})
            check(not r.is_error and text(r) == "blinked 2 times", "blink without a progress token")

            r = await session.call_tool("read_counter", {})
            m = re.fullmatch(r"counter=(\d+) uptime_ms=(\d+) stack_used=(\d+)", text(r))
            check(int(m.group(1)) == first + 9, f"read_counter counts every tool call: {text(r)}")
            print(f"FIRMWARE_MCP_STACK_USED={m.group(3)}", flush=True)

            try:
                await session.call_tool("nope", {})
                code = None
            except MCPError as e:  # a JSON-RPC error answer
                code = e.error.code
            check(code == -32602, f"an unknown tool: JSON-RPC error Invalid params ({code})")

            await session.send_ping()
            check(True, "ping after everything: the session is unharmed")
    print("firmware-mcp: all checks passed", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:])
