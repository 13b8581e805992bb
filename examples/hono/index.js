'use strict';
// A Hono app, exported as it is: funcrun serves its fetch(request, env, ctx) for every path and
// method, and keeps its own probes, limits, timeout, logs, metrics and drain around it.
const { Hono } = require('hono');
const { streamSSE } = require('hono/streaming');
const { HTTPException } = require('hono/http-exception');

const app = new Hono();

// A JSON GET with a path parameter.
app.get('/items/:id', (c) => {
  const id = c.req.param('id');
  if (!/^\d{1,9}$/.test(id)) return c.json({ error: 'id must be a number' }, 400);
  // ctx is funcrun's: its log writes JSON lines carrying the request's reqId.
  c.executionCtx.log.info({ id: Number(id) }, 'item read');
  return c.json({ id: Number(id), name: `item ${id}` });
});

// A JSON POST, echoed. A body past funcrun's body limit (FUNC_BODY_LIMIT) makes
// c.req.json() reject, and funcrun answers 413.
app.post('/echo', async (c) => c.json({ received: await c.req.json() }));

// Server-sent events, each written as it is produced.
app.get('/ticks', (c) => {
  const count = Math.min(Number(c.req.query('count') ?? 3) || 3, 10);
  return streamSSE(c, async (stream) => {
    // The client went away: funcrun cancels the stream, and no more ticks are made.
    stream.onAbort(() => c.executionCtx.log.info('ticks cancelled'));
    for (let i = 1; i <= count; i++) {
      await stream.writeSSE({ event: 'tick', id: String(i), data: JSON.stringify({ tick: i }) });
      if (i < count) await stream.sleep(200);
    }
  });
});

app.get('/boom', () => {
  throw new Error('the database at 10.0.0.7 is down');
});

// Errors go on to funcrun, which logs them (with reqId) and answers its JSON 500, never the
// message; Hono's own handler would answer a plain-text 500 and print to the console. Hono's
// HTTPException (basicAuth's 401, bodyLimit's 413, one a route throws) is an answer for the
// client, not a fault: sent as Hono makes it.
app.onError((err) => {
  if (err instanceof HTTPException) return err.getResponse();
  throw err;
});

module.exports = app;
