// func.yaml and the option values that arrive as text (flags and environment variables).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseLogLevel, type LogLevel } from './log';

/** What funcrun reads from func.yaml. */
export interface FuncYaml {
  file: string;
  name?: string;
  invoke?: string;
  envs: { name: string; value: string }[];
  liveness?: string;
  readiness?: string;
}

/** A configuration problem found at start; the message names the file and line where there is one. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type YamlModule = typeof import('yaml');

/** Reads `<folder>/func.yaml`; undefined when there is none. Throws ConfigError when it is malformed. */
export function readFuncYaml(folder: string): FuncYaml | undefined {
  const file = join(folder, 'func.yaml');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`${file}: ${(err as Error).message}`);
  }
  // Only functions with a func.yaml load the YAML parser: the yaml package bundled at build time
  // into one file (lib/yaml.js), which loads in a third of the time of its sixty modules.
  const { parseDocument, LineCounter, isMap, isSeq, isScalar } = require('./yaml') as YamlModule;
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const fail = (message: string, offset?: number): never => {
    const at = offset === undefined ? '' : `:${lines.linePos(offset).line}`;
    throw new ConfigError(`${file}${at}: ${message}`);
  };
  if (doc.errors.length > 0) {
    const [error] = doc.errors;
    fail(error.message.split('\n')[0], error.pos[0]);
  }
  const root = doc.contents;
  if (root === null) return { file, envs: [] };
  if (!isMap(root)) fail('expected a mapping at the top level', root.range?.[0]);

  const config: FuncYaml = { file, envs: [] };
  const name = doc.getIn(['name']);
  if (name !== undefined && name !== null) config.name = String(name);
  const invoke = doc.getIn(['invoke']);
  if (typeof invoke === 'string') config.invoke = invoke;

  const envs = doc.getIn(['run', 'envs'], true);
  if (envs != null && !(isScalar(envs) && envs.value === null)) {
    if (!isSeq(envs)) fail('run.envs must be a list of { name, value }', (envs as { range?: number[] }).range?.[0]);
    for (const item of (envs as import('yaml').YAMLSeq).items) {
      const at = (item as { range?: number[] }).range?.[0];
      if (!isMap(item)) fail('each run.envs entry must be a mapping with name and value', at);
      const entry = (item as import('yaml').YAMLMap).toJSON() as { name?: unknown; value?: unknown };
      if (typeof entry.name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(entry.name)) {
        fail('each run.envs entry needs a name that is a valid environment variable name', at);
      }
      const value = entry.value === undefined || entry.value === null ? '' : String(entry.value);
      config.envs.push({ name: entry.name as string, value });
    }
  }
  for (const probe of ['liveness', 'readiness'] as const) {
    const node = doc.getIn(['deploy', 'healthEndpoints', probe], true) as { value?: unknown; range?: number[] } | undefined;
    if (node === undefined || node === null || node.value === null) continue;
    if (typeof node.value !== 'string' || !node.value.startsWith('/')) {
      fail(`deploy.healthEndpoints.${probe} must be a path starting with '/'`, node.range?.[0]);
    }
    config[probe] = node.value as string;
  }
  return config;
}

/**
 * Puts func.yaml's `run.envs` into `env` where a variable is not already set. A value
 * `{{ env:NAME }}` takes NAME from `env`, as `func` does; other references (secrets, config
 * maps) are resolved by the platform at deploy time and skipped here.
 */
export function applyEnvs(config: FuncYaml, env: NodeJS.ProcessEnv): string[] {
  const skipped: string[] = [];
  for (const { name, value } of config.envs) {
    if (env[name] !== undefined) continue;
    const reference = /^\{\{\s*(\w+):([^}]*?)\s*\}\}$/.exec(value);
    if (reference === null) env[name] = value;
    else if (reference[1] === 'env') {
      const from = env[reference[2]];
      if (from !== undefined) env[name] = from;
    } else skipped.push(name);
  }
  return skipped;
}

const UNITS: Record<string, number> = { b: 1, kb: 1024, k: 1024, mb: 1024 ** 2, m: 1024 ** 2, gb: 1024 ** 3, g: 1024 ** 3 };

/** A byte count from a number or text such as `1048576`, `512kb`, `2mb` (units of 1024). */
export function parseBytes(value: string | number, what = 'body limit'): number {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value > 0) return value;
  } else {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(b|kb?|mb?|gb?|kib|mib|gib)?\s*$/i.exec(value);
    if (m) {
      const unit = (m[2] ?? 'b').toLowerCase().replace('ib', 'b');
      const bytes = Math.floor(Number(m[1]) * UNITS[unit]);
      if (bytes > 0) return bytes;
    }
  }
  throw new ConfigError(`invalid ${what} '${value}': expected a number of bytes, or with a unit such as 512kb or 2mb`);
}

/** A whole number of at least 1, from text or a number. */
export function parseCount(value: string | number, what: string): number {
  const count = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(count) || count < 1) throw new ConfigError(`invalid ${what} '${value}': expected a whole number of at least 1`);
  return count;
}

/** A port number from text or a number. */
export function parsePort(value: string | number, what: string): number {
  const port = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`invalid ${what} '${value}': expected a port number from 0 to 65535`);
  }
  return port;
}

/** A switch from text: true, 1, yes, on or false, 0, no, off. */
export function parseSwitch(value: string | boolean, what: string): boolean {
  if (typeof value === 'boolean') return value;
  const text = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on', ''].includes(text)) return true;
  if (['false', '0', 'no', 'off'].includes(text)) return false;
  throw new ConfigError(`invalid ${what} '${value}': expected true or false`);
}

/** A duration in milliseconds from a number (milliseconds) or text such as `500ms`, `10s`, `2m`. */
export function parseDuration(value: string | number, what: string): number {
  let ms = NaN;
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) ms = value;
  const m = typeof value === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(value) : null;
  if (m) ms = Number(m[1]) * (m[2] === 's' ? 1000 : m[2] === 'm' ? 60_000 : 1);
  // A timer longer than 2^31 - 1 ms fires at once (node warns and uses 1 ms): refused, not a 504 for every request.
  if (ms > MAX_TIMER) throw new ConfigError(`invalid ${what} '${value}': at most ${MAX_TIMER} ms (about 24 days)`);
  if (ms >= 0) return ms;
  throw new ConfigError(`invalid ${what} '${value}': expected milliseconds, or a duration such as 10s`);
}

const MAX_TIMER = 2 ** 31 - 1;

export function checkLogLevel(value: string, what: string): LogLevel {
  try {
    return parseLogLevel(value);
  } catch (err) {
    throw new ConfigError(`invalid ${what}: ${(err as Error).message}`);
  }
}
