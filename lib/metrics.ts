// Prometheus metrics in the text format, with faas-js-runtime's names and labels, and no
// dependency: a request costs two additions and a bucket search.
import { hostname } from 'node:os';

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

export interface MetricLabels {
  /** faas_name: the function (K_SERVICE, else func.yaml's name). */
  name: string;
  /** faas_version: the revision (K_REVISION). */
  revision?: string;
  /** faas_instance: the pod (POD_NAME, else the host name). */
  instance?: string;
}

const escape = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export class Metrics {
  #invocations = 0;
  #errors = 0;
  readonly #latency = new Histogram();
  readonly #coldStart = new Histogram();
  readonly #labels: string;
  #lag = () => 0;

  constructor(labels: MetricLabels) {
    const pairs: [string, string][] = [
      ['faas_name', labels.name],
      ['faas_version', labels.revision ?? ''],
      ['faas_instance', labels.instance ?? hostname()],
      ['faas_runtime', 'Node.js'],
    ];
    // Rendered once: every series carries the same labels.
    this.#labels = pairs.map(([k, v]) => `${k}="${escape(v)}"`).join(',');
  }

  /** One invocation of the function: how long it took, and whether it failed. */
  record(seconds: number, failed: boolean): void {
    this.#invocations++;
    if (failed) this.#errors++;
    this.#latency.observe(seconds);
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
    const l = this.#labels;
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
    histogram('faas_execution_latency', 'The time it took for this function to be invoked and return', this.#latency);
    histogram('faas_cold_start_latency', 'The time it took for this function to be in the ready state after the process started', this.#coldStart);
    const memory = process.memoryUsage();
    const cpu = process.cpuUsage();
    metric('process_cpu_seconds_total', 'counter', 'Total user and system CPU time spent in seconds', [`process_cpu_seconds_total{${l}} ${(cpu.user + cpu.system) / 1e6}`]);
    metric('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes', [`process_resident_memory_bytes{${l}} ${memory.rss}`]);
    metric('process_start_time_seconds', 'gauge', 'Start time of the process since unix epoch in seconds', [`process_start_time_seconds{${l}} ${Math.round(Date.now() / 1000 - process.uptime())}`]);
    metric('nodejs_heap_size_used_bytes', 'gauge', 'Process heap size used from Node.js in bytes', [`nodejs_heap_size_used_bytes{${l}} ${memory.heapUsed}`]);
    metric('nodejs_eventloop_lag_seconds', 'gauge', 'Lag of the event loop in seconds', [`nodejs_eventloop_lag_seconds{${l}} ${this.#lag() / 1000}`]);
    return lines.join('\n') + '\n';
  }
}

export const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
