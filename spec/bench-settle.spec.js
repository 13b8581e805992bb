'use strict';
// bench/settle.js, preloaded into the servers bench/run.js loads: on SIGUSR2 it collects V8's
// garbage and writes a byte to the pipe it was given, so that RSS is read after the collection;
// without that pipe it installs nothing.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const SETTLE = path.join(__dirname, '..', 'bench', 'settle.js');

// A process that fills its heap with some 60 MB of objects, lets them go, says so on stdout and waits.
const GARBAGE = `
let kept = Array.from({ length: 6e5 }, (_, i) => ({ i, text: 'garbage ' + i, list: [i, i + 1, i + 2] }));
kept = null;
process.stdout.write('ready ' + process.listenerCount('SIGUSR2') + '\\n');
setInterval(() => {}, 1000);
`;

const rssKb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

function start(t, { pipe }) {
  const child = spawn(process.execPath, ['--expose-gc', '--require', SETTLE, '-e', GARBAGE], {
    env: { ...process.env, ...(pipe ? { BENCH_SETTLE_FD: '3' } : {}) },
    stdio: pipe ? ['ignore', 'pipe', 'inherit', 'pipe'] : ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGKILL'));
  const ready = new Promise((resolve) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const line = /^ready (\d+)\n/.exec(out);
      if (line) resolve(Number(line[1]));
    });
  });
  return { child, ready };
}

describe('bench/settle.js', () => {
  it('on SIGUSR2 collects the garbage, then writes to its pipe', async (t) => {
    const { child, ready } = start(t, { pipe: true });
    assert.equal(await ready, 1, 'one SIGUSR2 listener');
    const before = rssKb(child.pid);
    const said = new Promise((resolve) => child.stdio[3].once('data', (chunk) => resolve(String(chunk))));
    child.kill('SIGUSR2');
    assert.equal(await said, '.');
    const after = rssKb(child.pid);
    assert.ok(before - after > 10 * 1024, `RSS ${before} KB before the collection, ${after} KB after`);
  });

  it('installs nothing without the pipe it writes to', async (t) => {
    const { ready } = start(t, { pipe: false });
    assert.equal(await ready, 0);
  });
});
