// Stacks through funcrun name its TypeScript (src/invocation.ts:38), not lines of the bundle, in the
// processes funcrun runs (node lib/serve.js, the funcrun command): the logger maps each stack it
// writes through its bundles' maps (lib/runtime.js.map, lib/runtime-events.js.map, ...), each read
// when a stack first needs it.
//
// Not node's own source maps: node reads a file's map when it compiles the file and keeps it for
// the life of the process, so on at start they cost every process the bundle's map (some 7 MB of
// memory) for stacks most never log, and on while the function loads, the map of each of its
// dependencies that has one (OpenTelemetry's packages have hundreds); left on while it answers,
// every request some 14% more instructions.
//
// A process that loads funcrun with require() decides for itself (node --enable-source-maps), and
// so does one started with them on (node maps the stacks itself then): funcrun changes nothing there.
// Outside the bundle, so that the entry points and the logger share one copy of it.
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the logger finds the mapping (a process-wide key: the bundle and this file are two modules). */
export const MAPPED_STACKS = Symbol.for('funcrun.mappedStacks');

// The bundles' path up to their names: lib/runtime.js, and the parts loaded on demand (lib/runtime-events.js).
const BUNDLES = join(__dirname, '..', 'runtime');
// A frame's position in a bundle: `/…/lib/runtime.js:1234:56`, `/…/lib/runtime-events.js:12:5`.
const BUNDLE_POSITION = new RegExp(`(${BUNDLES.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:-[a-z]+)?\\.js):(\\d+):(\\d+)`, 'g');

/** Called by the entry points: the stacks funcrun logs are mapped, unless node maps them already. */
export function mapFuncrunStacks(): void {
  if (process.sourceMapsEnabled) return;
  (process as unknown as Record<symbol, unknown>)[MAPPED_STACKS] = mapStack;
}

// Each bundle's map (the core's some 7 MB), read when a stack first needs it, as most processes never
// log one; null where there is none node reads.
const bundleMaps = new Map<string, SourceMap | null>();

function mapOf(bundle: string): SourceMap | null {
  let map = bundleMaps.get(bundle);
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${bundle}.map`, 'utf8')));
    } catch {
      // No map beside the bundle (or not one node reads): its frames as node wrote them.
      map = null;
    }
    bundleMaps.set(bundle, map);
  }
  return map;
}

/** The stack with its frames in the bundles named by their TypeScript; as it was where a map has none. */
export function mapStack(stack: string): string {
  if (!stack.includes(BUNDLES)) return stack;
  return stack.replace(BUNDLE_POSITION, (position, bundle: string, line: string, column: string) => {
    const map = mapOf(bundle);
    if (map === null) return position;
    const entry = map.findEntry(Number(line) - 1, Number(column) - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number };
    if (entry.originalSource === undefined || entry.originalLine === undefined || entry.originalColumn === undefined) return position;
    return `${sourcePath(entry.originalSource)}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}

// The map names its sources relative to itself (`../src/invocation.ts`); node may give them as file URLs.
function sourcePath(source: string): string {
  if (source.startsWith('file:')) return fileURLToPath(source);
  return isAbsolute(source) ? source : resolve(__dirname, '..', source);
}
