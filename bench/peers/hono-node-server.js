'use strict';
// Hono's own Node adapter serving bench/function-hono's app: the anchor of the Hono rows.
// node bench/peers/hono-node-server.js, with PORT; @hono/node-server from the peers' folder (BENCH_PEERS).
const path = require('node:path');
const { serve } = require(path.join(process.env.BENCH_PEERS, 'node_modules', '@hono', 'node-server'));
const app = require('../function-hono');

serve({ fetch: app.fetch, port: Number(process.env.PORT) });
