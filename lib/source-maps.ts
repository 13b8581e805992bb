// node's own source maps, for the processes funcrun runs (node lib/serve.js, the funcrun command),
// so that a stack through funcrun names its TypeScript (lib/invocation.ts:38) rather than a line
// of lib/runtime.js. node reads a file's map only when it compiles the file: the entry points
// turn them on before the bundle loads, and node reads lib/runtime.js.map then.
//
// While the function loads and starts, serve() has them off again (pauseSourceMaps): node would
// otherwise read, at every start, the map of each module of the function's dependencies that has
// one (OpenTelemetry's packages have hundreds), and, while they are on, it leaves out its hint for
// an ESM import of a name a CommonJS module does not export. They are back on once the server
// listens, for every stack formatted from then on.
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

/** Turns them off if funcrun turned them on; the function returned turns them back on. */
export function pauseSourceMaps(): () => void {
  if (!ours || !process.sourceMapsEnabled) return () => {};
  turn(false);
  return () => turn(true);
}
