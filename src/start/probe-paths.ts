// Where the probes answer: variables, not options (the module's `path` and func.yaml say the rest),
// by the one precedence docs/lifecycle.md lists; and the check that each runtime path answers one thing.
import { ConfigError, pathProblem, shownValue } from './func-yaml';

// The root and defaults, written once: probePaths() and index.ts's exported `defaults` read them.
const PROBE_ROOT = '/health';
export const PROBE_DEFAULTS = Object.freeze({ liveness: `${PROBE_ROOT}/liveness`, readiness: `${PROBE_ROOT}/readiness` });
const PROBE_VARIABLES = ['LIVENESS_URL', 'READINESS_URL', 'FUNC_HEALTH_ROOT_PATH', 'FUNC_HEALTH_LIVENESS_PATH', 'FUNC_HEALTH_READINESS_PATH'];

/** What decides where each probe answers, first to last. */
export interface ProbeSources {
  env: NodeJS.ProcessEnv;
  /** The `path` property of the module's liveness / readiness function. */
  module: { liveness?: string; readiness?: string };
  /** func.yaml's deploy.healthEndpoints. */
  funcYaml: { liveness?: string; readiness?: string };
}

/**
 * The probe paths, by the one precedence docs/lifecycle.md lists: `LIVENESS_URL` / `READINESS_URL`; then
 * `FUNC_HEALTH_ROOT_PATH` joined with `FUNC_HEALTH_*_PATH` (the Java variant's root and relative
 * paths; a relative path with a leading `/` is a full path); then the module's `path`; then
 * func.yaml; then PROBE_DEFAULTS (`/health/liveness` and `/health/readiness`).
 */
export function probePaths({ env, module, funcYaml }: ProbeSources): { liveness: string; readiness: string } {
  const root = env.FUNC_HEALTH_ROOT_PATH;
  const one = (probe: 'liveness' | 'readiness'): string => {
    const full = env[`${probe.toUpperCase()}_URL`];
    if (full) return checkPath(full, `${probe.toUpperCase()}_URL`);
    const what = `FUNC_HEALTH_${probe.toUpperCase()}_PATH`;
    const relative = env[what];
    if (root || relative) {
      if (relative?.startsWith('/')) return checkPath(relative, what);
      if (relative) relativePath(relative, what);
      const base = `/${(root ?? PROBE_ROOT).replace(/^\/+|\/+$/g, '')}`;
      return checkPath(`${base === '/' ? '' : base}/${relative || probe}`, root ? `FUNC_HEALTH_ROOT_PATH joined with ${what}` : what);
    }
    return module[probe] ?? funcYaml[probe] ?? PROBE_DEFAULTS[probe];
  };
  return { liveness: one('liveness'), readiness: one('readiness') };
}

/** Each runtime path answers one thing: a probe or the metrics behind another would never be asked. */
export function checkDistinct(paths: Record<string, string | undefined>): void {
  const seen = new Map<string, string>();
  for (const [what, path] of Object.entries(paths)) {
    if (path === undefined) continue;
    const other = seen.get(path);
    if (other !== undefined) throw new ConfigError(`the ${other} and the ${what} are both at ${JSON.stringify(path)}: give each its own path`);
    seen.set(path, what);
  }
}

/** Checks a probe variable's value as start would (`funcrun config envs add`): false for any other variable. */
export function checkProbeVariable(name: string, value: string): boolean {
  if (!PROBE_VARIABLES.includes(name)) return false;
  // The root is joined with `/` whichever way it is written; the others are full or relative paths.
  if (name === 'FUNC_HEALTH_ROOT_PATH') return true;
  if (name.endsWith('_URL') || value.startsWith('/')) checkPath(value, name);
  else relativePath(value, name);
  return true;
}

export function checkPath(value: string, what: string): string {
  const problem = pathProblem(value);
  if (problem !== undefined) throw new ConfigError(`invalid ${what} "${shownValue(value)}": ${problem}`);
  return value;
}

function relativePath(value: string, what: string): string {
  if (!/^[\w.~!$&'()*+,;=:@%-]+(\/[\w.~!$&'()*+,;=:@%-]+)*$/.test(value)) {
    throw new ConfigError(`invalid ${what} '${shownValue(value)}': expected a relative path such as ${what.includes('LIVENESS') ? 'liveness' : 'readiness'}`);
  }
  return value;
}
