'use strict';
// Preloaded into each server bench/run.js loads (node --expose-gc --require bench/settle.js), so
// that its RSS after load can be read with V8's garbage collected. On SIGUSR2 it runs V8's
// last-resort collection, the one a memory pressure notification runs: every generation
// collected, the young generation shrunk back and the pages V8 keeps for reuse released; then
// it writes one byte to the pipe bench/run.js gave it as file descriptor BENCH_SETTLE_FD. It does
// nothing else: the server is the same program with or without it.
const fs = require('node:fs');

const fd = Number(process.env.BENCH_SETTLE_FD);
if (Number.isInteger(fd) && fd > 2 && typeof globalThis.gc === 'function') {
  process.on('SIGUSR2', () => {
    globalThis.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    fs.writeSync(fd, '.');
  });
}
