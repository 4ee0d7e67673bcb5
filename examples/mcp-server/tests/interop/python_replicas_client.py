"""The official Python MCP SDK (PyPI `mcp`, Streamable HTTP, revision 2025-11-25) against three
`mcp-server --store redis://...` replicas behind nginx round-robin with no affinity (URL on the
command line). Every request of a session may land on any replica (nginx names the one that
answered in `X-Upstream`).

Checks: initialize, list and call tools with the session's requests spread over the replicas;
`test_elicitation` and `test_sampling`, whose answers (POSTs of their own) land on other replicas
than the call's and still reach it; then `count` (progress notifications over SSE) whose response stream the client cuts after a
few events (the transport below stops reading and closes the connection), so that the SDK
resumes it with a GET and `Last-Event-ID`, which nginx sends to whichever replica is next:
every progress value exactly once and in order, and the result. Repeated until a resumption
has landed on a replica other than the one running the call. Every check raises on failure;
the last line printed is `python-sdk-replicas: all checks passed`.
Run by examples/mcp-server/tests/replicas.rs."""

import sys

import anyio
import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from sdk_checks import check


class CutStream(httpx2.AsyncByteStream):
    """A response body that ends after `events` progress events (whole SSE events only): the
    client stops reading and closes the connection mid-stream."""

    def __init__(self, inner, events):
        self.inner = inner
        self.events = events

    async def __aiter__(self):
        buf = b""
        seen = 0
        try:
            async for chunk in self.inner:
                buf += chunk
                while b"\n\n" in buf:
                    event, buf = buf.split(b"\n\n", 1)
                    yield event + b"\n\n"
                    if b"notifications/progress" in event:
                        seen += 1
                        if seen >= self.events:
                            return
        finally:
            await self.inner.aclose()

    async def aclose(self):
        await self.inner.aclose()


class Cutting(httpx2.AsyncBaseTransport):
    """Records every exchange (method, upstream, Last-Event-ID) and cuts the next `tools/call`
    response stream once armed."""

    def __init__(self):
        self.inner = httpx2.AsyncHTTPTransport()
        self.cut_after = None
        self.seen = []

    async def handle_async_request(self, request):
        response = await self.inner.handle_async_request(request)
        self.seen.append((request.method, response.headers.get("x-upstream"),
                          request.headers.get("last-event-id"), response.status_code))
        if (self.cut_after is not None and request.method == "POST"
                and b'"tools/call"' in request.content
                and response.headers.get("content-type", "").startswith("text/event-stream")):
            response.stream = CutStream(response.stream, self.cut_after)
            self.cut_after = None
        return response

    async def aclose(self):
        await self.inner.aclose()


async def main(url):
    cutting = Cutting()
    client = httpx2.AsyncClient(transport=cutting, timeout=60)
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async def on_elicit(context, params):
                return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

            async def on_sample(context, params):
                return types.CreateMessageResult(role="assistant", model="m",
                                                 content=types.TextContent(type="text", text="hi"))

            async with ClientSession(read, write, elicitation_callback=on_elicit,
                                     sampling_callback=on_sample) as session:
                init = await session.initialize()
                check(init.protocol_version == "2025-11-25", f"initialize: {init.protocol_version}")
                for _ in range(3):
                    names = {t.name for t in (await session.list_tools()).tools}
                    check({"add", "count"} <= names, f"tools/list: {len(names)} tools")
                    r = await session.call_tool("add", {"a": 2, "b": 40})
                    check(not r.is_error and r.content[0].text == "42", "call add: 42")
                upstreams = {u for m, u, _, _ in cutting.seen if m == "POST" and u}
                check(len(upstreams) == 3, f"the session's POSTs reached every replica: {sorted(upstreams)}")

                # Elicitation and sampling: the answers are POSTs of their own, which nginx sends
                # to whichever replica is next; they reach the replica running the call.
                answered_elsewhere = 0
                for attempt in range(1, 7):
                    start = len(cutting.seen)
                    with anyio.fail_after(30):
                        r = await session.call_tool("test_elicitation", {"message": "who?"})
                    check(not r.is_error and "action=accept" in r.content[0].text and "ada" in r.content[0].text,
                          f"elicitation {attempt}: {r.content[0].text}")
                    with anyio.fail_after(30):
                        r = await session.call_tool("test_sampling", {"prompt": "say hi"})
                    check(not r.is_error and r.content[0].text == "LLM response: hi",
                          f"sampling {attempt}: {r.content[0].text}")
                    posts = [u for m, u, _, _ in cutting.seen[start:] if m == "POST"]
                    # call, answer, call, answer
                    if len(posts) == 4 and (posts[0] != posts[1] or posts[2] != posts[3]):
                        answered_elsewhere += 1
                    if answered_elsewhere >= 2:
                        break
                check(answered_elsewhere >= 2,
                      f"{answered_elsewhere} rounds with an answer POSTed to another replica than the call's")

                elsewhere = 0
                for attempt in range(1, 9):
                    progress = []

                    async def on_progress(p, total, message):
                        progress.append(int(p))

                    start = len(cutting.seen)
                    cutting.cut_after = 3
                    with anyio.fail_after(60):
                        r = await session.call_tool("count", {"to": 12, "delay_ms": 60},
                                                    progress_callback=on_progress)
                    check(not r.is_error and r.content[0].text == "counted to 12",
                          f"resumed call {attempt}: result")
                    check(progress == list(range(1, 13)),
                          f"resumed call {attempt}: every progress value once, in order ({progress})")
                    exchanges = cutting.seen[start:]
                    ran = [u for m, u, _, _ in exchanges if m == "POST"][0]
                    resumed = [(u, last, status) for m, u, last, status in exchanges
                               if m == "GET" and last]
                    check(resumed and all(s == 200 for _, _, s in resumed),
                          f"resumed call {attempt}: resumed with Last-Event-ID ({resumed})")
                    where = [u for u, _, _ in resumed]
                    print(f"call {attempt}: ran on {ran}, resumed on {where}", flush=True)
                    if any(u != ran for u in where):
                        elsewhere += 1
                    if elsewhere >= 2:
                        break
                check(elsewhere >= 2, f"{elsewhere} streams resumed on another replica than the call's")
    print("python-sdk-replicas: all checks passed", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
