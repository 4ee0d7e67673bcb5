"""An A2A agent written with the official Python SDK's own server (a2a-sdk 1.3.0).

The Rust client test and the benchmark run against it. Its logic is the one of
examples/a2a-agent: a message whose text starts with "long N" streams N status
updates and artifact chunks (one every STEP_MS, 50 by default) and completes; anything else is
echoed back as one artifact and the task completes at once.

usage: sdk_agent.py [PORT [STEP_MS]]   (PORT 0 or none: any free port; prints
"listening http://127.0.0.1:PORT" once it serves)
"""

import asyncio
import socket
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    TaskState,
)


STEP = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.05


class Agent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        if text.startswith("long"):
            parts = text.split()
            n = int(parts[1]) if len(parts) > 1 else 5
            await up.start_work()
            for i in range(n):
                await asyncio.sleep(STEP)
                await up.update_status(
                    TaskState.TASK_STATE_WORKING,
                    message=up.new_agent_message([new_text_part(f"step {i + 1}/{n}")]),
                )
                await up.add_artifact(
                    [new_text_part(f"chunk {i + 1}")],
                    artifact_id="result",
                    name="result",
                    append=i > 0,
                    last_chunk=i == n - 1,
                )
            await up.complete()
        else:
            await up.add_artifact([new_text_part(text)], artifact_id="echo", name="echo")
            await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        await up.cancel()


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="sdk-agent",
        description="An echo and counting agent on the Python SDK's server",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="echo", name="echo", description="echoes the text", tags=["echo"]),
            AgentSkill(id="long", name="long", description="counts in steps", tags=["count"]),
        ],
    )
    handler = DefaultRequestHandler(
        agent_executor=Agent(), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    app = Starlette(routes=routes)
    config = uvicorn.Config(app, log_level="warning")
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.02)
        print(f"listening http://127.0.0.1:{port}", flush=True)
        await task

    asyncio.run(run())


if __name__ == "__main__":
    main()
