// Bytes as they arrive, held until they are read whole: counted by the limits in bytes, so each
// must cost about its bytes. A chunk of a body sent in chunks of one byte is a Buffer of its own,
// some hundreds of bytes of object for each byte (1 MiB of body held 600 MB): small chunks are
// copied together into blocks. A chunk that is a view of a much larger buffer (node's read of the
// socket) would keep all of that: it is copied out too. A body that comes in one chunk, as most
// do, is kept as it came: nothing is copied until a second one arrives.
const BLOCK = 16 * 1024;
const SMALL = 1024;

export class Chunks {
  /** The only chunk so far, as it came. */
  #first: Buffer | undefined = undefined;
  /** The bytes so far, in order, in buffers of their own (the last block once sealed). */
  #list: Buffer[] = [];
  #block: Buffer | undefined = undefined;
  #used = 0;
  /** Bytes added so far. */
  size = 0;

  add(chunk: Buffer): void {
    if (this.size === 0 && this.#list.length === 0 && this.#first === undefined) {
      this.#first = chunk;
      this.size = chunk.length;
      return;
    }
    if (this.#first !== undefined) {
      const first = this.#first;
      this.#first = undefined;
      this.#hold(first);
    }
    this.size += chunk.length;
    this.#hold(chunk);
  }

  /** Every byte, as one Buffer. */
  bytes(): Buffer {
    if (this.#first !== undefined) return this.#first;
    this.#seal();
    return this.#list.length === 1 ? this.#list[0] : Buffer.concat(this.#list, this.size);
  }

  /** The buffers, in order, handed over: none is held here any more. */
  take(): Buffer[] {
    const list = this.#first !== undefined ? [this.#first] : (this.#seal(), this.#list);
    this.#first = undefined;
    this.#list = [];
    this.size = 0;
    return list;
  }

  #hold(chunk: Buffer): void {
    const view = chunk.byteLength * 2 < chunk.buffer.byteLength;
    if (chunk.length < SMALL || (view && chunk.length < BLOCK)) return this.#copy(chunk);
    this.#seal();
    this.#list.push(view ? ownCopy(chunk) : chunk);
  }

  #copy(chunk: Buffer): void {
    if (this.#block === undefined || this.#used + chunk.length > this.#block.length) {
      this.#seal();
      this.#block = Buffer.allocUnsafeSlow(BLOCK);
    }
    chunk.copy(this.#block, this.#used);
    this.#used += chunk.length;
  }

  #seal(): void {
    if (this.#block === undefined) return;
    this.#list.push(this.#block.subarray(0, this.#used));
    this.#block = undefined;
    this.#used = 0;
  }
}

/** A copy in memory of its own (not node's pool, whose slab a kept slice would keep whole). */
function ownCopy(chunk: Buffer): Buffer {
  const copy = Buffer.allocUnsafeSlow(chunk.length);
  chunk.copy(copy);
  return copy;
}
