'use strict';
// A plain { fetch } object, as Cloudflare Workers, Bun and Deno take it: a WHATWG Request in, a
// Response out. funcrun calls it for every path and method but its own probes and /metrics.

/**
 * @param {Request} request absolute url, method, headers; the body unread, within funcrun's limit
 * @param {Record<string, string | undefined>} env the process environment
 * @param {import('funcrun').FetchContext} ctx waitUntil, log (its lines carry reqId), reqId
 * @returns {Promise<Response>}
 */
async function fetch(request, env, ctx) {
  const url = new URL(request.url);
  const item = /^\/items\/(\d{1,9})$/.exec(url.pathname);
  if (request.method === 'GET' && item) {
    ctx.log.info({ id: Number(item[1]) }, 'item read');
    return Response.json({ id: Number(item[1]), name: `item ${item[1]}` });
  }
  if (request.method === 'POST' && url.pathname === '/echo') {
    // Past funcrun's body limit (FUNC_BODY_LIMIT), request.json() rejects and
    // funcrun answers 413.
    return Response.json({ received: await request.json() });
  }
  if (request.method === 'GET' && url.pathname === '/ticks') return ticks(ctx);
  if (url.pathname === '/boom') throw new Error('the database at 10.0.0.7 is down');
  return Response.json({ error: 'not found' }, { status: 404 });
}

/** Three server-sent events, 200 ms apart, each written as it is produced. */
function ticks(ctx) {
  const encoder = new TextEncoder();
  let tick = 0;
  let cancelled = false;
  const body = new ReadableStream({
    async pull(controller) {
      if (tick > 0) await new Promise((resolve) => setTimeout(resolve, 200));
      if (cancelled) return;
      tick++;
      controller.enqueue(encoder.encode(`event: tick\nid: ${tick}\ndata: {"tick":${tick}}\n\n`));
      if (tick === 3) controller.close();
    },
    // The client went away: funcrun cancels the stream, and no more ticks are made.
    cancel() {
      cancelled = true;
      ctx.log.info('ticks cancelled');
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
}

module.exports = { fetch };
