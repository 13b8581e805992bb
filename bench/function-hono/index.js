'use strict';
// The Hono app both Hono rows serve: funcrun serves this folder (a fetch handler: the app is the
// export), and @hono/node-server serves the same app (bench/peers/hono-node-server.js).
const { Hono } = require('hono');

const app = new Hono();
app.get('/items/:id', (c) => c.json({ id: c.req.param('id'), name: `item ${c.req.param('id')}` }));
app.post('/echo', async (c) => c.json(await c.req.json()));

module.exports = app;
