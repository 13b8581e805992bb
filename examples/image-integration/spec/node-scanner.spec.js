'use strict';
// Clairify as NODE_SCANNER, tested as StackRox tests it (clairify.go TestNodeScanner): a gRPC Ping
// over TLS on grpcEndpoint, here to a gRPC server (@grpc/grpc-js) on 127.0.0.1 serving the
// scanner's scannerV1.PingService, or to an HTTP/2 peer (node:http2) that writes gRPC's framing by
// hand. A peer that is no scanner, or whose answer is no PongMessage, fails the test; an answer is
// read up to the service's bound, as HTTP answers are.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http2 = require('node:http2');
const https = require('node:https');
const { certificate, scratch, startPeer, startGrpcScanner } = require('./peers');
const { startService } = require('./service');

const tls = certificate(scratch('funcrun-node-scanner-'));
const grpcServer = (options) => startGrpcScanner({ tls, ...options });

/**
 * An HTTP/2 peer over TLS that answers every stream with `respond(stream)`: gRPC's framing written
 * by hand, so that it can announce a message it never holds whole.
 */
async function rawGrpcPeer(respond) {
  const server = http2.createSecureServer({ key: tls.keyPem, cert: tls.certPem });
  const sessions = new Set();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream) => {
    stream.on('error', () => undefined);
    respond(stream);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    hostPort: `127.0.0.1:${server.address().port}`,
    close: () => {
      for (const session of sessions) session.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('clairify as NODE_SCANNER: a gRPC Ping on grpcEndpoint', () => {
  let scanner;
  let stranger;
  let clairifyHttp;
  let service;
  before(async () => {
    scanner = await grpcServer({ ping: true });
    stranger = await grpcServer({ ping: false });
    clairifyHttp = await startPeer((req, res) => {
      res.writeHead(req.url === '/scanner/ping' ? 200 : 404);
      res.end('{}');
    });
    service = await startService({ limits: { ca: [tls.certPem] } });
  });
  after(async () => {
    await service.close();
    await Promise.all([scanner.close(), stranger.close(), clairifyHttp.close()]);
  });

  const clairify = (categories, grpcEndpoint) => ({ name: 'scanner', type: 'clairify', categories, clairify: { endpoint: clairifyHttp.url, grpcEndpoint } });

  it('a scanner answers the Ping over verified TLS: the test passes', async () => {
    const res = await service.test(clairify(['NODE_SCANNER'], scanner.hostPort));
    assert.equal(res.status, 200, res.text);
    assert.equal(scanner.calls.length, 1);
  });

  it('SCANNER and NODE_SCANNER together: the HTTP ping and the gRPC Ping, each once', async () => {
    const http = clairifyHttp.received.length;
    const grpcCalls = scanner.calls.length;
    assert.equal((await service.test(clairify(['SCANNER', 'NODE_SCANNER'], scanner.hostPort))).status, 200);
    assert.equal(clairifyHttp.received.length, http + 1);
    assert.equal(scanner.calls.length, grpcCalls + 1);
  });

  it('a gRPC server that is no scanner fails the test', async () => {
    const res = await service.test(clairify(['NODE_SCANNER'], stranger.hostPort));
    assert.equal(res.status, 400);
    assert.equal(res.json.message, `node scanner: ${stranger.hostPort} is no scanner: it does not serve scannerV1.PingService/Ping`);
  });

  it('an HTTPS server that speaks no gRPC fails the test', async (t) => {
    const server = https.createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => res.end('hello'));
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const res = await service.test(clairify(['NODE_SCANNER'], `127.0.0.1:${server.address().port}`));
    assert.equal(res.status, 400);
    assert.match(res.json.message, /^node scanner: gRPC Ping to 127\.0\.0\.1:\d+ failed \([A-Z_]+\): \S/);
    assert.doesNotMatch(res.json.message, /\n|Resolution note/);
  });

  it('a scanner whose certificate this service does not trust fails the test', async () => {
    const untrusting = await startService();
    try {
      const res = await untrusting.test(clairify(['NODE_SCANNER'], scanner.hostPort));
      assert.equal(res.status, 400);
      assert.match(res.json.message, /^node scanner: gRPC Ping to 127\.0\.0\.1:\d+ failed \(UNAVAILABLE\)/);
    } finally {
      await untrusting.close();
    }
  });

  it('a dual-stack scanner whose first address refuses is reached on the next (localhost: 127.0.0.1, then ::1)', async (t) => {
    const sixOnly = await grpcServer({ ping: true, host: '::1' });
    t.after(() => sixOnly.close());
    const res = await service.test(clairify(['NODE_SCANNER'], `localhost:${sixOnly.port}`));
    assert.equal(res.status, 200, res.text);
    assert.equal(sixOnly.calls.length, 1);
  });

  it('a grpcEndpoint that is no host:port is a 400 before any call', async () => {
    const res = await service.test(clairify(['NODE_SCANNER'], 'ftp://scanner'));
    assert.equal(res.status, 400);
    assert.deepEqual(
      res.json.details[0].fieldViolations.map((v) => v.field),
      ['clairify.grpcEndpoint'],
    );
  });
});

describe("the Ping's answer must be a PongMessage, read as protobuf-go reads it (scannerV1.PongMessage: status = 1, scanner_version = 2)", () => {
  let answer;
  let scanner;
  let service;
  before(async () => {
    scanner = await grpcServer({ ping: true, answer: () => answer });
    service = await startService({ limits: { ca: [tls.certPem] } });
  });
  after(async () => {
    await service.close();
    await scanner.close();
  });

  const body = () => ({
    name: 'scanner',
    type: 'clairify',
    categories: ['NODE_SCANNER'],
    clairify: { endpoint: 'https://127.0.0.1:1', grpcEndpoint: scanner.hostPort },
  });
  const string = (field, text) => Buffer.concat([Buffer.from([(field << 3) | 2, Buffer.byteLength(text)]), Buffer.from(text)]);

  const passing = {
    'status and scanner_version': [Buffer.concat([string(1, 'OK'), string(2, '2.36.0')]), /answered the gRPC Ping \(status OK, version 2\.36\.0\)$/],
    'an empty message (every field left empty)': [Buffer.alloc(0), /answered the gRPC Ping$/],
    'unknown fields of every wire type, a group, and status sent as a varint (skipped as unknown)': [
      Buffer.concat([Buffer.from([0x18, 0x96, 0x01, 0x25, 1, 2, 3, 4, 0x29, 1, 2, 3, 4, 5, 6, 7, 8, 0x2b, 0x30, 0x01, 0x2c, 0x08, 0x07]), string(1, 'OK')]),
      /\(status OK\)$/,
    ],
    'a field given twice: the last wins': [Buffer.concat([string(1, 'first'), string(1, 'last')]), /\(status last\)$/],
  };
  for (const [what, [bytes, note]] of Object.entries(passing)) {
    it(`passes: ${what}`, async () => {
      answer = bytes;
      const res = await service.test(body());
      assert.equal(res.status, 200, res.text);
      const line = service.log.entries().findLast((e) => e.msg === 'image integration test passed');
      assert.match(line.checked[0], note);
    });
  }

  const failing = {
    'an HTML page': [Buffer.from('<html><body>Not a scanner</body></html>'), /an end of group 7 that no group opened$/],
    'a varint cut short': [Buffer.from([0x08, 0x96]), /a varint is cut short$/],
    'a varint past 64 bits': [Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]), /a varint overflows 64 bits$/],
    'a length past the end': [Buffer.from([0x0a, 0x10, 0x4f, 0x4b]), /field 1 is longer than the message$/],
    'wire type 7': [Buffer.from([0x0f]), /field 1 has wire type 7, which does not exist$/],
    'field number 0': [Buffer.from([0x02, 0x00]), /field number 0 is out of range$/],
    'an end of group that no group opened': [Buffer.from([0x0c]), /an end of group 1 that no group opened$/],
    'a group left open': [Buffer.from([0x1b, 0x08, 0x01]), /group 3 is not closed$/],
    'a status that is not UTF-8': [Buffer.from([0x0a, 0x02, 0xc3, 0x28]), /status is not UTF-8$/],
  };
  for (const [what, [bytes, why]] of Object.entries(failing)) {
    it(`fails: ${what}`, async () => {
      answer = bytes;
      const res = await service.test(body());
      assert.equal(res.status, 400, res.text);
      assert.match(res.json.message, new RegExp(`^node scanner: 127\\.0\\.0\\.1:\\d+ answered the gRPC Ping with no PongMessage: `));
      assert.match(res.json.message, why);
    });
  }

  it('fails: an OK status without any message', async (t) => {
    const empty = await rawGrpcPeer((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end();
    });
    t.after(() => empty.close());
    const res = await service.test({ ...body(), clairify: { endpoint: 'https://127.0.0.1:1', grpcEndpoint: empty.hostPort } });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json.message, `node scanner: ${empty.hostPort} answered the gRPC Ping without a message, where a PongMessage was expected`);
  });
});

