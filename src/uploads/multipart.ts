// multipart/form-data bodies (RFC 7578), read with @fastify/busboy, a maintained streaming parser:
// fields become an object as a form's do, files are kept in memory while small and written to
// temporary files past that (uploads.ts). Every limit is checked as the bytes arrive, and the
// first one passed ends the reading: the rest of the body is never read.
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { BusboyHeaders } from '@fastify/busboy';
import { HttpError, runtimeError } from '../errors';
import { addField, bodyIncomplete, decodeText, tooLarge } from '../body/body';
import { paramCount } from '../body/media-type';
import { Receiving, UploadedFile, type Uploads } from './uploads';
import { Chunks } from '../body/chunks';
import { quoteName } from '../routing/schema';

// What a media type is made of: printable ASCII.
const NOT_PRINTABLE_ASCII = /[^\x20-\x7e]/;

export interface MultipartLimits {
  /** The whole body, in bytes (uploadLimit). */
  body: number;
  fileSize: number;
  files: number;
  fields: number;
  fieldSize: number;
  /**
   * The fields' names and values and the files' names and types together, held in memory as a
   * parsed body is (the larger of bodyLimit and fieldSizeLimit).
   */
  fieldsTogether: number;
  partHeader: number;
}

export { MULTIPART } from '../body/media-type';

type BusboyModule = typeof import('@fastify/busboy').default;
// Loaded on the first multipart body: a start, and a function that takes none, never pay for it.
let busboy: BusboyModule | undefined;

function newParser(options: Parameters<BusboyModule>[0]): Parser {
  busboy ??= require('@fastify/busboy') as BusboyModule;
  return busboy(options);
}

// The parser counts as header the line break after a part's boundary (2 bytes) and, when a read
// ends inside the blank line that closes a header, what of it was read (up to 3); and a header
// that reaches its limit as over it (1). The limit it is given is the setting and these bytes, so
// no header within the setting is refused, however the body was cut into reads.
const HEADER_SLACK = 6;

type Fields = Record<string, string | string[]>;

/** Reads a multipart body: resolves with its fields, its files added to `uploads`. */
export function readMultipart(req: IncomingMessage, limits: MultipartLimits, uploads: Uploads): Promise<Fields> {
  return new Promise((resolve, reject) => {
    if (paramCount(req.headers['content-type']!, 'boundary') > 1) throw invalid('the Content-Type has more than one boundary');
    new MultipartReader(req, limits, uploads, { resolve, reject }).start();
  });
}

/** The parser for `req`'s body, its limits from `limits`. */
function parserFor(req: IncomingMessage, limits: MultipartLimits): Parser {
  try {
    return newParser({
      headers: req.headers as BusboyHeaders,
      // Every part comes as a stream: a part with a filename is a file, any other is a field.
      isPartAFile: () => true,
      // One part past both limits: a field or a file there is refused by its own limit, by name.
      limits: { parts: limits.files + limits.fields + 1, headerSize: limits.partHeader + HEADER_SLACK, fieldSize: Infinity, fileSize: Infinity },
    });
  } catch {
    throw invalid('the Content-Type has no boundary');
  }
}

/**
 * One body being read: the request's bytes go to the parser, and the parser's parts to the fields
 * or to `uploads`. Its methods are the request's and the parser's event handlers; the first
 * failure ends everything (no more bytes read, every part's stream destroyed) and rejects.
 */
class MultipartReader {
  readonly #fields: Fields = {};
  readonly #parser: Parser;
  /** Parts whose streams are still open, to destroy on a failure. */
  readonly #parts = new Set<Readable>();
  /** The body's bytes so far. */
  #received = 0;
  #fieldCount = 0;
  /** The fields' names and values, and the files' names and types: what is held in memory of them. */
  #heldBytes = 0;
  /** Parts given to the function, and parts still being read; the parser has parsed to the end. */
  #taken = 0;
  #reading = 0;
  #parsed = false;
  #failed = false;

  constructor(
    private readonly req: IncomingMessage,
    private readonly limits: MultipartLimits,
    private readonly uploads: Uploads,
    private readonly settle: { resolve(fields: Fields): void; reject(err: unknown): void },
  ) {
    this.#parser = parserFor(req, limits);
  }

