// The integration tests a new project runs against its function served on a free port: the same
// in JavaScript and TypeScript, whose files differ only in their imports (javascript.ts, typescript.ts).

export const HTTP_INTEGRATION_TESTS = `test('POST with JSON answers 200 with the body', async () => {
  const res = await fetch(running.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":"hello"}' });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { received: { message: 'hello' } });
});

test('the readiness probe answers at the path in func.yaml', async () => {
  const res = await fetch(running.url + running.probes.readiness);
  assert.equal(res.status, 200);
});
`;

export function eventIntegrationTests(name: string): string {
  return `test('a binary CloudEvent is answered with one', async () => {
  const res = await fetch(running.url, {
    method: 'POST',
    headers: { 'ce-id': '1', 'ce-source': '/test', 'ce-type': 'dev.example.${name}', 'ce-specversion': '1.0', 'content-type': 'application/json' },
    body: '{"message":"hello"}',
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('ce-type'), 'dev.example.${name}.response');
  assert.deepEqual(await res.json(), { received: { message: 'hello' } });
});

test('a plain request is a 400', async () => {
  const res = await fetch(running.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 400);
});
`;
}
