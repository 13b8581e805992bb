// The folder a server's temporary upload files go in, one per server: made (mode 0700) when first
// needed, made again if something removes it, removed when the server closes. It keeps the
// server's budget of bytes on disk, and sweeps away the folders of funcrun processes that died
// without removing theirs (a SIGKILL, an OOM kill).
import { mkdtempSync, promises as files, rmSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { runtimeError, type HttpError } from '../errors';

// A folder's name carries its process's id, so that a later process can tell whether it is orphaned.
const PREFIX = 'funcrun-uploads-';
// mkdtemp's six characters after the prefix and the pid.
const ORPHAN = /^funcrun-uploads-([1-9]\d{0,9})-[A-Za-z0-9]{6}$/;
// Seconds a client waits before it sends again: files of requests in flight are removed as they end.
const DISK_RETRY = '5';

/** The folder temporary files go in: made under `parent`, and only ever written by funcrun. */
export class UploadFolder {
  #path: string | undefined;
  #count = 0;
  #held = 0;
  #madeOne = false;

  /** `diskLimit`: bytes of temporary files this server holds at once, across its requests. */
  constructor(
    readonly parent: string,
    readonly diskLimit: number,
  ) {}

  /** A new file name in the folder: a counter, never anything the client sent. */
  next(): string {
    if (this.#path === undefined) {
      this.#path = mkdtempSync(join(this.parent, `${PREFIX}${process.pid}-`));
      if (!this.#madeOne) {
        this.#madeOne = true;
        // However the process ends short of closing its server, the folder goes with it.
        process.once('exit', () => this.remove());
        // When the first file needs a folder: a server that never writes one never reads the parent.
        void sweepOrphans(this.parent, this.#path);
      }
    }
    return join(this.#path, String(++this.#count));
  }

  /**
   * Opening `path` failed with ENOENT: its folder is gone (a temporary-file cleaner removed it).
   * A new folder is made, once however many requests find the old one gone, and a name in it given.
   */
  renew(path: string): string {
    if (dirname(path) === this.#path) this.#path = undefined;
    return this.next();
  }

  /** Takes `bytes` of the disk budget, or throws the 503 that says it is spent. */
  take(bytes: number): void {
    if (this.#held + bytes > this.diskLimit) {
      throw diskFull(`the temporary upload files would pass the limit of ${this.diskLimit} bytes (uploadDiskLimit)`);
    }
    this.#held += bytes;
  }

  /** Gives back what removed files held. */
  release(bytes: number): void {
    this.#held -= bytes;
  }

  /** Removes the folder and whatever is left in it (files of requests cut short at shutdown). */
  remove(): void {
    if (this.#path === undefined) return;
    rmSync(this.#path, { recursive: true, force: true });
    this.#path = undefined;
  }
}

/** The 503 for a disk budget spent or a disk full: the client may send again shortly. */
export function diskFull(message: string): HttpError {
  return runtimeError('FUNCRUN_UPLOAD_DISK_FULL', message, { headers: { 'retry-after': DISK_RETRY } });
}

/** A full disk or quota (ENOSPC, EDQUOT) is a 503 with Retry-After; any other error is as it was. */
export function onFullDisk(err: unknown): never {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') throw diskFull(`the disk has no room for temporary upload files (${code})`);
  throw err;
}

/**
 * Removes the folders under `parent` that funcrun processes since dead left behind: only
 * directories (never through a link: lstat) named as funcrun names them, owned by this user, whose
 * process is gone. Never rejects; a folder it cannot read or remove stays.
 */
async function sweepOrphans(parent: string, own: string): Promise<void> {
  let names: string[];
  try {
    names = await files.readdir(parent);
  } catch {
    return;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    const pid = ORPHAN.exec(name)?.[1];
    if (pid === undefined || name === basename(own)) continue;
    const path = join(parent, name);
    try {
      const stat = await files.lstat(path);
      if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid) || !ownerGone(Number(pid), stat)) continue;
      await files.rm(path, { recursive: true, force: true });
    } catch {
      // Gone already, or not ours to remove: left as it is.
    }
  }
}

/** Whether the process that made a folder is gone. */
function ownerGone(pid: number, folder: Stats): boolean {
  // This process's id: a folder last changed before it started was made by an earlier process
  // that had the same id (a restarted container's funcrun is pid 1 again); its own are newer.
  if (pid === process.pid) return folder.ctimeMs < performance.timeOrigin;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    // EPERM: alive, another user's.
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
