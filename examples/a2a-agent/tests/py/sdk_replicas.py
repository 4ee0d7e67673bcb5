"""The official A2A Python SDK's client (a2a-sdk 1.3.0) against three replicas of the example
agent behind nginx round-robin (no affinity), every call through nginx.

usage: sdk_replicas.py NGINX_URL
Prints "ok <check>" per check passed; exits non-zero (with the traceback) on the first
failure.

The agents' cards name their own addresses; a deployment behind a balancer publishes the
balancer's, so the card read through nginx is given nginx's URL before the clients are made.

The SDK sends any header with a call (`ClientCallContext.service_parameters`), so the
resumption's `Last-Event-ID` goes through the SDK; it does not expose the SSE event ids it
receives, so the last id had is counted: the server's ids are the events' ids in the task's
log, 1 for its first event and one more for each next, and the stream below is the task's
first turn from its first event.
"""

import asyncio
import sys

from a2a.client import ClientCallContext, ClientConfig, create_client
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

N = 25  # count 25: the task, "counting", 25 x (a step, a chunk), completed: 53 events
CUT_AFTER = 7


def user(text):
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))


def ok(name):
    print(f"ok {name}", flush=True)


def describe(ev):
    kind = ev.WhichOneof("payload")
    if kind == "task":
        return ("task", ev.task.status.state)
    if kind == "status_update":
        s = ev.status_update.status
        text = s.message.parts[0].text if s.message.parts else ""
        return ("status", s.state, text)
    if kind == "artifact_update":
        return ("chunk", ev.artifact_update.artifact.parts[0].text)
    return (kind,)


def expected_events():
    events = [("task", TaskState.TASK_STATE_SUBMITTED),
              ("status", TaskState.TASK_STATE_WORKING, f"counting to {N}")]
    for i in range(1, N + 1):
        events.append(("status", TaskState.TASK_STATE_WORKING, f"step {i}/{N}"))
        events.append(("chunk", str(i)))
    events.append(("status", TaskState.TASK_STATE_COMPLETED, f"counted to {N}"))
    return events


async def main(base):
    probe = await create_client(base)
    card = probe._card
    await probe.close()
    for interface in card.supported_interfaces:
        interface.url = base
    streaming = await create_client(card)
    plain = await create_client(card, ClientConfig(streaming=False))

    # A long task streamed, its connection cut after CUT_AFTER events.
    stream = streaming.send_message(user(f"count {N}"))
    head = [await anext(stream) for _ in range(CUT_AFTER)]
    await stream.aclose()
    task_id = head[0].task.id
    head = [describe(ev) for ev in head]

    # Resubscribed with Last-Event-ID three times in a row: round-robin sends them to the
    # three replicas in turn, so at least two land on a replica not running the task. The
    # first follows the task live, the others come once it is over.
    want = expected_events()
    assert len(want) == 2 * N + 3
    after = ClientCallContext(service_parameters={"Last-Event-ID": str(CUT_AFTER)})
    for attempt in range(3):
        rest = [
            describe(ev)
            async for ev in streaming.subscribe(SubscribeToTaskRequest(id=task_id), context=after)
        ]
        assert head + rest == want, (attempt, head, rest)
    ok("resumed on each replica: every event once, in order")

    # GetTask and ListTasks from each replica in turn.
    for _ in range(3):
        got = await plain.get_task(GetTaskRequest(id=task_id))
        assert got.status.state == TaskState.TASK_STATE_COMPLETED, got
        assert [p.text for p in got.artifacts[0].parts] == [str(i) for i in range(1, N + 1)], got
        listed = await plain.list_tasks(ListTasksRequest())
        assert task_id in {t.id for t in listed.tasks}, listed
    ok("get and list on each replica")

    # Cancel through nginx: the send and the cancel are consecutive requests, so round-robin
    # gives the cancel to another replica than the one running the task. Three times over.
    for _ in range(3):
        stream = streaming.send_message(user("count 1000"))
        first = await anext(stream)
        long_id = first.task.id
        await anext(stream)  # working
        canceled = await plain.cancel_task(CancelTaskRequest(id=long_id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED, canceled
        rest = [ev async for ev in stream]
        assert rest and rest[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED, rest
        before = await plain.get_task(GetTaskRequest(id=long_id))
        await asyncio.sleep(0.5)
        after_wait = await plain.get_task(GetTaskRequest(id=long_id))
        assert after_wait.status.state == TaskState.TASK_STATE_CANCELED, after_wait
        assert after_wait.artifacts == before.artifacts, "the work went on"
    ok("cancel reaches the work")

    await streaming.close()
    await plain.close()
    print("all ok", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
