// What a start read from func.yaml, kept beside funcrun's code caches (boot/code-cache.ts) so that
// the next start of the same file needs no YAML parser: loading it and its first parse cost a
// start some 24 million instructions (10-20 ms), a third of what funcrun adds to node's own start.
//
// The record is used only for the text it was read from (its length and a digest compared), and
// holds no value of `run.envs`: each value is kept as its place in the text and read from func.yaml
// itself, so that a secret written there is never copied elsewhere. A value not written out as it
// reads (most escapes in a quoted string, a folded line) has no such place: that file is parsed at
// every start. No record is written where the code caches are off.
//
// The digest tells an edited func.yaml from the one read, not one made to collide with it: such a
// file (found in seconds: the digest is no cryptographic hash, and node:crypto would cost a start
// what the record saves) starts with the record's names and the values at its places, unchecked by
// the YAML parser. Only whoever writes func.yaml can make it, and it sets nothing its author could
// not set plainly: func.yaml decides the function's environment.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { codeCacheFolder, regularFile, writeCacheFile } from '../boot/code-cache';
import { isEnvName, pathProblem, type EnvEntry, type FuncYaml } from './func-yaml';
import { isLogLevel } from '../log/levels';

/** Where a run.envs value sits in func.yaml's text: [start, end) in UTF-16 code units. */
export type Place = readonly [number, number];

/** A record as kept: func.yaml's values without the env values, which are places in the text. */
interface Kept {
  name?: string;
  invoke?: string;
  liveness?: string;
  readiness?: string;
  logLevel?: FuncYaml['logLevel'];
  envs: { name?: string; at: Place }[];
}

// A record larger than this is no record of a func.yaml a start would use.
const RECORD_LIMIT = 1024 * 1024;

/** What was read from `file` when its text was `text`, or undefined when nothing was kept for that text. */
export function keptFuncYaml(file: string, text: string): FuncYaml | undefined {
  const folder = codeCacheFolder();
  if (folder === undefined) return undefined;
  const bytes = regularFile(recordFile(folder, file), RECORD_LIMIT);
  if (bytes === undefined) return undefined;
  try {
    const record = JSON.parse(bytes.toString('utf8')) as { file: string; length: number; digest: number; check: number; kept: string };
    // The text it was read from, and the record itself as written (a damaged byte is another record).
    if (record.file !== file || record.length !== text.length || record.digest !== digestOf(text) || record.check !== digestOf(record.kept)) return undefined;
    const kept = JSON.parse(record.kept) as Kept;
    if (!wellFormed(kept, text.length)) return undefined;
    const envs: EnvEntry[] = kept.envs.map(({ name, at }) =>
      name === undefined ? { value: text.slice(at[0], at[1]) } : { name, value: text.slice(at[0], at[1]) },
    );
    return { ...kept, file, envs };
  } catch {
    return undefined;
  }
}

/** Keeps what was read from `file` for the next start, when every env value has its place in the text. */
export function keepFuncYaml(file: string, text: string, config: FuncYaml, places: readonly (Place | undefined)[]): void {
  const folder = codeCacheFolder();
  if (folder === undefined || places.length !== config.envs.length || places.includes(undefined)) return;
  const { name, invoke, liveness, readiness, logLevel } = config;
  const kept: Kept = { name, invoke, liveness, readiness, logLevel, envs: config.envs.map((env, i) => ({ name: env.name, at: places[i]! })) };
  writeCacheFile(recordFile(folder, file), () => {
    const json = JSON.stringify(kept);
    return JSON.stringify({ file, length: text.length, digest: digestOf(text), check: digestOf(json), kept: json });
  });
}

/**
 * Whether a record holds what a parse could have given: places within the text, names and values
 * that pass func.yaml's own checks. A record is written by funcrun, but read from a folder, so it
 * is checked as input is.
 */
function wellFormed(kept: Kept, length: number): boolean {
  const text = (value: unknown) => value === undefined || typeof value === 'string';
  if (typeof kept !== 'object' || kept === null || !Array.isArray(kept.envs) || ![kept.name, kept.invoke].every(text)) return false;
  if (kept.logLevel !== undefined && !isLogLevel(kept.logLevel)) return false;
  for (const path of [kept.liveness, kept.readiness]) if (path !== undefined && (typeof path !== 'string' || pathProblem(path) !== undefined)) return false;
  return kept.envs.every((env) => {
    const at = env?.at;
    if (!Array.isArray(at) || at.length !== 2 || !Number.isInteger(at[0]) || !Number.isInteger(at[1])) return false;
    return 0 <= at[0] && at[0] <= at[1] && at[1] <= length && (env.name === undefined || (typeof env.name === 'string' && isEnvName(env.name)));
  });
}

/** Removes what was kept of `file` (`funcrun cache`'s own project, gone once the caches are made). */
export function forgetFuncYaml(file: string): void {
  const folder = codeCacheFolder();
  if (folder !== undefined) rmSync(recordFile(folder, file), { force: true });
}

/** Where `value`, read from the scalar that spans `range` of `text`, is written out as it is; undefined when it is not. */
export function placeOf(text: string, value: string, range: readonly number[] | undefined): Place | undefined {
  if (range === undefined) return undefined;
  const at = text.indexOf(value, range[0]);
  return at !== -1 && at + value.length <= range[1] ? [at, at + value.length] : undefined;
}

function recordFile(folder: string, file: string): string {
  return join(folder, `func-yaml.${digestOf(file).toString(36)}.json`);
}

/**
 * A 53-bit digest of a text (cyrb53: two multiply-xor lanes over its UTF-16 code units, mixed at
 * the end). Not a cryptographic hash: it tells a changed file from the one read, as a hash table
 * tells keys apart, at a cost of a few instructions a character.
 */
function digestOf(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
