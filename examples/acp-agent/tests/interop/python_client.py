"""The official Python ACP SDK (PyPI agent-client-protocol: spawn_agent_process and a Client)
as the editor, against the example agent given on the command line.

Usage: MCP_URL=URL python python_client.py AGENT [ARGS...], URL the project's MCP example
server over Streamable HTTP, given to the agent in session/new. Every check prints `ok: ...`
or raises; the last line is `python-sdk: all checks passed`. Run by
examples/acp-agent/tests/sdk_interop.rs.

The SDK (0.12.1) has no API to cancel one request, so the `$/cancel_request` check sends the
notification through the SDK's own connection for the id the SDK gave the request; nor for
`session/delete` and `logout`, which go through the same connection by name.
"""

import asyncio
import os
import re
import subprocess
import sys

from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
    HttpMcpServer,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp.stdio import spawn_agent_process


def check(cond, what, detail=None):
    if not cond:
        raise AssertionError(f"check failed: {what}: {detail!r}")
    print(f"ok: {what}", flush=True)


async def wait_for(cond, what, seconds=10.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not cond():
        if loop.time() > end:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


class Editor:
    """The client side: in-memory files, a scripted permission answer, recorded updates."""

    def __init__(self):
        self.files = {"/virtual/five.txt": "1\n2\n3\n4\n5\n"}
        self.reads, self.writes, self.asked, self.updates = [], [], [], []
        self.elicited, self.terminals, self.released = [], {}, []
        self.answer = "allow"

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.asked.append(tool_call)
        chosen = next(o for o in options if o.option_id == self.answer)
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=chosen.option_id, outcome="selected"))

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update)

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.reads.append(path)
        if path not in self.files:
            raise RequestError(-32002, "Resource not found", {"path": path})
        return ReadTextFileResponse(content=self.files[path])

    async def write_text_file(self, session_id, path, content, **kwargs):
        self.writes.append((path, content))
        self.files[path] = content
        return WriteTextFileResponse()

    async def create_elicitation(self, message, mode, **kwargs):
        self.elicited.append((message, mode))
        return AcceptElicitationResponse(action="accept", content={"answer": "green"})

    async def create_terminal(self, session_id, command, args=None, env=None, cwd=None, output_byte_limit=None, **kwargs):
        done = subprocess.run([command, *(args or [])], capture_output=True, text=True, timeout=30)
        self.terminals[f"t{len(self.terminals) + 1}"] = done
        return CreateTerminalResponse(terminal_id=f"t{len(self.terminals)}")

    async def terminal_output(self, session_id, terminal_id, **kwargs):
        done = self.terminals[terminal_id]
        return TerminalOutputResponse(output=done.stdout + done.stderr, truncated=False)

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kwargs):
        return WaitForTerminalExitResponse(exit_code=self.terminals[terminal_id].returncode)

    async def kill_terminal(self, session_id, terminal_id, **kwargs):
        return None

    async def release_terminal(self, session_id, terminal_id, **kwargs):
        self.released.append(terminal_id)
        return None

    def kinds(self):
        return [u.session_update for u in self.updates]

    def texts(self):
        out = []
        for u in self.updates:
            if u.session_update == "agent_message_chunk":
                out.append(u.content.text)
            for c in getattr(u, "content", None) or []:
                inner = getattr(c, "content", None)
                if getattr(inner, "text", None):
                    out.append(inner.text)
        return out


