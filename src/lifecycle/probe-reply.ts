// What a probe function is called with: faas-js-runtime registers one as a fastify handler, so a
// check written for it may take fastify's `(request, reply)` and answer through `reply` (its
// README types it so). These are the parts of them such a check uses.
import type { IncomingMessage } from 'node:http';
import type { ProbeReply as Reply, ProbeRequest } from '../types';
import { queryOf, readTarget } from '../http/target';

/** The probe's request, as fastify's request shows it. */
export function probeRequest(req: IncomingMessage): ProbeRequest {
  const { path, search } = readTarget(req.url ?? '/');
  return { method: req.method ?? 'GET', url: req.url ?? '/', path, headers: req.headers, query: queryOf(search), raw: req };
}

/** A reply a check may answer through: its status, headers and payload, kept until the probe answers. */
export class ProbeReply implements Reply {
  statusCode = 200;
  #sent = false;
  #payload: unknown = undefined;
  readonly #headers: Record<string, string> = {};

  get sent(): boolean {
    return this.#sent;
  }

  /** What was sent, and the headers set. */
  get payload(): unknown {
    return this.#payload;
  }

  get sentHeaders(): Record<string, string> {
    return this.#headers;
  }

  code(status: number): this {
    this.statusCode = Number(status);
    return this;
  }

  status(status: number): this {
    return this.code(status);
  }

  header(name: string, value: string | number): this {
    this.#headers[String(name).toLowerCase()] = String(value);
    return this;
  }

  headers(values: Record<string, string | number>): this {
    for (const name of Object.keys(values)) this.header(name, values[name]);
    return this;
  }

  type(contentType: string): this {
    return this.header('content-type', contentType);
  }

  getHeader(name: string): string | undefined {
    return this.#headers[String(name).toLowerCase()];
  }

  send(payload?: unknown): this {
    this.#sent = true;
    this.#payload = payload;
    return this;
  }
}
