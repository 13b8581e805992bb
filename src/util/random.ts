// node:crypto, loaded on first use: it takes some 5 ms of a start to load, and a start needs none
// of it (ids for answered CloudEvents, span ids for traced requests, the metrics' instance id and
// the digests and tokens of idempotency come later).
import type * as Crypto from 'node:crypto';

// Loaded on first use (above): a start does not pay for it.
let crypto: typeof Crypto | undefined;

function load(): typeof Crypto {
  return (crypto ??= require('node:crypto') as typeof Crypto);
}

export function randomUUID(): string {
  return load().randomUUID();
}

export function randomFillSync<T extends NodeJS.ArrayBufferView>(buffer: T): T {
  return load().randomFillSync(buffer);
}

/**
 * The SHA-256 digest of `text`, base64url: idempotency's keys, of a fixed length and holding no
 * event's text. Of its UTF-16 code units: UTF-8 would make every lone surrogate U+FFFD, and two
 * ids one key.
 */
/** A SHA-256 hash to update piece by piece: the digest idempotency keeps of an event. */
export function sha256Hash(): Crypto.Hash {
  return load().createHash('sha256');
}

export function sha256(text: string): string {
  return load().createHash('sha256').update(text, 'utf16le').digest('base64url');
}
