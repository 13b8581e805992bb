'use strict';
// Quoting a peer (lib/excerpt.ts): what a peer sent is shown masked, on one line, at most 160
// characters, from a window of its text; a secret whose start, in any escape, runs to the window's
// end is masked to it; and the work per answer is the window's, not the answer's: 32 tests against
// a peer that echoes 64 KiB of escapes leave the service live.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { Redactor } = require('../build/lib/secrets.js');
const { quote } = require('../build/lib/excerpt.js');
const { runServing, request, livenessWhile } = require('./helpers');

const FOLDER = path.join(__dirname, '..');

/** The CPU time process `pid` has used, in ms (Linux: utime + stime, in clock ticks of 10 ms). */
function cpuTime(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
const SECRET = 'Sekr3t-Passw0rd-9';
const percent = (text) => [...Buffer.from(text)].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');

describe('quote: masked, on one line, at most 160 characters', () => {
  it('a text of 64 KiB over many lines is one line of 160 characters and "...", the secret in it masked', () => {
    const text = `denied ${SECRET}\nline two\r\n${'A'.repeat(64 * 1024)}`;
    assert.equal(quote([text], new Redactor([SECRET])), `denied ****** line two ${'A'.repeat(160 - 'denied ****** line two '.length)}...`);
  });

  it('a short text is quoted whole, without "..."', () => {
    assert.equal(quote(['  not\tauthorized  '], new Redactor([SECRET])), 'not authorized');
  });

  it('a code and a message are joined with ": "', () => {
    assert.equal(quote(['DENIED', ': ', `no ${SECRET} here`], new Redactor([SECRET])), 'DENIED: no ****** here');
  });
});

describe("a secret whose start runs to the end of a cut text is masked to it, in every escape (Redactor.redact's cut)", () => {
  const redactor = new Redactor([SECRET]);
  // Each text ends in the middle of an escape of the secret: what is there decodes to its start.
  const cases = {
    'percent-encoding cut after its %': `denied: ${percent(SECRET).slice(0, 13)}`,
    'percent-encoding cut after one hex digit': `denied: ${percent(SECRET).slice(0, 14)}`,
    'a JSON \\u escape cut after two digits': `denied: ${[...SECRET]
      .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .join('')
      .slice(0, 22)}`,
    'a lone backslash of a JSON escape': `denied: ${[...SECRET]
      .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .join('')
      .slice(0, 25)}`,
    'an HTML reference without its ;': `denied: ${[...SECRET]
      .map((c) => `&#${c.charCodeAt(0)};`)
      .join('')
      .slice(0, 21)}`,
    'a \\x escape cut after its x': `denied: ${[...Buffer.from(SECRET)]
      .map((b) => `\\x${b.toString(16).padStart(2, '0')}`)
      .join('')
      .slice(0, 14)}`,
  };
  for (const [what, text] of Object.entries(cases)) {
    it(what, () => {
      assert.equal(redactor.redact(text, { cut: true }), 'denied: ******');
      // The same text, not cut, is shown as it is: nothing there is the secret whole.
      assert.equal(redactor.redact(text), text);
    });
  }

  it('a short secret (under 4 characters) cut where it stands alone; inside a word it is that word', () => {
    const short = new Redactor(['pwd']);
    assert.equal(short.redact('denied: pw', { cut: true }), 'denied: ******');
    assert.equal(short.redact('denied: upw', { cut: true }), 'denied: upw');
    assert.equal(short.redact('denied: pw'), 'denied: pw');
  });

  it('quote: a percent-encoded secret across the window of 1,024 characters is masked, never shown in part', () => {
    const text = `${' '.repeat(1000)}denied: ${percent(SECRET)} and more`;
    assert.equal(quote([text], new Redactor([SECRET])), 'denied: ******...');
  });

  it('quote: hex spaced by colons, dashes or commas cut after its first byte (53:, 53:6, 53-6, 0x53,0x6) is masked; other text cut so is left as it is', () => {
    const redactor = new Redactor([SECRET]);
    const hex = (separator, prefix = '') => [...Buffer.from(SECRET)].map((b) => `${prefix}${b.toString(16).padStart(2, '0')}`).join(separator);
    const forms = { '53:': hex(':'), '53:6': hex(':'), '53-6': hex('-'), '0x53,': hex(',', '0x'), '0x53,0x6': hex(',', '0x') };
    for (const [end, form] of Object.entries(forms)) {
      assert.ok(form.startsWith(end));
      // The window of 1,024 characters ends after `end`: the first byte and what the cut left of the next.
      const text = `${' '.repeat(1024 - 'denied: '.length - end.length)}denied: ${form}`;
      assert.equal(quote([text], redactor), 'denied: ******...', end);
    }
    for (const end of ['at 10:', 'at 10:3', 'id 0x41,0x'])
      assert.equal(quote([`${' '.repeat(1024 - end.length)}${end}${'0'.repeat(40)}`], redactor), `${end}...`);
  });
});

describe("a secret split over an error's fields is masked whole, in every escape of it (the pieces are joined, then decoded)", () => {
  const redactor = new Redactor([SECRET]);
  const bytes = [...Buffer.from(SECRET)];
  // Each encoding as a list of units, so a split never falls inside one.
  const encodings = {
    'percent-encoding': bytes.map((b) => `%${b.toString(16).padStart(2, '0')}`),
    'HTML references': [...SECRET].map((c) => `&#${c.charCodeAt(0)};`),
    '\\x escapes': bytes.map((b) => `\\x${b.toString(16).padStart(2, '0')}`),
    'JSON \\u escapes, as literal text': [...SECRET].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
    'hex spaced by colons': bytes.map((b, i) => `${b.toString(16).padStart(2, '0')}${i < bytes.length - 1 ? ':' : ''}`),
  };
  for (const [what, units] of Object.entries(encodings)) {
    it(what, () => {
      const first = units.slice(0, 8).join('');
      const rest = units.slice(8).join('');
      assert.equal(quote([first, ': ', rest], redactor), '******', 'a code and its message');
      assert.equal(quote(['DENIED', ': ', first, '; ', 'DENIED', ': ', rest], redactor), 'DENIED: ******', 'the messages of two errors');
    });
  }
});

