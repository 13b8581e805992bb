// A TypeScript function written against funcrun's exported types; `npm test` type-checks it.
import type { CloudEvent, CloudEventFunction, Context, Function, HealthCheck, HTTPFunction, Invokable, Logger, LogLevel, StructuredReturn } from 'funcrun';

interface Order {
  customerId: number;
  productId: number;
}

export const handle: HTTPFunction = async (context: Context, body?: Order): Promise<StructuredReturn> => {
  const log: Logger = context.log;
  log.info({ method: context.method, path: context.path, query: context.query });
  const version: string = `${context.httpVersionMajor}.${context.httpVersionMinor}`;
  return { statusCode: 201, headers: { 'x-http-version': version }, body: { ordered: body?.productId ?? null } };
};

export const onEvent: CloudEventFunction = (context: Context, data?: Order) => {
  const event: CloudEvent<unknown> | undefined = context.cloudevent;
  return context
    .cloudEventResponse({ received: data?.productId, from: event?.source })
    .type('dev.example.ordered')
    .source('/orders')
    .id('1')
    .version('1.0')
    .response();
};

const liveness: HealthCheck = () => true;
liveness.path = '/alive';

const level: LogLevel = 'debug';
const invokable: Invokable = handle;

const module: Function = {
  handle: invokable,
  routes: { 'POST /events': onEvent },
  init: async () => undefined,
  shutdown: () => undefined,
  liveness,
  readiness: Object.assign(() => Promise.resolve(false), { path: '/ready' }),
  logLevel: level,
  cors: () => ['https://example.com', /\.example\.org$/],
};

export default module;

// Named functions (the Java wire contract).
import type { NamedFunction } from 'funcrun';

const purchase: NamedFunction = Object.assign(
  (input: { customerId: number; productId: number }, context: Context) => {
    context.log.info(`purchase ${input.productId}`);
    return { ok: true };
  },
  { inputSchema: { type: 'object' }, trigger: 'dev.example.purchase' },
);
export const named: Function = { functions: { purchase } };