describe("the Ping's answer is read up to IMAGE_INTEGRATION_MAX_RESPONSE_BYTES, as HTTP answers are", () => {
  it('a message announced larger than the bound is refused at its header, never read: a 400 saying so; RSS stays bounded', async (t) => {
    // Under gRPC's own default (4 MiB), far over the service's 64 KiB.
    const SIZE = 4 * 1024 * 1024 - 1024;
    const chunk = Buffer.alloc(16 * 1024, 0x41);
    let sent = 0;
    const peer = await rawGrpcPeer(async (stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      const prefix = Buffer.alloc(5);
      prefix.writeUInt32BE(SIZE, 1);
      stream.write(prefix);
      // Written as the client takes it (flow control), from one reused buffer: the peer holds little.
      for (let left = SIZE; left > 0 && !stream.destroyed && !stream.closed; left -= chunk.length) {
        const piece = chunk.subarray(0, Math.min(chunk.length, left));
        sent += piece.length;
        if (!stream.write(piece)) await new Promise((resolve) => (stream.once('drain', resolve), stream.once('close', resolve)));
      }
      if (!stream.destroyed) stream.end();
    });
    const service = await startService({ limits: { ca: [tls.certPem], maxBodyBytes: 64 * 1024 } });
    t.after(async () => {
      await service.close();
      await peer.close();
    });
    const body = { name: 's', type: 'clairify', categories: ['NODE_SCANNER'], clairify: { endpoint: 'https://127.0.0.1:1', grpcEndpoint: peer.hostPort } };
    const rss = process.memoryUsage().rss;
    for (let i = 0; i < 8; i++) {
      const res = await service.test(body);
      assert.equal(res.status, 400, res.text);
      assert.equal(
        res.json.message,
        `node scanner: ${peer.hostPort} answered the gRPC Ping with a message larger than 65536 bytes, more than this service reads of an answer`,
      );
    }
    // Eight answers of 4 MiB were announced; what the peer could write before each was refused is a
    // flow-control window or so, not the message (a wide bound).
    assert.ok(sent < (8 * SIZE) / 4, `the peer wrote ${sent} bytes`);
    const grown = process.memoryUsage().rss - rss;
    assert.ok(grown < 64 * 1024 * 1024, `RSS grew by ${grown} bytes`);
  });
});

