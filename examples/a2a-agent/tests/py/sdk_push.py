"""Push notifications with the official A2A Python SDK's client (a2a-sdk 1.3.0).

usage: sdk_push.py BASE_URL
The agent (examples/a2a-agent) runs with `--webhook-allow 127.0.0.1`. A webhook in this script
(127.0.0.1) receives the events of a `greet` task once the SDK set a push config with a
bearer credential and a token; configs pointing at the cloud metadata address or a private
address are refused. Prints "ok <check>" per check; exits non-zero on the first failure.
"""

import asyncio
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from a2a.client import ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    Role,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)

RECEIVED = []


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        RECEIVED.append((self.path, headers, json.loads(body)))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def ok(name):
    print(f"ok {name}", flush=True)


def user(text, task_id=None):
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER, task_id=task_id))


async def main(base):
    hook = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{hook.server_address[1]}/hook"

    client = await create_client(base, ClientConfig(streaming=False))
    assert client._card.capabilities.push_notifications
    ok("card says push notifications")

    task = None
    async for ev in client.send_message(user("greet")):
        task = ev.task
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task
    config = TaskPushNotificationConfig(
        task_id=task.id,
        url=url,
        token="sdk-token",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="sdk-secret"),
    )
    created = await client.create_task_push_notification_config(config)
    assert created.id and created.url == url, created
    got = await client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
    )
    assert got.url == url and got.token == "sdk-token", got
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    assert [c.id for c in listed.configs] == [created.id], listed
    ok("config set, got and listed")

    async for ev in client.send_message(user("Ada", task_id=task.id)):
        pass
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(
        b.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"
        for _, _, b in RECEIVED
    ):
        await asyncio.sleep(0.05)
    assert RECEIVED, "no notification reached the webhook"
    for path, headers, body in RECEIVED:
        assert path == "/hook", path
        assert headers.get("authorization") == "Bearer sdk-secret", headers
        assert headers.get("x-a2a-notification-token") == "sdk-token", headers
        assert len(body) == 1, body
    states = [b["statusUpdate"]["status"]["state"] for _, _, b in RECEIVED if "statusUpdate" in b]
    assert states[-1] == "TASK_STATE_COMPLETED", states
    artifacts = [b for _, _, b in RECEIVED if "artifactUpdate" in b]
    assert artifacts[0]["artifactUpdate"]["artifact"]["parts"][0]["text"] == "Hello, Ada!", artifacts
    ok(f"{len(RECEIVED)} notifications received with the config's credentials")

    for refused in ("http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/hook"):
        try:
            await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, url=refused)
            )
        except Exception as e:  # the SDK raises its A2A error for -32602
            assert "resolves to" in str(e) or "32602" in str(e) or "Invalid" in str(e), e
        else:
            raise AssertionError(f"{refused} was accepted")
    ok("metadata and private webhooks refused")

    await client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=created.id)
    )
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    assert not listed.configs, listed
    ok("config deleted")
    hook.shutdown()
    print("all ok", flush=True)


asyncio.run(main(sys.argv[1]))