describe('the work per answer is the excerpt window, not the answer', () => {
  const credentials = {
    'an ordinary password': { username: 'robot', password: 'An0rdinary-Passw0rd' },
    'every credential at its bound (a 16 KiB password, a 1 KiB user name)': {
      username: 'u'.repeat(1024),
      password: require('node:crypto').randomBytes(12288).toString('base64'),
    },
  };
  for (const [what, { username, password }] of Object.entries(credentials)) {
    it(
      `${what}: 32 tests at once against a peer echoing 64 KiB of escapes and the Basic credentials: each a rejection (none a timeout), in under 2.5 s of CPU time, every liveness probe meanwhile within 1 s`,
      { timeout: 60_000 },
      async (t) => {
        // Headers of up to 64 KiB: the Basic credentials of the largest password are 23 KiB.
        const server = http.createServer({ maxHeaderSize: 65536 }, (req, res) => {
          const unit = `%41\\u0041&#65;${req.headers.authorization ?? ''}`;
          res.writeHead(401, { 'content-type': 'text/plain' });
          res.end(unit.repeat(Math.ceil(65536 / unit.length)).slice(0, 65536));
        });
        await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
        const echo = { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
        const proc = await runServing([FOLDER], {
          env: { IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS: 'true', IMAGE_INTEGRATION_CONNECT_TIMEOUT: '1s', IMAGE_INTEGRATION_RESPONSE_TIMEOUT: '2s' },
        });
        t.after(async () => {
          proc.child.kill();
          await proc.exited;
          await echo.close();
        });
        const body = JSON.stringify({ name: 'x', type: 'docker', categories: ['REGISTRY'], docker: { endpoint: echo.url, username, password } });
        const test = () => request(`${proc.url}/v1/imageintegrations/test`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        assert.equal((await test()).status, 400); // warmed up: its code compiled
        const cpu = cpuTime(proc.child.pid);
        const { probes, value: answers } = await livenessWhile(proc.url, Promise.all(Array.from({ length: 32 }, test)));
        for (const res of answers) {
          assert.equal(res.status, 400, res.text);
          assert.match(res.json.message, /^authentication: 127\.0\.0\.1:\d+ rejected the credentials \(HTTP 401\): %41\\u0041&#65;Basic \*\*\*\*\*\*/);
        }
        assert.ok(Math.max(...probes) < 1000, `liveness took ${probes.join(', ')} ms`);
        // A wide bound: 64 KiB redacted through two dozen views, 32 times over, took 3.5 s (4.7 s with the
        // largest credentials, whose forms were rebuilt with each one added); now about 0.5 s (1.2 s).
        const used = cpuTime(proc.child.pid) - cpu;
        assert.ok(used < 2500, `the 32 tests took ${used} ms of CPU time`);
      },
    );
  }
});
