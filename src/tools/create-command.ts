// `funcrun create`: a new project written into its folder, with a dependency on funcrun that
// installs whether or not funcrun is on the npm registry (this copy packed into the project when
// it may not be). The project's files, by the function contract's layouts for JavaScript and
// TypeScript, HTTP and CloudEvents, are in templates/.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { projectFiles, type ProjectOptions } from './templates/project';

export { projectFiles };
export type { Language, Template } from './templates/project';

export interface CreateOptions extends ProjectOptions {
  /**
   * How the project depends on funcrun: a version range (`^0.1.0`), any other npm specifier, or
   * `pack`: this copy of funcrun packed into the project as `funcrun-<version>.tgz`, `file:` that.
   */
  funcrun: string;
}

/** This copy of funcrun: its folder and version. */
const PACKAGE_ROOT = join(__dirname, '..', '..');
const VERSION = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * How a new project should depend on funcrun by default: a version range when this copy was
 * installed from a registry (the range then installs anywhere), else `pack` (a checkout, a
 * tarball or a link: funcrun may not be on any registry the project can reach).
 */
export function defaultDependency(): string {
  return installedFromRegistry(PACKAGE_ROOT) ? `^${VERSION}` : 'pack';
}

// npm records where each installed package came from in the install's hidden lockfile,
// node_modules/.package-lock.json (npx's cache, a project, or a global folder alike).
function installedFromRegistry(root: string): boolean {
  const at = root.indexOf(`${sep}node_modules${sep}`);
  if (at < 0) return false;
  const install = root.slice(0, at);
  try {
    const lock = JSON.parse(readFileSync(join(install, 'node_modules', '.package-lock.json'), 'utf8')) as {
      packages?: Record<string, { version?: unknown; resolved?: unknown }>;
    };
    const entry = lock.packages?.[relative(install, root).split(sep).join('/')];
    // A registry's tarball address is <registry>/funcrun/-/funcrun-<version>.tgz; a tarball
    // installed from any other address (or a file, a link, git) is not one a range can find.
    const resolved = entry?.resolved;
    return (
      entry?.version === VERSION && typeof resolved === 'string' && /^https?:\/\//.test(resolved) && resolved.endsWith(`/funcrun/-/funcrun-${VERSION}.tgz`)
    );
  } catch {
    return false;
  }
}

/** A name func.yaml, package.json and event types can carry: lowercase letters, digits and dashes. */
export function functionName(folder: string): string {
  const name = basename(resolve(folder))
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return name || 'function';
}

/** Writes the project into `folder` (created if missing; refused if not empty). Returns the files written. */
export function createProject(folder: string, options: CreateOptions): string[] {
  const root = resolve(folder);
  if (existsSync(root) && !statSync(root).isDirectory()) throw new Error(`${root} is not a folder`);
  if (existsSync(root) && readdirSync(root).length > 0) {
    throw new Error(`${root} is not empty: create a function in a new or empty folder`);
  }
  const tarball = `funcrun-${VERSION}.tgz`;
  const dependency = options.funcrun === 'pack' ? `file:${tarball}` : options.funcrun;
  const files = projectFiles(functionName(root), { ...options, funcrun: dependency });
  // Packed first, so that a failure leaves no half-written project behind.
  const packed = options.funcrun === 'pack' ? packThisCopy(tarball) : undefined;
  try {
    for (const [name, content] of Object.entries(files)) {
      const file = join(root, name);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
    if (packed === undefined) return Object.keys(files);
    copyFileSync(join(packed, tarball), join(root, tarball));
    return [...Object.keys(files), tarball];
  } finally {
    if (packed !== undefined) rmSync(packed, { recursive: true, force: true });
  }
}

// npm pack writes exactly what the registry would hold (package.json "files"); no scripts run,
// so an installed copy packs as well as a checkout. Returns the temporary folder holding it.
function packThisCopy(tarball: string): string {
  const scratch = mkdtempSync(join(tmpdir(), 'funcrun-pack-'));
  try {
    execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', scratch, PACKAGE_ROOT], { stdio: ['ignore', 'ignore', 'pipe'] });
    if (!existsSync(join(scratch, tarball))) throw new Error(`it did not write ${tarball}`);
    return scratch;
  } catch (err) {
    rmSync(scratch, { recursive: true, force: true });
    const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim();
    throw new Error(`could not pack funcrun into the project with npm pack: ${stderr || (err as Error).message}`);
  }
}
