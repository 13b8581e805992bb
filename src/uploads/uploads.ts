// Uploaded files: what a function reads of them (UploadedFile), one being received (Receiving),
// and a request's files (Uploads), removed together when its invocation ends, however it ends. The
// folder their temporary files go in, and its disk budget, are the server's (upload-folder.ts).
import { createReadStream, openSync, promises as files } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { onFullDisk, type UploadFolder } from './upload-folder';
import { Chunks } from '../body/chunks';

/**
 * What the runtime keeps of a file, which a function only reads through its methods: filled in
 * by this module as the bytes arrive, and by no other module.
 */
interface FileState {
  // In memory while small; past the memory limit, in a temporary file.
  chunks: Chunks;
  path: string | undefined;
  // Streams opened on the temporary file: closed when the invocation ends, read or not.
  streams: Readable[] | undefined;
}

/** The key of a file's state: not exported, and an accessor on the prototype (see context.ts's STATE). */
const STATE = Symbol('funcrun.upload.state');

/** A file of a multipart/form-data body. Its temporary file, if it has one, is gone once the invocation ends. */
export class UploadedFile {
  /** The form field it was sent under. */
  readonly field: string;
  /** The name the client gave it, without any folders: data to show, never a path to write to. */
  readonly filename: string;
  /** Its media type as sent (`text/plain` when the part says none, as RFC 7578 has it). */
  readonly type: string;
  /** Its size in bytes. */
  readonly size: number = 0;
  readonly #state: FileState = { chunks: new Chunks(), path: undefined, streams: undefined };

  constructor(field: string, filename: string, type: string) {
    this.field = field;
    this.filename = filename;
    this.type = type;
  }

  /** The file's bytes. */
  async bytes(): Promise<Buffer> {
    const { path, chunks } = this.#state;
    if (path !== undefined) return files.readFile(path);
    return chunks.bytes();
  }

  /** The file's bytes as UTF-8 text. */
  async text(): Promise<string> {
    return (await this.bytes()).toString('utf8');
  }

  /** The file's bytes as a stream: read from disk as it is read, for a file of any size. */
  stream(): Readable {
    const state = this.#state;
    if (state.path === undefined) return Readable.from([state.chunks.bytes()], { objectMode: false });
    // Opened now, not when first read: the stream outlives the file's name, which goes before the answer.
    const stream = createReadStream('', { fd: openSync(state.path, 'r') });
    (state.streams ??= []).push(stream);
    return stream;
  }

  /** The file's state, for this module: see STATE. */
  get [STATE](): FileState {
    return this.#state;
  }
}

function keep(file: UploadedFile, chunk: Buffer): void {
  grow(file, chunk.length);
  file[STATE].chunks.add(chunk);
}

// Read-only to the function, counted here as the bytes arrive.
function grow(file: UploadedFile, bytes: number): void {
  (file as { size: number }).size += bytes;
}

/** The chunks held in memory, handed over (to the temporary file) and no longer held. */
function heldOf(file: UploadedFile): Buffer[] {
  const state = file[STATE];
  return state.chunks.take();
}

function closeStreams(file: UploadedFile): void {
  const state = file[STATE];
  for (const stream of state.streams ?? []) stream.destroy();
  state.streams = undefined;
}

function streaming(file: UploadedFile): boolean {
  return file[STATE].streams?.some((stream) => !stream.destroyed) === true;
}

/** One file being received: into memory, then into its temporary file once past the memory limit. */
export class Receiving {
  #handle: FileHandle | undefined;
  #path: string | undefined;

  constructor(
    readonly file: UploadedFile,
    private readonly uploads: Uploads,
  ) {}

  /** Adds a chunk; resolves once it is kept (written, when the file is on disk). */
  async add(chunk: Buffer): Promise<void> {
    if (this.#handle !== undefined) {
      grow(this.file, chunk.length);
      this.uploads.take(chunk.length);
      await this.#handle.write(chunk).catch(onFullDisk);
      return;
    }
    keep(this.file, chunk);
    if (this.file.size > this.uploads.memoryLimit) await this.#spill();
  }

  async #spill(): Promise<void> {
    // The bytes held so far are counted before the file is made: past the budget, no file at all.
    this.uploads.take(this.file.size);
    this.#handle = await this.#open().catch(onFullDisk);
    for (const held of heldOf(this.file)) await this.#handle.write(held).catch(onFullDisk);
  }

  async #open(): Promise<FileHandle> {
    const folder = this.uploads.folder;
    try {
      return await this.#create(folder.next());
    } catch (err) {
      // The folder was removed under the server (a temporary-file cleaner): made again, tried once more.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || this.#path === undefined) throw err;
      return this.#create(folder.renew(this.#path));
    }
  }

  async #create(path: string): Promise<FileHandle> {
    // Listed before it exists, so that whatever happens next, removal finds it.
    this.uploads.paths.push(path);
    this.#path = path;
    // 'wx': a new file, never one that is there; 0600: readable by funcrun's user only.
    return files.open(path, 'wx', 0o600);
  }

  /** The file is complete (or abandoned): its temporary file, if any, is closed. */
  async close(): Promise<void> {
    const handle = this.#handle;
    this.#handle = undefined;
    await handle?.close();
    if (this.#path !== undefined) this.file[STATE].path = this.#path;
  }
}

/** A request's uploaded files: every temporary file made for it is removed by remove(). */
export class Uploads {
  readonly files: UploadedFile[] = [];
  /** Temporary files made for this request. */
  readonly paths: string[] = [];
  /** Work still writing files: remove() waits for it, so no file is made after it ran. */
  readonly writing: Promise<unknown>[] = [];
  #removed: Promise<void> | undefined;
  /** Bytes of the folder's disk budget this request's files hold: given back once they are removed. */
  #onDisk = 0;

  constructor(
    readonly folder: UploadFolder,
    readonly memoryLimit: number,
  ) {}

  /** Counts bytes about to be written against the server's disk budget; throws its 503 past it. */
  take(bytes: number): void {
    this.folder.take(bytes);
    this.#onDisk += bytes;
  }

  /**
   * Removes every temporary file; never rejects. Resolves once they are gone. Their bytes go back
   * to the disk budget then, unless a stream still reads one (a file returned as the answer, to a
   * client that reads slowly or not at all): the disk keeps its bytes until end() closes it.
   */
  remove(): Promise<void> {
    return (this.#removed ??= Promise.allSettled(this.writing).then(() =>
      Promise.allSettled(this.paths.map((path) => files.unlink(path))).then(() => {
        if (!this.files.some(streaming)) this.#giveBack();
      }),
    ));
  }

  /** The invocation has ended: files removed, and streams on them that are still open closed. */
  end(): Promise<void> {
    for (const file of this.files) closeStreams(file);
    return this.remove().then(() => this.#giveBack());
  }

  #giveBack(): void {
    this.folder.release(this.#onDisk);
    this.#onDisk = 0;
  }
}