  start(): void {
    const parser = this.#parser;
    watchPartHeaders(parser, () =>
      this.#fail(overLimit('FUNCRUN_PART_HEADER_TOO_LARGE', 'a part header is larger than', this.limits.partHeader, 'partHeaderLimit')),
    );
    parser.on('file', this.#onPart);
    parser.on('partsLimit', () =>
      this.#fail(
        overLimit('FUNCRUN_TOO_MANY_PARTS', 'the body has more parts than fields and files allowed', this.limits.files + this.limits.fields, 'fieldsLimit'),
      ),
    );
    parser.on('error', (err: Error) => this.#fail(invalid(reasonOf(err))));
    parser.on('finish', this.#onFinish);
    parser.on('drain', this.#onDrain);
    this.req.on('data', this.#onData);
    this.req.on('end', this.#onEnd);
    this.req.on('close', this.#onClose);
  }

  // The request's bytes go to the parser as they come, counted against the body limit; the
  // parser's backpressure pauses the request.
  readonly #onData = (chunk: Buffer): void => {
    if ((this.#received += chunk.length) > this.limits.body) return this.#fail(tooLarge(this.limits.body, 'uploadLimit'));
    if (!this.#parser.write(chunk)) this.req.pause();
  };

  readonly #onDrain = (): void => {
    if (!this.#failed) this.req.resume();
  };

  readonly #onEnd = (): void => {
    this.#parser.end();
  };

  // 'close' follows the end too; before it, the client went away.
  readonly #onClose = (): void => {
    if (!this.req.complete) this.#fail(bodyIncomplete());
  };

  readonly #onPart = (name: string | undefined, stream: Readable, filename: string | undefined, _encoding: string, type: string): void => {
    // The parser emits a part's errors on its stream: read or not, one is never unheard (a crash).
    stream.on('error', ignore);
    if (this.#failed) return void stream.resume();
    this.#taken++;
    if (name === undefined) {
      stream.resume();
      return this.#fail(invalid('a part has no name'));
    }
    // The parser decodes a name and a filename as UTF-8 with replacement: U+FFFD there stands for
    // bytes that are not UTF-8, refused as a field's value is. A type is read byte for byte (Latin-1).
    if (name.includes('\ufffd') || filename?.includes('\ufffd')) {
      stream.resume();
      return this.#fail(runtimeError('FUNCRUN_INVALID_TEXT', `part ${quoteName(name)}: its name or filename is not valid UTF-8`));
    }
    if (NOT_PRINTABLE_ASCII.test(type)) {
      stream.resume();
      return this.#fail(invalid(`part ${quoteName(name)}: its Content-Type is not a media type`));
    }
    this.#parts.add(stream);
    this.#reading++;
    if (filename === undefined) this.#readField(stream, name);
    else this.#readFile(stream, name, filename, type);
  };

  readonly #onFinish = (): void => {
    this.#parsed = true;
    // The parser skips a part that is not form-data with a name (no Content-Disposition, a line
    // break inside a header): one the function would never see is a malformed body, not a lost part.
    if (this.#taken < partsSeen(this.#parser)) return this.#fail(invalid('a part is not form-data with a name'));
    // The last file may still be being written.
    if (this.#reading === 0) this.#done();
  };

  // A field's bytes, by listeners rather than an async iterator: forms can have thousands of fields.
  #readField(stream: Readable, name: string): void {
    const { limits } = this;
    if (++this.#fieldCount > limits.fields)
      return this.#fail(overLimit('FUNCRUN_TOO_MANY_FIELDS', 'the body has more fields than', limits.fields, 'fieldsLimit'));
    // Its name is held as its value is (a key of the fields): counted before a byte of the value.
    if (!this.#hold(Buffer.byteLength(name))) return;
    const chunks = new Chunks();
    stream.on('data', (chunk: Buffer) => {
      if (chunks.size + chunk.length > limits.fieldSize)
        return this.#fail(overLimit('FUNCRUN_FIELD_TOO_LARGE', `field ${quoteName(name)} is larger than`, limits.fieldSize, 'fieldSizeLimit'));
      if (this.#hold(chunk.length)) chunks.add(chunk);
    });
    stream.on('end', () => this.#fieldRead(stream, name, chunks));
  }

  #fieldRead(stream: Readable, name: string, chunks: Chunks): void {
    if (this.#failed) return;
    const bytes = chunks.bytes();
    try {
      addField(this.#fields, name, decodeText(bytes, undefined));
    } catch {
      return this.#fail(runtimeError('FUNCRUN_INVALID_TEXT', `field ${quoteName(name)} is not valid UTF-8`));
    }
    this.#partDone(stream);
  }

  #readFile(stream: Readable, name: string, filename: string, type: string): void {
    const { limits, uploads } = this;
    if (uploads.files.length === limits.files)
      return this.#fail(overLimit('FUNCRUN_TOO_MANY_FILES', 'the body has more files than', limits.files, 'filesLimit'));
    // A file's names and type stay in memory with it (UploadedFile), as a field's name does.
    if (!this.#hold(Buffer.byteLength(name) + Buffer.byteLength(filename) + Buffer.byteLength(type))) return;
    const file = new UploadedFile(name, filename, type);
    uploads.files.push(file);
    const receiving = this.#receiveFile(stream, new Receiving(file, uploads)).then(
      () => this.#partDone(stream),
      (err: unknown) => this.#fail(err),
    );
    uploads.writing.push(receiving);
  }

  async #receiveFile(stream: Readable, receiving: Receiving): Promise<void> {
    const { fileSize } = this.limits;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        if (receiving.file.size + chunk.length > fileSize)
          throw overLimit('FUNCRUN_FILE_TOO_LARGE', `file ${quoteName(receiving.file.field)} is larger than`, fileSize, 'fileSizeLimit');
        await receiving.add(chunk);
      }
    } finally {
      await receiving.close();
    }
  }

  // Counts bytes the body makes funcrun hold in memory besides files; false (and the 413) past the bound.
  #hold(bytes: number): boolean {
    const { limits } = this;
    if ((this.#heldBytes += bytes) <= limits.fieldsTogether) return true;
    this.#fail(overLimit('FUNCRUN_FIELD_TOO_LARGE', 'the fields and names together are larger than', limits.fieldsTogether, fieldsTogetherSetting(limits)));
    return false;
  }

  #partDone(stream: Readable): void {
    this.#parts.delete(stream);
    if (--this.#reading === 0 && this.#parsed) this.#done();
  }

  #done(): void {
    if (!this.#failed) this.settle.resolve(this.#fields);
  }

  // The first failure ends everything: no more bytes read, every part's stream destroyed.
  #fail(err: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#stopReading();
    for (const part of this.#parts) part.destroy();
    this.settle.reject(err);
  }

  #stopReading(): void {
    this.req.pause();
    this.req.removeListener('data', this.#onData);
    this.req.removeListener('end', this.#onEnd);
    this.req.removeListener('close', this.#onClose);
    this.#parser.removeListener('drain', this.#onDrain);
  }
}

function ignore(): void {}

/** The setting that bounds the fields together: the larger of the two. */
function fieldsTogetherSetting(limits: MultipartLimits): string {
  return limits.fieldsTogether === limits.fieldSize ? 'fieldSizeLimit' : 'bodyLimit';
}

/** A 413 naming the limit passed and the setting that sets it. */
function overLimit(code: Parameters<typeof runtimeError>[0], what: string, limit: number, setting: string): HttpError {
  const unit = code === 'FUNCRUN_TOO_MANY_FILES' || code === 'FUNCRUN_TOO_MANY_FIELDS' || code === 'FUNCRUN_TOO_MANY_PARTS' ? '' : ' bytes';
  const limitText = unit === '' ? `${what} ${limit}` : `${what} the limit of ${limit}${unit}`;
  return runtimeError(code, `${limitText} (${setting})`, { details: { limit, setting } });
}

function invalid(reason: string): HttpError {
  return runtimeError('FUNCRUN_INVALID_MULTIPART', `malformed multipart/form-data body: ${reason}`);
}

// The parser's own words for what is wrong, when they are known ones; never anything of the body.
const REASONS: Record<string, string> = {
  'Unexpected end of multipart data': 'it ends before its closing boundary',
  'Malformed part header': 'a part header is malformed',
};

function reasonOf(err: Error): string {
  return (Object.hasOwn(REASONS, err.message) ? REASONS[err.message] : undefined) ?? 'it does not parse';
}

type Parser = ReturnType<BusboyModule>;

/** How many parts the parser has met, taken or skipped: @fastify/busboy keeps the count, not saying it. */
function partsSeen(parser: Parser): number {
  return (parser as unknown as { _parser?: { _nparts?: number } })._parser?._nparts ?? 0;
}

interface HeaderParser {
  maxed: boolean;
  push(data: Buffer): unknown;
  _finish(): void;
}

/**
 * Calls `cut` when a part header reaches the parser's header size limit. @fastify/busboy cuts such
 * a header short without saying so (its parts would reach the function with names cut off), so
 * its header parser is watched: at each push, and as each header ends, before it forgets.
 */
function watchPartHeaders(parser: Parser, cut: () => void): void {
  const headers = (parser as unknown as { _parser?: { parser?: { _hparser?: HeaderParser } } })._parser?.parser?._hparser;
  if (typeof headers?.push !== 'function' || typeof headers._finish !== 'function') throw new Error('@fastify/busboy has no part header parser to watch');
  const { push, _finish: finish } = headers;
  headers.push = function (this: HeaderParser, data: Buffer) {
    const used = push.call(this, data);
    if (this.maxed) cut();
    return used;
  };
  headers._finish = function (this: HeaderParser) {
    if (this.maxed) cut();
    finish.call(this);
  };
}
