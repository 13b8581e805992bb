// `funcrun config`: edits func.yaml in place with the yaml package's document API, so comments
// and order stay. Values funcrun reads are checked before they are written.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Document, YAMLMap, YAMLSeq } from 'yaml';
import { ConfigError, envProblem, isEnvName, pathProblem, readFuncYaml, type EnvEntry } from '../start/func-yaml';
import { checkVariable } from '../start/settings';

type YamlModule = typeof import('yaml');
const yaml = (): YamlModule => require('../yaml') as YamlModule;

export interface FuncYamlFile {
  file: string;
  doc: Document;
}

/** Opens `<folder>/func.yaml` for editing; a malformed one is refused with its line. */
export function openFuncYaml(folder: string): FuncYamlFile {
  const file = join(folder, 'func.yaml');
  if (!existsSync(file)) {
    throw new ConfigError(
      `no func.yaml in ${folder}: pass the function's folder with --path, or write one (specVersion, name, runtime; func create and funcrun create write it with a new project)`,
    );
  }
  readFuncYaml(folder); // refuses a malformed file, naming the line
  return { file, doc: yaml().parseDocument(readFileSync(file, 'utf8')) };
}

export function saveFuncYaml({ file, doc }: FuncYamlFile): void {
  writeFileSync(file, doc.toString());
}

/** Refuses a value funcrun would refuse at start (an unknown log level, a probe path without `/`, a reference func refuses). */
export function checkEnv(name: string, value: string): void {
  if (!isEnvName(name)) throw new ConfigError(`invalid variable name '${name}': letters, digits, '_', '-' and '.', not starting with a digit`);
  const problem = envProblem(name, value);
  if (problem !== undefined) throw new ConfigError(problem);
  // The same parsers start() uses, from the one table of settings.
  checkVariable(name, value);
}

function envs(doc: Document, create: boolean): YAMLSeq<YAMLMap> | undefined {
  const { isSeq } = yaml();
  let node = doc.getIn(['run', 'envs'], true);
  if (!isSeq(node)) {
    if (!create) return undefined;
    doc.setIn(['run', 'envs'], doc.createNode([]));
    node = doc.getIn(['run', 'envs'], true);
  }
  const seq = node as YAMLSeq<YAMLMap>;
  seq.flow = false;
  return seq;
}

/** run.envs as written; an entry without a name imports a whole secret or config map. */
export function listEnvs(doc: Document): EnvEntry[] {
  const { isMap } = yaml();
  return (envs(doc, false)?.items ?? [])
    .filter((item) => isMap(item))
    .map((item) => {
      const name = item.get('name');
      const value = String(item.get('value') ?? '');
      return name === undefined || name === null ? { value } : { name: String(name), value };
    });
}

/** One line of `funcrun config envs list`: `NAME=value`, or what an entry without a name imports. */
export function describeEnv({ name, value }: EnvEntry): string {
  if (name !== undefined) return `${name}=${value}`;
  const whole = /^\{\{\s*(secret|configMap):(\S+?)\s*\}\}$/.exec(value);
  return whole === null ? value : `${value} (every key of ${whole[1] === 'secret' ? 'secret' : 'config map'} ${whole[2]}, set by the platform)`;
}

/** Sets a variable in run.envs: its value in place when it is there, else a new entry at the end. */
export function setEnv(doc: Document, name: string, value: string): 'added' | 'updated' {
  checkEnv(name, value);
  const seq = envs(doc, true)!;
  const existing = seq.items.find((item) => yaml().isMap(item) && item.get('name') === name);
  if (existing !== undefined) {
    existing.set('value', value);
    return 'updated';
  }
  seq.items.push(doc.createNode({ name, value }) as YAMLMap);
  return 'added';
}

export function removeEnv(doc: Document, name: string): void {
  const seq = envs(doc, false);
  const index = seq?.items.findIndex((item) => yaml().isMap(item) && item.get('name') === name) ?? -1;
  if (index === -1) throw new ConfigError(`no variable ${name} in run.envs`);
  seq!.items.splice(index, 1);
}

/** Writes deploy.healthEndpoints; with `env`, also LIVENESS_URL / READINESS_URL in run.envs. */
export function setHealth(doc: Document, paths: { liveness?: string; readiness?: string }, env: boolean): void {
  for (const probe of ['liveness', 'readiness'] as const) {
    const path = paths[probe];
    if (path === undefined) continue;
    const problem = pathProblem(path);
    if (problem !== undefined) throw new ConfigError(`invalid --${probe} ${JSON.stringify(path)}: ${problem}`);
    doc.setIn(['deploy', 'healthEndpoints', probe], path);
    if (env) setEnv(doc, probe === 'liveness' ? 'LIVENESS_URL' : 'READINESS_URL', path);
  }
}
