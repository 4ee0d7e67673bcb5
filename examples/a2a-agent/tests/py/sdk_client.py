"""The official A2A Python SDK's client (a2a-sdk 1.3.0, `create_client`) against an agent.

usage: sdk_client.py BASE_URL
Prints "ok <check>" per check passed; exits non-zero (with the traceback) on the first
failure. The agent is examples/a2a-agent (skills echo, count N, greet).
"""

import asyncio
import sys

from a2a.client import ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)


def user(text, task_id=None):
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER, task_id=task_id))


def ok(name):
    print(f"ok {name}", flush=True)


async def first_task(client, text):
    """Sends a streaming message and returns (stream, task id) once the task event came."""
    stream = client.send_message(user(text))
    first = await anext(stream)
    assert first.HasField("task"), first
    return stream, first.task.id


async def main(base):
    streaming = await create_client(base)
    plain = await create_client(base, ClientConfig(streaming=False))

    card = streaming._card  # what create_client read from /.well-known/agent-card.json
    assert card.capabilities.streaming
    assert {s.id for s in card.skills} == {"echo", "count", "greet"}, card.skills
    ok("card")

    # A streaming send: the task, status updates, the artifact, the final state.
    kinds, states, chunks = [], [], []
    async for ev in streaming.send_message(user("count 3")):
        kind = ev.WhichOneof("payload")
        kinds.append(kind)
        if kind == "status_update":
            states.append(ev.status_update.status.state)
        if kind == "artifact_update":
            chunks.append(ev.artifact_update.artifact.parts[0].text)
    assert kinds[0] == "task", kinds
    assert states.count(TaskState.TASK_STATE_WORKING) >= 3, states
    assert states[-1] == TaskState.TASK_STATE_COMPLETED, states
    assert chunks == ["1", "2", "3"], chunks
    ok("streaming send")

    # A non-streaming send returns the task, finished.
    events = [ev async for ev in plain.send_message(user("echo hello"))]
    assert len(events) == 1 and events[0].HasField("task"), events
    task = events[0].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
    assert task.artifacts[0].parts[0].text == "hello", task
    ok("send")

    got = await plain.get_task(GetTaskRequest(id=task.id, history_length=1))
    assert got.id == task.id and len(got.history) == 1, got
    ok("get_task")

    listed = await plain.list_tasks(ListTasksRequest())
    assert task.id in {t.id for t in listed.tasks}, listed
    ok("list_tasks")

    # input-required: a second turn on the same task.
    events = [ev async for ev in plain.send_message(user("greet"))]
    asked = events[0].task
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, asked
    events = [ev async for ev in plain.send_message(user("Ada", task_id=asked.id))]
    done = events[0].task
    assert done.status.state == TaskState.TASK_STATE_COMPLETED, done
    assert done.artifacts[0].parts[0].text == "Hello, Ada!", done
    ok("input required")

    # Subscribe streams a running task.
    stream, running_id = await first_task(streaming, "count 4")
    seen = []
    async for ev in streaming.subscribe(SubscribeToTaskRequest(id=running_id)):
        seen.append(ev)
    assert seen[0].HasField("task"), seen[0]
    last = seen[-1]
    assert last.HasField("status_update") and last.status_update.status.state == TaskState.TASK_STATE_COMPLETED, last
    async for _ in stream:
        pass
    ok("subscribe running")

    # ... and is refused for a finished one.
    try:
        async for _ in streaming.subscribe(SubscribeToTaskRequest(id=running_id)):
            pass
        raise AssertionError("subscribe to a finished task was not refused")
    except UnsupportedOperationError:
        ok("subscribe finished refused")

    # Cancelling a running task: canceled, and the work stops.
    stream, long_id = await first_task(streaming, "count 1000")
    await anext(stream)  # working
    canceled = await plain.cancel_task(CancelTaskRequest(id=long_id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED, canceled
    rest = [ev async for ev in stream]
    assert rest and rest[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED, rest
    before = await plain.get_task(GetTaskRequest(id=long_id))
    await asyncio.sleep(0.5)
    after = await plain.get_task(GetTaskRequest(id=long_id))
    assert after.status.state == TaskState.TASK_STATE_CANCELED, after
    assert after.artifacts == before.artifacts and len(after.history) == len(before.history), "the work went on"
    ok("cancel running")

    try:
        await plain.cancel_task(CancelTaskRequest(id=task.id))
        raise AssertionError("cancelling a finished task was not refused")
    except TaskNotCancelableError:
        ok("cancel finished refused")

    try:
        await plain.get_task(GetTaskRequest(id="no-such-task"))
        raise AssertionError("an unknown task was found")
    except TaskNotFoundError:
        ok("unknown task")

    await streaming.close()
    await plain.close()
    print("all ok", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
