// A fetch handler typed with funcrun's FetchHandler, FetchEnv and FetchContext, and a handle
// function returning web answers; fetch handlers throwing retry() and drop(), with events
// declared beside them: all of it must compile.
import type { FetchContext, FetchEnv, FetchHandler, Function, HTTPFunction, Outcome } from 'funcrun';
import { defineEvents, drop, readEvent, readEvents, retry } from 'funcrun';
import { Hono } from 'hono';

export const handler: FetchHandler = {
  async fetch(request: Request, env: FetchEnv, ctx: FetchContext): Promise<Response> {
    const url = new URL(request.url);
    ctx.waitUntil(Promise.resolve());
    ctx.passThroughOnException();
    ctx.log.info({ reqId: ctx.reqId, path: url.pathname, api: env.API_URL }, 'hello');
    return Response.json({ method: request.method, body: await request.text() });
  },
};

// Lifecycle hooks beside fetch.
export const module: Function = { fetch: handler.fetch, init: () => undefined, readiness: () => true };

// A handle function may return a Response or a web ReadableStream.
export const web: HTTPFunction = () => new Response('hi', { status: 201 });
export const stream: HTTPFunction = () => new ReadableStream<Uint8Array>();

// A Hono app is a FetchHandler, and funcrun's ctx is the ExecutionContext it takes.
export const app: FetchHandler = new Hono();
export const called = (request: Request, ctx: FetchContext): Response | Promise<Response> => new Hono().fetch(request, {}, ctx);

// A fetch handler throws retry() or drop() (the event's outcome), as a Hono route does; its fetch
// still returns a Response for whoever calls it.
export const outcomes: FetchHandler = {
  async fetch(request: Request): Promise<Response> {
    const event = await readEvent(request);
    if (event.type === 'order.later') throw retry('the stock service is down', { after: 30 });
    if (event.type === 'order.unknown') throw drop('no such order');
    return Response.json({ id: event.id });
  },
};
export const outcome: Outcome = retry('later');
export const answered = async (): Promise<unknown> => (await outcomes.fetch(new Request('http://localhost/'), {}, {} as FetchContext)).json();
const withOutcomes = new Hono();
withOutcomes.post('/', async (c) => {
  const events = await readEvents(c.req.raw);
  if (events.length === 0) throw drop('an empty batch');
  throw retry('not yet', { status: 429 });
});
export const honoWithOutcomes: FetchHandler = withOutcomes;
export const declared: Function = { fetch: outcomes.fetch, events: defineEvents({ types: { 'order.created': { type: 'object' } } }) };
