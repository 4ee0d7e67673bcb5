"""The official Python MCP SDK (PyPI `mcp`, Streamable HTTP) calls tools on `mcp-server --http
URL --otlp ...` with a W3C trace context in the request's `_meta` (`traceparent`,
`tracestate`), as the SDK's `meta=` argument sends it. Prints the session id the server gave
(`session-id: ID`) and, last, `python-sdk-traced: done`.

Usage: python_traced_client.py URL TRACEPARENT_OF_ADD TRACEPARENT_OF_FAIL
Run by examples/mcp-server/tests/sdk_traces.rs, which checks the exported spans."""

import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from sdk_checks import check


async def main(url, add_parent, fail_parent):
    ids = set()

    async def on_response(response):
        sid = response.headers.get("mcp-session-id")
        if sid:
            ids.add(sid)

    client = httpx2.AsyncClient(event_hooks={"response": [on_response]}, timeout=30)
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                r = await session.call_tool(
                    "add", {"a": 2, "b": 40},
                    meta={"traceparent": add_parent, "tracestate": "sdk=1"},
                )
                check(not r.is_error and r.content[0].text == "42", "call add: 42")
                r = await session.call_tool("fail", {"reason": "nope"}, meta={"traceparent": fail_parent})
                check(r.is_error, "call fail: isError")
    check(len(ids) == 1, f"one session id ({ids})")
    print(f"session-id: {ids.pop()}")
    print("python-sdk-traced: done")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