async def main(command, args):
    editor = Editor()
    # Elicitation is stable v1 in the schema (1.20) and the TypeScript SDK (2.4); this SDK
    # (0.12.1) still answers it Method not found unless its unstable flag is on.
    async with spawn_agent_process(editor, command, *args, use_unstable_protocol=True) as (conn, process):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                terminal=True,
                elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()),
            ),
            client_info=Implementation(name="rpcwire-python-interop", version="1.0.0"),
        )
        check(init.protocol_version == 1, "initialize: protocol version 1", init)
        check(init.agent_info.name == "rpcwire-acp-agent", "initialize: agent info", init.agent_info)
        check(init.agent_capabilities.load_session is True, "initialize: loadSession capability")
        caps = init.agent_capabilities.session_capabilities
        check(caps.list is not None and caps.resume is not None and caps.close is not None and caps.delete is not None, "initialize: list, resume, close and delete capabilities", caps)
        check(init.agent_capabilities.mcp_capabilities.http is True, "initialize: MCP over HTTP offered")

        session = await conn.new_session(cwd="/virtual", mcp_servers=[])
        sid = session.session_id
        check(bool(sid), "session/new: a session id", sid)

        async def prompt(text):
            return await conn.prompt(session_id=sid, prompt=[text_block(text)])

        editor.updates.clear()
        res = await prompt("read /virtual/five.txt")
        check(res.stop_reason == "end_turn", "read: stopReason end_turn", res)
        check(
            editor.kinds() == ["tool_call", "tool_call_update", "tool_call_update", "agent_message_chunk"],
            "read: updates in order (tool call, in progress, completed, message)",
            editor.kinds(),
        )
        check(editor.updates[2].status == "completed", "read: completed")
        check(editor.reads == ["/virtual/five.txt"], "read: served by the client's fs/read_text_file", editor.reads)
        check("/virtual/five.txt has 5 lines" in editor.texts(), "read: the line count", editor.texts())

        editor.updates.clear()
        editor.answer = "allow"
        res = await prompt("write /virtual/new.txt hello from the agent")
        check(res.stop_reason == "end_turn", "write allowed: end_turn", res)
        check(len(editor.asked) == 1, "write allowed: permission asked")
        check(editor.writes == [("/virtual/new.txt", "hello from the agent")], "write allowed: written through fs/write_text_file", editor.writes)

        editor.updates.clear()
        editor.answer = "reject"
        res = await prompt("write /virtual/other.txt nope")
        check(res.stop_reason == "end_turn", "write rejected: end_turn", res)
        check(len(editor.asked) == 2 and len(editor.writes) == 1, "write rejected: asked, nothing written", editor.writes)
        check(any("denied" in t for t in editor.texts()), "write rejected: the tool call says denied", editor.texts())

        editor.updates.clear()
        long = asyncio.ensure_future(prompt("long 100"))
        await wait_for(lambda: "step 2/100" in editor.texts(), "step 2 of the long task")
        await conn.cancel(session_id=sid)
        res = await asyncio.wait_for(long, 10)
        check(res.stop_reason == "cancelled", "session/cancel: stopReason cancelled", res)
        check(editor.kinds()[:2] == ["plan", "tool_call"], "long: a plan, then its tool call", editor.kinds()[:2])
        seen = len(editor.updates)
        await asyncio.sleep(0.6)
        check(len(editor.updates) == seen, "session/cancel: no update after the turn's end (the work stopped)")
        steps = [t for t in editor.texts() if re.fullmatch(r"step \d+/100", t)]
        check(len(steps) < 20, "session/cancel: the task did not run on", len(steps))

        # $/cancel_request for the SDK's own request id.
        inner = conn._conn
        sent = []
        inner.add_observer(lambda event: sent.append(event))
        editor.updates.clear()
        aborted = asyncio.ensure_future(
            inner.send_request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "long 100"}]})
        )
        await wait_for(lambda: "step 1/100" in editor.texts(), "step 1 of the long task")
        ids = [e.message["id"] for e in sent if getattr(e, "message", {}).get("method") == "session/prompt"]
        check(len(ids) == 1, "the SDK sent the prompt request", sent)
        await inner.send_notification("$/cancel_request", {"requestId": ids[0]})
        try:
            await asyncio.wait_for(aborted, 10)
            code = None
        except RequestError as e:
            code = e.code
        check(code == -32800, "$/cancel_request: the request comes back -32800", code)

        try:
            await conn.ext_method("x/unknown", {})
            code = None
        except RequestError as e:
            code = e.code
        check(code == -32601, "unknown method: -32601", code)

        editor.updates.clear()
        res = await prompt("read /virtual/five.txt")
        check(res.stop_reason == "end_turn", "the session goes on after the errors")

        # The rest of the stable surface, in a session given the MCP example server over HTTP.
        servers = [HttpMcpServer(type="http", name="demo", url=os.environ["MCP_URL"], headers=[])]
        second = await conn.new_session(cwd="/work", mcp_servers=servers)
        sid2 = second.session_id
        check(second.modes.current_mode_id == "code", "session/new: modes", second.modes)

        def last():
            return editor.texts()[-1]

        async def prompt2(text):
            editor.updates.clear()
            return await conn.prompt(session_id=sid2, prompt=[text_block(text)])

        await prompt2("tools")
        check("demo/add" in last(), "MCP over HTTP: the server's tools listed", last())
        await prompt2('tool add {"a": 20, "b": 22}')
        check(last() == "demo/add: 42", "MCP over HTTP: a tool called through the agent", last())

        await conn.set_session_mode(session_id=sid2, mode_id="ask")
        await prompt2("mode")
        check(last() == "mode: ask", "session/set_mode", last())
        await prompt2("run echo no")
        check("not allowed in the ask mode" in last() and not editor.terminals, "session/set_mode: the ask mode refuses commands", last())
        await conn.set_session_mode(session_id=sid2, mode_id="code")

        answer = await conn.set_config_option(config_id="style", session_id=sid2, value="shout")
        check(answer.config_options[0].current_value == "shout", "session/set_config_option", answer)
        await prompt2("mode")
        check(last() == "MODE: CODE", "session/set_config_option: the style applies", last())
        await conn.set_config_option(config_id="style", session_id=sid2, value="plain")

        await prompt2("ask your favourite colour?")
        check(len(editor.elicited) == 1 and editor.elicited[0][0] == "your favourite colour?", "elicitation/create: the question reaches the client", editor.elicited)
        check(last() == "you answered: green", "elicitation: the answer reaches the agent", last())

        await prompt2("run echo from-python")
        check(editor.released == ["t1"], "terminal: created and released", editor.released)
        check(last() == "exit code 0, output: from-python", "terminal: output and exit code reach the agent", last())

        listed = await conn.list_sessions()
        ids = [s.session_id for s in listed.sessions]
        check(sid in ids and sid2 in ids, "session/list: both sessions", ids)
        only = await conn.list_sessions(cwd="/work")
        check([s.session_id for s in only.sessions] == [sid2], "session/list: filtered by cwd", only)
        resumed = await conn.resume_session(session_id=sid2, cwd="/work", mcp_servers=servers)
        check(resumed.modes.current_mode_id == "code", "session/resume", resumed)
        await prompt2('tool echo {"text": "again"}')
        check(last() == "demo/echo: again", "session/resume: the MCP server connected again", last())
        await conn.close_session(session_id=sid2)
        check(True, "session/close answered")

        inner = conn._conn
        await inner.send_request("session/delete", {"sessionId": sid2})
        try:
            await conn.resume_session(session_id=sid2, cwd="/work", mcp_servers=[])
            code = None
        except RequestError as e:
            code = e.code
        check(code == -32002, "session/delete: the session is gone", code)
        await conn.authenticate(method_id="local")
        await inner.send_request("logout", {})
        check(True, "authenticate and logout answered")
        # The SDK adds the leading underscore itself.
        stats = await conn.ext_method("rpcwire/stats", {"n": 2})
        check(stats.get("sessions") == 1, "an extension method", stats)
    code = await asyncio.wait_for(process.wait(), 5)
    check(code == 0, "the agent exits 0 when its stdin closes", code)
    print("python-sdk: all checks passed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2:]))
