// What a request's steps share (request.ts): the Pipeline, decided once when the server is made,
// and the request's Exchange, what is known of it on arrival and what the steps cannot hand each
// other as values.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Uploads } from './uploads/uploads';
import type { UploadFolder } from './uploads/upload-folder';
import { scanTarget, type ScannedTarget } from './http/target';
import type { Behaviour } from './start/compat';
import type { ResponseDefaults } from './cloudevents/cloudevent';
import type { Context, Invocation } from './context';
import type { OriginCheck } from './http/cors';
import type { Logger, RootLogger } from './log/log';
import type { Trace } from './telemetry/trace';
import type { Tracing } from './telemetry/otel';
import type { Metrics } from './telemetry/metrics';
import type { Runtime } from './lifecycle/lifecycle';
import type { ProbeOptions } from './lifecycle/probes';
import type { Invoke } from './invocation';
import { now } from './lifecycle/deadline';
import type { Contracts } from './events/contracts';
import type { Idempotency, Settle } from './events/idempotency/idempotency';
import type * as ServeFetch from './fetch/serve';
import type { RouteTable } from './routing/routes';
import type { Function as FunctionModule } from './types';
import type { Settings } from './http-server';

/** What every request's steps share: decided once, when the server is made. */
export interface Pipeline {
  readonly settings: Settings;
  readonly behaviour: Behaviour;
  readonly module: FunctionModule;
  readonly routes: RouteTable;
  readonly log: RootLogger;
  readonly runtime: Runtime;
  readonly metrics: Metrics | undefined;
  readonly cors: OriginCheck | undefined;
  /** faas-js-runtime's blanket CORS, in compatibility mode without the module's own. */
  readonly corsForEveryOrigin: boolean;
  readonly eventData: { asFaasJsRuntime: boolean };
  readonly defaults: ResponseDefaults;
  readonly tracing: Tracing | undefined;
  readonly invoke: Invoke;
  /** The module's event contracts, when it declares types. */
  readonly contracts: Contracts | undefined;
  /** With idempotency on: duplicates answered from the store. */
  readonly idempotency: Idempotency | undefined;
  readonly probeOptions: ProbeOptions;
  /** The level of the line logged per answered request, or undefined when it would not be written. */
  readonly accessLevel: 'info' | 'debug' | undefined;
  /** Where temporary files of uploads go. */
  /** Made by the first multipart body, when the uploads part loads (scripts/bundle.js ON_DEMAND). */
  readonly uploadFolder: () => UploadFolder;
  /** Steps 6 to 9 for a fetch handler (fetch/serve.ts): loaded when the server is made, for a module with `fetch` only. */
  readonly serveFetch: typeof ServeFetch.serveFetch | undefined;
  /** A module with fetch and no authorize(): its handler's requests are served by fetchAtOnce(). */
  readonly fetchAtOnce: boolean;
  /** The last reqId given out. */
  requests: number;
}

/**
 * One request: what is known of it on arrival, and what cannot be a value the steps hand on,
 * because a failure's answer or finish() needs it after a throw (which returns no value). Each
 * field is set on arrival, or written by the one step named beside it; all are set in the
 * constructor, so every request's shares one shape.
 */
export class Exchange {
  /** The request target: its path as sent, and the query string after `?`. */
  readonly target: ScannedTarget;
  /** The request's logger; the single invocation's own trace (step 8) replaces it. */
  log: Logger;
  /** When the request's timeout ends (`now()` time): the access check, the body and the function count against it. */
  readonly deadline: number;
  /** Step 6: when the body began to be read, for the metrics; -1 without them, and until then. */
  began = -1;
  /** Step 6: a multipart body's files, set before the body is read: removed however the request ends. */
  uploads: Uploads | undefined = undefined;
  /** Step 8: set once the function has been called: from then on an error is the function's. */
  invoked = false;
  /** Step 8: the invocations made for the function (a batch's contexts in an array); they end with the answer. */
  contexts: Invocation | Context[] | undefined = undefined;
  /** Step 7, with idempotency: keeps the answer for duplicates, or releases the event's claim, once answered. */
  settleClaim: Settle | undefined = undefined;
  /** Step 8: a batch stopped before one of its events (its client gone, a fault answered): those did not run. */
  batchCut = false;

  constructor(
    p: Pipeline,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    /** The request's headers as node parsed them (`req.headers`, which node makes in a getter). */
    readonly headers: IncomingHttpHeaders,
    readonly reqId: number,
    /** The trace the request arrived in, if any. */
    readonly trace: Trace | undefined,
  ) {
    this.target = scanTarget(req.url ?? '/');
    this.log = trace === undefined ? p.log.forRequest(reqId) : p.log.forRequest(reqId, trace.logFields);
    const timeout = p.settings.timeout;
    this.deadline = timeout > 0 ? now() + timeout : Infinity;
  }

  /** Whether the target is plain (scanTarget()), read with it. */
  get plain(): boolean {
    return this.target.plain;
  }

  get method(): string {
    return this.req.method ?? 'GET';
  }

  get path(): string {
    return this.target.path;
  }

  get search(): string | undefined {
    return this.target.search;
  }
}
