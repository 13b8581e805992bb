// Loaded first by the entry points (serve.js run as a program, the funcrun command): node's
// on-disk compile cache (module.enableCompileCache, Node 22.1+), so that a start reads the code
// the previous one compiled (funcrun's bundle, the yaml parser, the function) instead of
// compiling it again. The cache lives beside funcrun's own files (lib/.cache): code is read only
// from where funcrun's code itself comes from, never from a shared folder such as the default
// one under /tmp, where another user could leave compiled code behind. Where that folder cannot
// be written (a read-only image), node runs without it, or with what the image was built with.
// NODE_COMPILE_CACHE (another folder) and NODE_DISABLE_COMPILE_CACHE=1 take precedence, as
// node reads them itself, and funcrun's code caches (code-cache.ts) follow them.
import * as nodeModule from 'node:module';
import { join } from 'node:path';
import { useCodeCache } from './code-cache';

try {
  const result = nodeModule.enableCompileCache?.(join(__dirname, '..', '.cache'));
  // The same folder, or none, for the code caches of the bundle and the YAML parser (code-cache.ts):
  // node's own, inside the one it was given, for this node, its V8 flags and its user. (Where it was
  // just turned on, `result.directory` is the folder given: processes with other flags would
  // replace each other's caches there at every start.)
  const { ENABLED, ALREADY_ENABLED } = nodeModule.constants.compileCacheStatus;
  const directory = nodeModule.getCompileCacheDir?.() ?? result?.directory;
  if (directory !== undefined && (result?.status === ENABLED || result?.status === ALREADY_ENABLED)) useCodeCache(directory);
} catch {
  // A start without the cache is only slower.
}
