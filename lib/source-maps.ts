// node's own source maps, for the processes funcrun runs (node lib/serve.js, the funcrun command),
// so that a stack through funcrun names its TypeScript (lib/invocation.ts:38) rather than a line
// of lib/runtime.js. node reads a file's map only when it compiles the file: the entry points
// turn them on before the bundle loads, and node reads lib/runtime.js.map then.
//
// Once the bundle is loaded they are off again (pauseSourceMaps): while the function loads, node
// would otherwise read, at every start, the map of each module of the function's dependencies that
// has one (OpenTelemetry's packages have hundreds), and, while they are on, it leaves out its hint
// for an ESM import of a name a CommonJS module does not export. While the server answers, left on
// they cost every request some 14% more instructions (callgrind, a JSON POST): so they stay off, and
// the logger turns them on only while it reads an error's stack (mappedStack in log.ts), through
// the switch left on `process` under MAPPED_STACKS.
//
// A process that loads funcrun with require() decides for itself (node --enable-source-maps), and
// so does one started with them on: funcrun changes nothing there. Outside the bundle, so that the
// entry points and the bundle share one copy of `ours`.
import * as nodeModule from 'node:module';

/** Whether funcrun turned them on, rather than the process (--enable-source-maps, NODE_OPTIONS). */
let ours = false;

function turn(on: boolean): void {
  // node_modules included: that is where funcrun is installed. Node before 22.14 has only the
  // process-wide switch, which includes them too.
  if (typeof nodeModule.setSourceMapsSupport === 'function') nodeModule.setSourceMapsSupport(on, { nodeModules: true });
  else process.setSourceMapsEnabled(on);
}

/** Called by the entry points before they load anything else of funcrun. */
export function turnOnSourceMaps(): void {
  if (process.sourceMapsEnabled) return;
  turn(true);
  ours = true;
}

/** Where the logger finds the switch (a process-wide key: the bundle and this file are two modules). */
export const MAPPED_STACKS = Symbol.for('funcrun.mappedStacks');

/**
 * Turns them off if funcrun turned them on; the function returned leaves them off and hands the
 * logger the switch, so that the stacks it logs are mapped.
 */
export function pauseSourceMaps(): () => void {
  if (!ours || !process.sourceMapsEnabled) return () => {};
  turn(false);
  return () => {
    (process as unknown as Record<symbol, unknown>)[MAPPED_STACKS] = turn;
  };
}
