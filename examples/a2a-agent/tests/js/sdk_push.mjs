// Push notifications with the official A2A JavaScript SDK's client (@a2a-js/sdk 1.3.0): a
// webhook here (127.0.0.1) gets a `greet` task's events, with the config's bearer credential
// and token, once the SDK set the config; a config at the cloud metadata address is refused.
// usage: node sdk_push.mjs SDK_DIR BASE_URL (the agent runs with --webhook-allow 127.0.0.1)
// Prints "ok <check>" per check; exits non-zero on the first failure.
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [sdkDir, base] = process.argv.slice(2);
const sdk = await import(pathToFileURL(path.join(sdkDir, 'node_modules/@a2a-js/sdk/dist/client/index.js')).href);
const { Role, TaskState } = await import(pathToFileURL(path.join(sdkDir, 'node_modules/@a2a-js/sdk/dist/index.js')).href);

const received = [];
const hook = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    received.push({ url: req.url, headers: req.headers, body: JSON.parse(body) });
    res.writeHead(200, { 'content-length': 0 });
    res.end();
  });
});
await new Promise((ok) => hook.listen(0, '127.0.0.1', ok));
const url = `http://127.0.0.1:${hook.address().port}/js-hook`;

const client = await new sdk.ClientFactory().createFromUrl(base);

function message(text, taskId = '') {
  return {
    message: { messageId: `m-${Math.random()}`, role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }], contextId: '', taskId, extensions: [], referenceTaskIds: [] },
  };
}

let first;
for await (const ev of client.sendMessageStream(message('greet'))) first ??= ev;
const taskId = first.payload.value.id;
const config = { tenant: '', id: 'js-1', taskId, url, token: 'js-token', authentication: { scheme: 'Bearer', credentials: 'js-secret' } };
const created = await client.createTaskPushNotificationConfig(config);
assert.equal(created.id, 'js-1');
assert.equal(created.url, url);
console.log('ok config set');

for await (const _ of client.sendMessageStream(message('Grace', taskId)));
const deadline = Date.now() + 10000;
const completed = () => received.some((r) => r.body.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED');
while (!completed() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
assert.ok(completed(), JSON.stringify(received));
for (const r of received) {
  assert.equal(r.url, '/js-hook');
  assert.equal(r.headers.authorization, 'Bearer js-secret');
  assert.equal(r.headers['x-a2a-notification-token'], 'js-token');
}
console.log(`ok ${received.length} notifications with the config's credentials`);

await assert.rejects(
  client.createTaskPushNotificationConfig({ ...config, id: 'js-2', url: 'http://169.254.169.254/latest/meta-data/' }),
);
console.log('ok metadata webhook refused');
hook.close();
console.log('all ok');
process.exit(0);
