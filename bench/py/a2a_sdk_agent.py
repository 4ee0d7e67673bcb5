"""The reference agent of the A2A benchmark (`cargo bench -p rpcwire-bench --bench a2a`): the
logic of examples/a2a-agent on the official Python SDK's own server (a2a-sdk 1.3.0, its
`DefaultRequestHandler` and JSON-RPC routes in a Starlette app under uvicorn), with the SDK's
task stores.

Same messages, same events, in the same order, as `a2a-agent`:

- `echo TEXT`: one artifact `echo` with TEXT, then completed (no status message).
- `count N` (N at most 1 000, 5 when missing): working "counting to N"; then every STEP_MS a
  working status "step I/N" and an artifact chunk `count` with the text I (append from the
  second, last chunk on the N-th); then completed with "counted to N".
- `greet`: input-required "What is your name?"; the next message on the task gets an
  artifact `greeting` "Hello, NAME!" and completes.
- anything else: rejected, "unknown skill: start with echo, count or greet".

usage: a2a_sdk_agent.py [--http 127.0.0.1:PORT] [--step-ms MS] [--store STORE]
                        [--sqlite-journal wal|default]

STORE is `memory` (the SDK's `InMemoryTaskStore`, the default), `sqlite:PATH` (its
`DatabaseTaskStore` on SQLAlchemy with aiosqlite, the file created when missing) or
`postgres:URL` (the same store with asyncpg, e.g.
`postgres:postgres://postgres@127.0.0.1:5432/postgres`); with a database the push configs are
kept there too (`DatabasePushNotificationConfigStore`), as `a2a-agent` does. The SQLite file
is opened as `a2a-agent` opens its own (WAL, synchronous NORMAL) unless `--sqlite-journal
default` keeps SQLite's defaults. Otherwise the stores are as the SDK makes them (the engine's
default pool). It prints
`listening http://127.0.0.1:PORT` once it serves. Needs `.ci/install/a2a-interop.sh`.
"""

import argparse
import asyncio
import socket

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import new_task_from_user_message, new_text_part
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
    TaskState,
)


def parse_count(words: list[str]) -> int:
    """N of `count N` as `a2a-agent` reads it: a whole number, 5 when missing or not one."""
    if len(words) > 1:
        w = words[1].removeprefix("+")
        if w.isascii() and w.isdigit():
            return min(int(w), 1000)
    return 5


class Agent(AgentExecutor):
    """`a2a-agent`'s skills on the SDK's executor interface."""

    def __init__(self, step: float) -> None:
        self.step = step

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        continuation = (
            task is not None
            and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        )
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)

        def say(words: str):
            return up.new_agent_message([new_text_part(words)])

        if continuation:
            await up.add_artifact(
                [new_text_part(f"Hello, {text.strip()}!")],
                artifact_id="greeting",
                name="greeting",
            )
            await up.complete()
            return
        words = text.split()
        skill = words[0] if words else ""
        if skill == "count":
            n = parse_count(words)
            await up.update_status(TaskState.TASK_STATE_WORKING, message=say(f"counting to {n}"))
            for i in range(1, n + 1):
                await asyncio.sleep(self.step)
                await up.update_status(TaskState.TASK_STATE_WORKING, message=say(f"step {i}/{n}"))
                await up.add_artifact(
                    [new_text_part(f"{i}")],
                    artifact_id="count",
                    name="count",
                    append=i > 1,
                    last_chunk=i == n,
                )
            await up.complete(message=say(f"counted to {n}"))
        elif skill == "greet":
            await up.requires_input(message=say("What is your name?"))
        elif skill == "echo":
            rest = text.lstrip().removeprefix("echo").strip()
            await up.add_artifact([new_text_part(rest)], artifact_id="echo", name="echo")
            await up.complete()
        else:
            await up.reject(message=say("unknown skill: start with echo, count or greet"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        await up.cancel()


async def open_stores(store: str, sqlite_journal: str):
    """The task store and push config store (None: the SDK's default) that STORE names."""
    if store == "memory":
        return InMemoryTaskStore(), None
    kind, _, where = store.partition(":")
    if kind == "sqlite" and where:
        url = f"sqlite+aiosqlite:///{where}"
    elif kind == "postgres" and where:
        url = "postgresql+asyncpg://" + where.split("://", 1)[-1]
    else:
        raise SystemExit(f"{store!r}: expected memory, sqlite:PATH or postgres:URL")
    # Imported here: the in-memory store needs neither SQLAlchemy nor a driver.
    from sqlalchemy.ext.asyncio import create_async_engine

    from a2a.server.tasks import DatabasePushNotificationConfigStore, DatabaseTaskStore

    engine = create_async_engine(url)
    if kind == "sqlite" and sqlite_journal == "wal":
        # The file as a2a-agent's SQLite store opens it (WAL, synchronous NORMAL), so that
        # the two stores are compared with the same durability, not the same defaults.
        from sqlalchemy import event

        @event.listens_for(engine.sync_engine, "connect")
        def wal(dbapi_connection, _record) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.close()

    tasks = DatabaseTaskStore(engine)
    configs = DatabasePushNotificationConfigStore(engine)
    await tasks.initialize()
    await configs.initialize()
    return tasks, configs


def agent_card(url: str) -> AgentCard:
    def skill(id_: str, description: str, tags: list[str], example: str) -> AgentSkill:
        return AgentSkill(
            id=id_, name=id_, description=description, tags=tags, examples=[example]
        )

    return AgentCard(
        name="a2a-sdk-reference-agent",
        description="Echoes, counts with streamed progress, greets after asking a name",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            skill("echo", "Answers with the text it was sent", ["echo"], "echo hello"),
            skill(
                "count",
                "Counts to N, streaming each step; stops when cancelled",
                ["count", "long"],
                "count 5",
            ),
            skill("greet", "Asks for a name, then greets it", ["greet", "input"], "greet"),
        ],
    )


async def serve(args: argparse.Namespace) -> None:
    host, _, port = args.http.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, int(port)))
    host, port = sock.getsockname()[:2]
    card = agent_card(f"http://{host}:{port}/")
    tasks, configs = await open_stores(args.store, args.sqlite_journal)
    handler = DefaultRequestHandler(
        agent_executor=Agent(args.step_ms / 1000),
        task_store=tasks,
        agent_card=card,
        push_config_store=configs,
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=routes), log_level="warning"))
    running = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if running.done():
            await running
            return
        await asyncio.sleep(0.02)
    print(f"listening http://{host}:{port}", flush=True)
    await running


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http", default="127.0.0.1:0", help="address to serve on")
    parser.add_argument("--step-ms", type=float, default=100, help="time between two steps")
    parser.add_argument("--store", default="memory", help="memory, sqlite:PATH or postgres:URL")
    parser.add_argument(
        "--sqlite-journal",
        choices=["wal", "default"],
        default="wal",
        help="wal: WAL and synchronous NORMAL, as a2a-agent; default: SQLite's own (rollback "
        "journal, synchronous FULL)",
    )
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
