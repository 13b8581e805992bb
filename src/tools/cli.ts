#!/usr/bin/env node
// The `funcrun` command: create, invoke, config, serve and cache. An entry point: it reads the command
// line (node:util parseArgs), and the files and variables its commands name.
// First: the compile cache and source maps, on before anything else of funcrun is loaded, then
// the bundle with its code cache (the calls stay between the imports: compiled to CommonJS, each
// import is a require() in its place).
import '../boot/compile-cache';
import { mapFuncrunStacks } from '../boot/source-maps';
mapFuncrunStacks();
import { requireCached, RUNTIME } from '../boot/code-cache';
requireCached(RUNTIME);
import { existsSync } from 'node:fs';
import { EXIT, unsupportedNode } from '../start/exit';
import { ConfigError } from '../start/func-yaml';
import { nearest } from '../start/suggest';
import { flagOptions } from '../start/settings';
import { cacheCommand, config, create, serveCommand } from './cli-commands';
import { invokeCommand } from './cli-invoke';
import { COMMANDS, help, USAGE, UsageError, VERSION } from './cli-usage';

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  // serve warns in its own log's format.
  const old = command === 'serve' ? undefined : unsupportedNode();
  if (old !== undefined) process.stderr.write(`funcrun: warning: ${old}\n`);
  switch (command) {
    case 'create':
      return create(rest);
    case 'invoke':
      return invokeCommand(rest);
    case 'config':
      return config(rest);
    case 'serve':
      return serveCommand(rest);
    case 'cache':
      return cacheCommand(rest);
    case '--version':
    case '-v':
    case '-V':
    case 'version':
      process.stdout.write(`${VERSION}\n`);
      return;
    case '--help':
    case '-h':
    case 'help':
      return help(USAGE);
    case undefined:
      process.stderr.write(USAGE + '\n');
      process.exit(EXIT.USAGE);
  }
  // `funcrun <folder>`, as the binary was first used: serve it.
  if (existsSync(command)) return serveCommand(argv);
  // An option of serve's before any command (`funcrun --port 8080`): serve is what was meant.
  const option = command.startsWith('-') ? nearest(command.replace(/^-+/, ''), Object.keys(flagOptions()), { prefixes: true }) : undefined;
  if (option !== undefined)
    throw new UsageError(`unknown command '${command}': did you mean funcrun serve --${option}? (funcrun serve --help lists the options)`);
  const meant = nearest(command.replace(/^-+/, ''), COMMANDS, { prefixes: true });
  throw new UsageError(`unknown command '${command}'${meant === undefined ? '' : `: did you mean ${meant}?`} (funcrun --help lists the commands)`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`funcrun: ${err instanceof Error ? err.message : String(err)}\n`);
  // A malformed func.yaml is bad use too, as serve answers it (exit code 2).
  process.exit(err instanceof UsageError || err instanceof ConfigError ? EXIT.USAGE : EXIT.FAILED);
});
