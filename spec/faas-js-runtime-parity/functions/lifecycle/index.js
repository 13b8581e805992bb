'use strict';
// A module with init, shutdown, liveness and readiness.
const fs = require('node:fs');

let state = 'new';

function init() {
  state = 'initialised';
}

async function shutdown() {
  // Where the harness looks for proof that shutdown() ran on SIGTERM.
  fs.appendFileSync(process.env.PARITY_SHUTDOWN_FILE, `shutdown after ${state}\n`);
}

function liveness() {
  return `alive: ${state}`;
}

async function readiness() {
  return `ready: ${state}`;
}

const handle = async () => ({ state });

module.exports = { init, shutdown, liveness, readiness, handle };
