// The official A2A JavaScript SDK's client (@a2a-js/sdk 1.3.0) against an agent: a streaming
// send, a get, a cancel. usage: node sdk_client.mjs SDK_DIR BASE_URL
// Prints "ok <check>" per check; exits non-zero on the first failure.
import assert from 'node:assert/strict';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [sdkDir, base] = process.argv.slice(2);
const sdk = await import(pathToFileURL(path.join(sdkDir, 'node_modules/@a2a-js/sdk/dist/client/index.js')).href);
const { Role, TaskState } = await import(pathToFileURL(path.join(sdkDir, 'node_modules/@a2a-js/sdk/dist/index.js')).href);
const { ClientFactory } = sdk;

const factory = new ClientFactory();
const client = await factory.createFromUrl(base);

function message(text) {
  return {
    message: { messageId: `m-${Math.random()}`, role: Role.ROLE_USER, parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }], contextId: '', taskId: '', extensions: [], referenceTaskIds: [] },
  };
}

const seen = [];
for await (const ev of client.sendMessageStream(message('count 3'))) {
  seen.push(ev);
}
const kinds = seen.map((e) => e.payload?.$case);
console.error(JSON.stringify(kinds));
assert.equal(kinds[0], 'task');
assert.ok(kinds.includes('artifactUpdate'));
const last = seen[seen.length - 1].payload.value;
assert.equal(last.status.state, TaskState.TASK_STATE_COMPLETED);
const taskId = seen[0].payload.value.id;
console.log('ok streaming send');

const task = await client.getTask({ id: taskId });
assert.equal(task.id, taskId);
assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
console.log('ok get');

const stream = client.sendMessageStream(message('count 1000'));
const first = (await stream.next()).value;
const longId = first.payload.value.id;
const canceled = await client.cancelTask({ id: longId });
assert.equal(canceled.status.state, TaskState.TASK_STATE_CANCELED);
let end;
for await (const ev of stream) end = ev;
assert.equal(end.payload.value.status.state, TaskState.TASK_STATE_CANCELED);
console.log('ok cancel');
console.log('all ok');
