// A decoded view of a text: its characters, folded, each mapped back to the [from, to) of the text
// it came from, so that a secret found in a view is masked where it stands in the text. The
// decoders (decoders.ts, hex-runs.ts) build on `decoded`; `utf8` reads the bytes their escapes
// stand for. In a text cut short (a peer's answer read up to a cap, an excerpt's window), an escape
// or a UTF-8 sequence the cut left unfinished is left out of the view, and where it began is kept
// (`dropped`): the cut rule, that a secret whose start runs to the cut is masked to the text's end.
import { FOLD } from './matcher';

/** A decoded view of a text: its characters (folded) and, for each, the [from, to) it came from. */
export interface View {
  codes: Uint16Array;
  from: Int32Array | undefined; // undefined: one to one
  to: Int32Array | undefined;
  /**
   * In a cut text (`cut`): where, in the original text, an escape that the cut left unfinished
   * begins (`%4`, `\u00`, `&#6`, the first bytes of a UTF-8 sequence); the view stops before it.
   */
  dropped?: number;
}

export type Emit = (code: number, from: number, to: number) => void;

/**
 * Builds a decoded view; `emit(code, from, to)` in the source view's indices. `decode` returns the
 * source index where it stopped before an escape the cut left unfinished, if it did.
 */
export function decoded(source: View, decode: (codes: Uint16Array, emit: Emit) => number | void): View {
  const n = source.codes.length;
  const codes = new Uint16Array(n);
  const from = new Int32Array(n);
  const to = new Int32Array(n);
  let k = 0;
  const emit = (code: number, start: number, end: number) => {
    // In the original text's indices: the views are one decoding over another.
    const f = source.from === undefined ? start : source.from[start];
    const t = source.to === undefined ? end : source.to[end - 1];
    if (code > 0xffff) {
      code -= 0x10000;
      codes[k] = 0xd800 + (code >> 10);
      from[k] = f;
      to[k++] = t;
      code = 0xdc00 + (code & 0x3ff);
    }
    codes[k] = FOLD[code];
    from[k] = f;
    to[k++] = t;
  };
  const stop = decode(source.codes, emit);
  const view: View = { codes: codes.subarray(0, k), from: from.subarray(0, k), to: to.subarray(0, k) };
  if (typeof stop === 'number') view.dropped = source.from === undefined ? stop : source.from[stop];
  else if (source.dropped !== undefined) view.dropped = source.dropped;
  return view;
}

/** Whether `codes` from `at` to its end are fewer than `count` hex digits: an escape's digits the cut left unfinished. */
export function hexTail(codes: Uint16Array, at: number, count: number): boolean {
  if (codes.length - at >= count) return false;
  for (let i = at; i < codes.length; i++) if (hexDigit(codes[i]) < 0) return false;
  return true;
}

export function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57; // codes are folded: no upper case
  return -1;
}

export function hex(codes: Uint16Array, at: number, count: number): number {
  if (at + count > codes.length) return -1;
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const d = hexDigit(codes[i]);
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

/**
 * Emits `bytes` (each escape at `at[k]`, `width` long) decoded as UTF-8. With `atEnd` (they end a
 * cut text), a sequence they end in the middle of is left out: returns where it begins.
 */
export function utf8(bytes: number[], at: number[], width: number | number[], atEnd: boolean, emit: Emit): number | undefined {
  const end = (k: number) => at[k] + (typeof width === 'number' ? width : width[k]);
  for (let k = 0; k < bytes.length;) {
    const b = bytes[k];
    const length = b < 0x80 ? 1 : b >> 5 === 6 ? 2 : b >> 4 === 14 ? 3 : b >> 3 === 30 ? 4 : 0;
    let cp = length === 2 ? b & 0x1f : length === 3 ? b & 0x0f : b & 0x07;
    let valid = length > 0;
    for (let m = 1; valid && m < length && k + m < bytes.length; m++) {
      if (bytes[k + m] >> 6 !== 2) valid = false;
      else cp = (cp << 6) | (bytes[k + m] & 0x3f);
    }
    // Every byte there is continues the sequence, and the cut took the rest.
    if (atEnd && valid && k + length > bytes.length) return at[k];
    const ok = valid && k + length <= bytes.length;
    if (length === 1) cp = b;
    if (!ok || cp > 0x10ffff) {
      emit(b, at[k], end(k));
      k++;
    } else {
      emit(cp, at[k], end(k + length - 1));
      k += length;
    }
  }
  return undefined;
}
