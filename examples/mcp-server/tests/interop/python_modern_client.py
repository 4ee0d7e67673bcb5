"""The official Python MCP SDK (PyPI `mcp` 2.3.0, `mcp.Client`) against examples/mcp-server at
protocol revision 2026-07-28, over stdio (`stdio SERVER_BINARY`: the server started with
`--fixtures`) or Streamable HTTP (`http URL`). The client probes `server/discover`
(`mode="auto"`), lists and calls tools, answers an elicitation through the SDK's
`InputRequiredResult` loop (`elicitation_callback`), reads resources, gets prompts, and runs a
task of the tasks extension to completion and cancels another. Every check raises on failure;
the last line is `python-sdk-2026: all checks passed`. Run by tests/sdk_modern.rs.

mcp 2.3.0 has no tasks extension of its own (no `tasks/get`, `tasks/cancel` or `resultType:
"task"` anywhere in `mcp/` or `mcp_types/`); it has the extension mechanism the extension is
meant to plug into (`mcp.client.extension`: `ClientExtension`, `ResultClaim`), so the tasks
client below is written on that public API: it advertises `io.modelcontextprotocol/tasks`,
claims `resultType: "task"` on `tools/call`, and polls `tasks/get` through the SDK's session."""

import sys
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from pydantic import ConfigDict
from sdk_checks import check

REVISION = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"


class CreateTaskResult(types.Result):
    """The tasks extension's answer to a `tools/call` it runs as a task."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class TaskRequest(types.Request[dict[str, Any], str]):
    """`tasks/get` and `tasks/cancel`: `{taskId}`. Over Streamable HTTP the server asks for the
    task id in the `Mcp-Name` header (SEP-2663); `name_param` is the SDK's way to mirror it."""

    name_param = "taskId"
    method: str
    params: dict[str, Any]


class AnyResult(types.Result):
    model_config = ConfigDict(extra="allow")


async def task_request(session, method: str, task_id: str) -> dict[str, Any]:
    r = await session.send_request(TaskRequest(method=method, params={"taskId": task_id}), AnyResult)
    return r.model_dump(by_alias=True)


class Tasks(ClientExtension):
    """The tasks extension on the SDK's extension API: polls `tasks/get` until the task ends."""

    identifier = TASKS

    def __init__(self):
        self.polls = 0

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]

    async def resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        with anyio.fail_after(30):
            while True:
                self.polls += 1
                got = await task_request(ctx.session, "tasks/get", created.task_id)
                if got["status"] == "completed":
                    return types.CallToolResult.model_validate(got["result"])
                if got["status"] in ("failed", "cancelled"):
                    raise RuntimeError(f"task {created.task_id} {got['status']}: {got}")
                await anyio.sleep(got.get("pollIntervalMs", 100) / 1000)


async def main(transport: str, target: str):
    asked = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    server = (
        StdioServerParameters(command=target, args=["--fixtures"]) if transport == "stdio" else target
    )
    tasks = Tasks()
    async with Client(server, mode="auto", elicitation_callback=on_elicit, extensions=[tasks]) as client:
        # mode="auto": the SDK sends server/discover and adopts the newest revision both speak.
        check(client.protocol_version == REVISION, f"server/discover: revision {client.protocol_version}")
        found = client.session.discover_result
        check(found is not None and REVISION in found.supported_versions, f"discover: supportedVersions {found and found.supported_versions}")
        check(client.server_capabilities.tools is not None, "discover: tools capability")
        check(TASKS in (client.server_capabilities.extensions or {}), "discover: the tasks extension offered")

        tools = (await client.list_tools()).tools
        names = {t.name for t in tools}
        for want in ("add", "test_input_required_result_elicitation", "slow_compute", "long_task"):
            check(want in names, f"tools/list: {want}")
        r = await client.call_tool("add", {"a": 2, "b": 40})
        check(not r.is_error and r.content[0].text == "42", "tools/call add: 42")

        # The server answers InputRequiredResult (an elicitation and a sealed requestState); the
        # SDK asks on_elicit and sends the call again with the answer.
        r = await client.call_tool("test_input_required_result_elicitation", {})
        check(asked == ["What is your name?"], f"InputRequiredResult: the elicitation reached the callback ({asked})")
        check(not r.is_error and r.content[0].text == "Hello, Ada!", f"InputRequiredResult: answered call greets ({r.content})")

        resources = (await client.list_resources()).resources
        check("test://static-text" in {str(x.uri) for x in resources}, "resources/list: test://static-text")
        rr = await client.read_resource("test://static-text")
        check(rr.contents[0].text == "This is the content of the static text resource.", f"resources/read: {rr.contents[0]}")
        rr = await client.read_resource("test://template/42/data")
        check("42" in rr.contents[0].text, f"resources/read through the template: {rr.contents[0].text}")

        prompts = {p.name for p in (await client.list_prompts()).prompts}
        check("test_prompt_with_arguments" in prompts, f"prompts/list: {sorted(prompts)}")
        pr = await client.get_prompt("test_prompt_with_arguments", {"arg1": "one", "arg2": "two"})
        text = pr.messages[0].content.text
        check("one" in text and "two" in text, f"prompts/get with arguments: {text}")

        # A task to completion: CreateTaskResult, then tasks/get until it is done.
        r = await client.call_tool("slow_compute", {"seconds": 0.3, "label": "py"})
        check(tasks.polls >= 1, f"task: polled tasks/get {tasks.polls} times")
        check(r.content[0].text == "computed py after 0.3 s", f"task: completed with its result ({r.content[0].text})")

        # A task cancelled: the claimed result taken as it is, then tasks/cancel.
        created = await client.session.call_tool("slow_compute", {"seconds": 30}, allow_claimed=True)
        check(isinstance(created, CreateTaskResult) and created.status == "working", f"task created: {created}")
        cancelled = await task_request(client.session, "tasks/cancel", created.task_id)
        check(cancelled.get("resultType") == "complete", f"tasks/cancel acknowledged: {cancelled}")
        got = await task_request(client.session, "tasks/get", created.task_id)
        check(got["status"] == "cancelled" and "result" not in got, f"tasks/get after cancel: {got['status']}")
    print("python-sdk-2026: all checks passed", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
