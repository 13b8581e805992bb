// Prometheus metrics in the text format, with faas-js-runtime's names and labels, and no
// dependency: a request costs a few additions and two bucket searches.
import type { Socket } from 'node:net';

/** The histogram buckets (seconds) prom-client uses by default. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

class Histogram {
  readonly counts = new Array<number>(BUCKETS.length).fill(0);
  sum = 0;
  count = 0;
  observe(seconds: number): void {
    this.sum += seconds;
    this.count++;
    for (let i = 0; i < BUCKETS.length; i++) {
      if (seconds <= BUCKETS[i]) {
        this.counts[i]++;
        return;
      }
    }
  }
}

/** The labels every series carries, faas-js-runtime's (OpenTelemetry's FaaS resource attributes). */
export interface MetricLabels {
  faas_name: string;
  faas_id: string;
  faas_instance: string;
  faas_version: string;
  faas_runtime: string;
}

/**
 * What happened to an event that was not simply run: refused by its contract (invalid data, an
 * undeclared type), a duplicate (answered again, or while the first runs), not run for want of the
 * store, or answered with the function's retry() or drop().
 */
export const EVENT_OUTCOMES = ['invalid', 'undeclared', 'replayed', 'in_progress', 'conflict', 'store_unavailable', 'retried', 'dropped'] as const;
export type EventOutcome = (typeof EVENT_OUTCOMES)[number];

const escape = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export class Metrics {
  #invocations = 0;
  #errors = 0;
  // Events answered without running the function, or by an explicit outcome: by outcome.
  readonly #events = new Map<EventOutcome, number>();
  readonly #latency = new Histogram();
  readonly #queue = new Histogram();
  readonly #coldStart = new Histogram();
  readonly #given: MetricLabels;
  #labels: string | undefined;
  #lag = () => 0;
  // Network I/O: bytes of connections that have closed, and the connections still open.
  #closedBytes = 0;
  readonly #open = new Set<Socket>();
  // The previous scrape, for the utilisation gauges (a share of the time since then).
  #last = { at: performance.now(), cpu: process.cpuUsage(), bytes: 0 };

  constructor(labels: MetricLabels) {
    this.#given = labels;
  }

  /** Time from the request's arrival to the function's call (reading and parsing the body). */
  queued(seconds: number): void {
    this.#queue.observe(seconds);
  }

  /** A connection to count the bytes of: per connection, not per request. */
  connection(socket: Socket): void {
    this.#open.add(socket);
    socket.once('close', () => {
      this.#open.delete(socket);
      this.#closedBytes += socket.bytesRead + socket.bytesWritten;
    });
  }

  /** One invocation of the function: how long it took, and whether it failed. */
  record(seconds: number, failed: boolean): void {
    this.#invocations++;
    if (failed) this.#errors++;
    this.#latency.observe(seconds);
  }

  /** Counts every event outcome from zero: the module declares contracts or turns idempotency on. */
  countEvents(): void {
    for (const outcome of EVENT_OUTCOMES) if (!this.#events.has(outcome)) this.#events.set(outcome, 0);
  }

  /** An event refused, answered from the store, asked to be retried or dropped. */
  event(outcome: EventOutcome): void {
    this.#events.set(outcome, (this.#events.get(outcome) ?? 0) + 1);
  }

  /** Time from process start to ready, once. */
  ready(seconds: number): void {
    this.#coldStart.observe(seconds);
  }

  /** Where the event loop delay comes from (the overload check measures it anyway). */
  lagFrom(lag: () => number): void {
    this.#lag = lag;
  }

  render(): string {
    // Rendered at the first scrape, once: every series carries the same labels, in faas-js-runtime's
    // order (the instance id is a random UUID, made then rather than at start).
    const l = (this.#labels ??= (['faas_name', 'faas_id', 'faas_instance', 'faas_version', 'faas_runtime'] as const)
      .map((k) => `${k}="${escape(this.#given[k])}"`)
      .join(','));
    const lines: string[] = [];
    const metric = (name: string, type: string, help: string, series: string[]) => lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...series);
    const histogram = (name: string, help: string, h: Histogram) => {
      let cumulative = 0;
      const series = BUCKETS.map((le, i) => `${name}_bucket{le="${le}",${l}} ${(cumulative += h.counts[i])}`);
      series.push(`${name}_bucket{le="+Inf",${l}} ${h.count}`, `${name}_sum{${l}} ${h.sum}`, `${name}_count{${l}} ${h.count}`);
      metric(name, 'histogram', help, series);
    };
    metric('faas_invocations', 'counter', 'The number of times this function was invoked', [`faas_invocations{${l}} ${this.#invocations}`]);
    metric('faas_errors', 'counter', 'The number of function invocation failures', [`faas_errors{${l}} ${this.#errors}`]);
    if (this.#events.size > 0) {
      const series = [...this.#events].map(([outcome, count]) => `funcrun_events_total{outcome="${outcome}",${l}} ${count}`);
      metric('funcrun_events_total', 'counter', 'Events answered without running the function, or by an outcome it returned', series);
    }
    histogram('faas_execution_latency', 'The time it took for this function to be invoked and return', this.#latency);
    histogram('faas_cold_start_latency', 'The time it took for this function to be in the ready state after the process started', this.#coldStart);
    const memory = process.memoryUsage();
    const cpu = process.cpuUsage();
    histogram('faas_queue_latency', 'The time spent in a system queue before the function was invoked', this.#queue);
    // The gauges describe this instance (the process), over the time since the previous scrape:
    // CPU as a percentage of one core, memory as resident MB, network I/O as MB per second.
    let bytes = this.#closedBytes;
    for (const socket of this.#open) bytes += socket.bytesRead + socket.bytesWritten;
    const now = performance.now();
    const seconds = Math.max((now - this.#last.at) / 1000, 1e-3);
    const cpuSeconds = (cpu.user - this.#last.cpu.user + cpu.system - this.#last.cpu.system) / 1e6;
    const netMb = (bytes - this.#last.bytes) / 1024 ** 2;
    this.#last = { at: now, cpu, bytes };
    metric('faas_cpu_utilization', 'gauge', 'The CPU utilization of this function instance', [`faas_cpu_utilization{${l}} ${(cpuSeconds / seconds) * 100}`]);
    metric('faas_mem_utilization', 'gauge', 'The memory utilization of this function instance', [`faas_mem_utilization{${l}} ${memory.rss / 1024 ** 2}`]);
    metric('faas_netio_utilization', 'gauge', 'The network I/O utilization of this function instance', [`faas_netio_utilization{${l}} ${netMb / seconds}`]);
    metric('process_cpu_seconds_total', 'counter', 'Total user and system CPU time spent in seconds', [
      `process_cpu_seconds_total{${l}} ${(cpu.user + cpu.system) / 1e6}`,
    ]);
    metric('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes', [`process_resident_memory_bytes{${l}} ${memory.rss}`]);
    metric('process_start_time_seconds', 'gauge', 'Start time of the process since unix epoch in seconds', [
      `process_start_time_seconds{${l}} ${Math.round(Date.now() / 1000 - process.uptime())}`,
    ]);
    metric('nodejs_heap_size_used_bytes', 'gauge', 'Process heap size used from Node.js in bytes', [`nodejs_heap_size_used_bytes{${l}} ${memory.heapUsed}`]);
    metric('nodejs_eventloop_lag_seconds', 'gauge', 'Lag of the event loop in seconds', [`nodejs_eventloop_lag_seconds{${l}} ${this.#lag() / 1000}`]);
    return lines.join('\n') + '\n';
  }
}

export const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