describe("a failed Ping's status message (grpc-message) is quoted as any peer text: masked, on one line, at most 160 characters", () => {
  it('a message of 15,000 characters over several lines, holding a value the request carries', async (t) => {
    const secret = 'grpc-echoed-secret-77';
    const peer = await rawGrpcPeer((stream) => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () =>
        stream.sendTrailers({ 'grpc-status': '7', 'grpc-message': encodeURIComponent(`denied ${secret}\nsee\r\n${'B'.repeat(15_000)}`) }),
      );
      stream.end();
    });
    const service = await startService({ limits: { ca: [tls.certPem] } });
    t.after(async () => {
      await service.close();
      await peer.close();
    });
    // A mistyped field: its value is masked wherever it shows.
    const res = await service.test({
      name: 's',
      type: 'clairify',
      categories: ['NODE_SCANNER'],
      clairify: { endpoint: 'https://127.0.0.1:1', grpcEndpoint: peer.hostPort, pasword: secret },
    });
    assert.equal(res.status, 400);
    const m = /^node scanner: gRPC Ping to 127\.0\.0\.1:\d+ failed \(PERMISSION_DENIED\): (.*)$/.exec(res.json.message);
    assert.ok(m, res.json.message);
    assert.match(m[1], /^denied \*\*\*\*\*\* see B+\.\.\.$/);
    assert.ok(m[1].length <= 163, `${m[1].length} characters quoted`);
    assert.ok(!service.log.text().includes(secret));
  });
});
