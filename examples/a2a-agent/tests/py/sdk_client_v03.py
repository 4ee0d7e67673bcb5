"""The official A2A Python SDK's 0.3 client transport against the agent's 0.3 compatibility
mode (`a2a-agent --compat-v03`): the SDK picks its 0.3 JSON-RPC transport for an interface
whose protocolVersion is 0.3, and speaks `message/send`, `message/stream`, `tasks/get`,
`tasks/cancel` in the 0.3 shapes.

usage: sdk_client_v03.py BASE_URL
"""

import asyncio
import sys

from a2a.client import ClientConfig, create_client
from a2a.client.card_resolver import A2ACardResolver
from a2a.helpers import new_text_message
import httpx
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Role,
    SendMessageRequest,
    TaskState,
)


def user(text):
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))


async def main(base):
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, base).get_agent_card()
    v03 = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
    assert v03, card.supported_interfaces
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(v03)

    streaming = await create_client(card)
    plain = await create_client(card, ClientConfig(streaming=False))
    assert type(streaming._transport).__name__ == "CompatJsonRpcTransport", type(streaming._transport)

    kinds, states, chunks = [], [], []
    async for ev in streaming.send_message(user("count 3")):
        kind = ev.WhichOneof("payload")
        kinds.append(kind)
        if kind == "status_update":
            states.append(ev.status_update.status.state)
        if kind == "artifact_update":
            chunks.append(ev.artifact_update.artifact.parts[0].text)
    assert kinds[0] == "task", kinds
    assert states[-1] == TaskState.TASK_STATE_COMPLETED, states
    assert chunks == ["1", "2", "3"], chunks
    print("ok 0.3 message/stream", flush=True)

    events = [ev async for ev in plain.send_message(user("echo old"))]
    task = events[0].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
    assert task.artifacts[0].parts[0].text == "old", task
    print("ok 0.3 message/send", flush=True)

    got = await plain.get_task(GetTaskRequest(id=task.id))
    assert got.id == task.id and got.status.state == TaskState.TASK_STATE_COMPLETED, got
    print("ok 0.3 tasks/get", flush=True)

    stream = streaming.send_message(user("count 1000"))
    first = await anext(stream)
    canceled = await plain.cancel_task(CancelTaskRequest(id=first.task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED, canceled
    async for _ in stream:
        pass
    print("ok 0.3 tasks/cancel", flush=True)
    print("all ok", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
