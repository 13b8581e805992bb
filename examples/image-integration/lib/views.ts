// The decoded views a text is searched in: JSON escapes, percent-encoding, HTML references, `\x`
// and octal escapes, and hex spaced by bytes undone (up to three layers), each character mapped
// back to where it came from.
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

type Emit = (code: number, from: number, to: number) => void;

/**
 * Builds a decoded view; `emit(code, from, to)` in the source view's indices. `decode` returns the
 * source index where it stopped before an escape the cut left unfinished, if it did.
 */
function decoded(source: View, decode: (codes: Uint16Array, emit: Emit) => number | void): View {
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
function hexTail(codes: Uint16Array, at: number, count: number): boolean {
  if (codes.length - at >= count) return false;
  for (let i = at; i < codes.length; i++) if (hexDigit(codes[i]) < 0) return false;
  return true;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57; // codes are folded: no upper case
  return -1;
}

function hex(codes: Uint16Array, at: number, count: number): number {
  if (at + count > codes.length) return -1;
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const d = hexDigit(codes[i]);
    if (d < 0) return -1;
    value = value * 16 + d;
  }
  return value;
}

const JSON_ESCAPES: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09 };

/** JSON string escapes: `\"`, `\\`, `\/`, `\n`..., and `\u0026` (Go writes <, > and & so); also `\u{26}`. */
function jsonView(source: View, cut: boolean): View | undefined {
  if (source.codes.indexOf(0x5c) === -1) return undefined;
  return decoded(source, (codes, emit) => {
    for (let i = 0; i < codes.length;) {
      if (codes[i] === 0x5c) {
        if (i + 1 === codes.length) {
          if (cut) return i;
        } else if (codes[i + 1] === 0x75 && codes[i + 2] === 0x7b) {
          // `\u{1F600}`: ECMAScript's, Rust's and Swift's escape of a code point.
          let j = i + 3;
          let cp = 0;
          while (j < codes.length && j < i + 9 && hexDigit(codes[j]) >= 0) cp = cp * 16 + hexDigit(codes[j++]);
          if (j > i + 3 && codes[j] === 0x7d && cp <= 0x10ffff) {
            emit(cp, i, j + 1);
            i = j + 1;
            continue;
          }
          if (cut && j === codes.length) return i;
        } else if (codes[i + 1] === 0x75) {
          const unit = hex(codes, i + 2, 4);
          if (unit >= 0) {
            emit(unit, i, i + 6);
            i += 6;
            continue;
          }
          if (cut && hexTail(codes, i + 2, 4)) return i;
        } else if (JSON_ESCAPES[codes[i + 1]] !== undefined) {
          emit(JSON_ESCAPES[codes[i + 1]], i, i + 2);
          i += 2;
          continue;
        }
      }
      emit(codes[i], i, i + 1);
      i++;
    }
  });
}

/** Percent-encoding, upper or lower case, of UTF-8; with `plus`, `+` is a space (forms, query strings). */
function percentView(source: View, plus: boolean, cut: boolean): View | undefined {
  if (plus ? source.codes.indexOf(0x2b) === -1 : source.codes.indexOf(0x25) === -1) return undefined;
  return bytesView(source, {
    width: 3,
    byteAt: (codes, i) => (codes[i] === 0x25 ? hex(codes, i + 1, 2) : -1),
    unfinished: (codes, i) => codes[i] === 0x25 && hexTail(codes, i + 1, 2),
    plus,
    cut,
  });
}

const isOctal = (c: number) => c >= 0x30 && c <= 0x37;

/** An octal escape's byte (`\303`: three digits, at most `\377`) at i, or -1. */
function octalAt(codes: Uint16Array, i: number): number {
  if (codes[i] !== 0x5c || i + 3 >= codes.length || !isOctal(codes[i + 1]) || !isOctal(codes[i + 2]) || !isOctal(codes[i + 3]) || codes[i + 1] > 0x33)
    return -1;
  return (codes[i + 1] - 0x30) * 64 + (codes[i + 2] - 0x30) * 8 + (codes[i + 3] - 0x30);
}

/**
 * `\xHH` and `\ooo` escapes of bytes, as Go's `%q`, Python's `repr()` and C write the bytes they
 * cannot print: UTF-8 beyond ASCII (`\xc3\xa9`, `\303\251`), and the NULs of UTF-16 (`p\x00a\x00`).
 */
function hexEscapeView(source: View, cut: boolean): View | undefined {
  if (source.codes.indexOf(0x5c) === -1) return undefined;
  return bytesView(source, {
    width: 4,
    byteAt: (codes, i) => (codes[i] === 0x5c && codes[i + 1] === 0x78 ? hex(codes, i + 2, 2) : octalAt(codes, i)),
    unfinished: (codes, i) =>
      codes[i] === 0x5c &&
      (i + 1 === codes.length || (codes[i + 1] === 0x78 && hexTail(codes, i + 2, 2)) || (codes.length - i < 4 && [...codes.subarray(i + 1)].every(isOctal))),
    plus: false,
    cut,
  });
}

interface ByteEscapes {
  /** Characters an escape takes. */
  width: number;
  /** The byte an escape at i stands for, or -1. */
  byteAt: (codes: Uint16Array, i: number) => number;
  /** Whether an escape at i is one the text's end cut short. */
  unfinished: (codes: Uint16Array, i: number) => boolean;
  /** `+` is a space. */
  plus: boolean;
  cut: boolean;
}

/**
 * A view where each run of escaped bytes is decoded as UTF-8; a byte that starts no valid sequence
 * stands for itself. In a cut text, an escape or a UTF-8 sequence the end cut short is left out.
 */
function bytesView(source: View, { width, byteAt, unfinished, plus, cut }: ByteEscapes): View {
  return decoded(source, (codes, emit) => {
    const bytes: number[] = [];
    const at: number[] = [];
    for (let i = 0; i < codes.length;) {
      const c = codes[i];
      if (c === 0x2b && plus) {
        emit(0x20, i, i + 1);
        i++;
        continue;
      }
      if (byteAt(codes, i) < 0) {
        if (cut && unfinished(codes, i)) return i;
        emit(c, i, i + 1);
        i++;
        continue;
      }
      bytes.length = 0;
      at.length = 0;
      for (let b = byteAt(codes, i); i < codes.length && b >= 0; b = byteAt(codes, i)) {
        bytes.push(b);
        at.push(i);
        i += width;
      }
      const atEnd = cut && (i >= codes.length || unfinished(codes, i));
      const stop = utf8(bytes, at, width, atEnd, emit);
      if (stop !== undefined) return stop;
    }
  });
}

/**
 * Emits `bytes` (each escape at `at[k]`, `width` long) decoded as UTF-8. With `atEnd` (they end a
 * cut text), a sequence they end in the middle of is left out: returns where it begins.
 */
function utf8(bytes: number[], at: number[], width: number | number[], atEnd: boolean, emit: Emit): number | undefined {
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

const isAlnum = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a); // folded

/** Where a byte written in hex at i ends (`6b`, `0x6b`), or -1. */
function hexByteEnd(codes: Uint16Array, i: number): number {
  if (codes[i] === 0x30 && codes[i + 1] === 0x78 && hex(codes, i + 2, 2) >= 0) return i + 4;
  return hex(codes, i, 2) >= 0 ? i + 2 : -1;
}

/** Where the separator between two bytes in hex at i ends (` `, two spaces, `:`, `-`, `.`, `,`, `, `), or -1. */
function separatorEnd(codes: Uint16Array, i: number): number {
  const c = codes[i];
  if ((c === 0x2c || c === 0x20) && codes[i + 1] === 0x20) return i + 2;
  return c === 0x20 || c === 0x3a || c === 0x2d || c === 0x2e || c === 0x2c ? i + 1 : -1;
}

/** Whether `codes` from i to its end could begin a separator and a byte in hex: what a cut left of one. */
function separatorTail(codes: Uint16Array, i: number): boolean {
  if (codes.length - i > 5) return false;
  let j = i;
  const sep = separatorEnd(codes, j);
  if (sep === -1) return j === codes.length;
  j = sep;
  if (codes[j] === 0x30) j++;
  if (codes[j] === 0x78) j++;
  for (; j < codes.length; j++) if (hexDigit(codes[j]) < 0) return false;
  return true;
}

/**
 * Hex spaced by bytes, as dumps and tools print it (`53 65 6b`, `53:65:6b`, `53-65-6b`,
 * `0x53,0x65`, `0x53, 0x65`): runs of two bytes or more, each two hex digits with or without `0x`,
 * one separator between them, neither end touching a letter or a digit; decoded as UTF-8. Hex
 * without separators is among a secret's forms; this view finds the spaced kinds.
 */
function hexRunsView(source: View, cut: boolean): View | undefined {
  const view = decoded(source, (codes, emit) => {
    const n = codes.length;
    const bytes: number[] = [];
    const at: number[] = [];
    const widths: number[] = [];
    for (let i = 0; i < n;) {
      bytes.length = 0;
      at.length = 0;
      widths.length = 0;
      if (i === 0 || !isAlnum(codes[i - 1])) {
        // Each byte, then a separator when another byte follows it.
        for (let j = i, end = hexByteEnd(codes, j); end !== -1 && (end === n || !isAlnum(codes[end])); end = hexByteEnd(codes, j)) {
          bytes.push(end - j === 4 ? hex(codes, j + 2, 2) : hex(codes, j, 2));
          at.push(j);
          widths.push(end - j);
          j = separatorEnd(codes, end);
          if (j === -1 || hexByteEnd(codes, j) === -1) break;
        }
      }
      const last = bytes.length === 0 ? i : at[at.length - 1] + widths[widths.length - 1];
      // At a cut, one byte and what the cut left of a separator and the next (`53:`, `53:6`,
      // `0x53,0x`): a run's start, read as that byte running to the text's end, so that a secret
      // whose hex starts so is masked to the end, and other text is not (a byte that starts a UTF-8
      // sequence is left out to the end, as any sequence a cut leaves unfinished). Spaced by white
      // space alone, it is found in the white-space-free search.
      if (bytes.length === 1 && cut && last < n && separatorTail(codes, last) && (widths[0] === 4 || codes[last] !== 0x20)) {
        widths[0] = n - at[0];
        const stop = utf8(bytes, at, widths, true, emit);
        if (stop !== undefined) return stop;
        break;
      }
      if (bytes.length < 2) {
        emit(codes[i], i, i + 1);
        i++;
        continue;
      }
      const atEnd = cut && separatorTail(codes, last);
      const stop = utf8(bytes, at, widths, atEnd, emit);
      if (stop !== undefined) return stop;
      if (atEnd && last < n) return last;
      i = last;
    }
  });
  return view.codes.length === source.codes.length ? undefined : view;
}

const ENTITIES: Record<string, number> = {
  amp: 0x26,
  lt: 0x3c,
  gt: 0x3e,
  quot: 0x22,
  apos: 0x27,
  nbsp: 0xa0,
  sol: 0x2f,
  bsol: 0x5c,
  colon: 0x3a,
  commat: 0x40,
  num: 0x23,
  percnt: 0x25,
  plus: 0x2b,
  equals: 0x3d,
  excl: 0x21,
  quest: 0x3f,
  dollar: 0x24,
  lpar: 0x28,
  rpar: 0x29,
  lowbar: 0x5f,
  period: 0x2e,
  comma: 0x2c,
  semi: 0x3b,
  ast: 0x2a,
  hat: 0x5e,
  grave: 0x60,
  verbar: 0x7c,
  vert: 0x7c,
  lsqb: 0x5b,
  rsqb: 0x5d,
  lbrack: 0x5b,
  rbrack: 0x5d,
  lcub: 0x7b,
  rcub: 0x7d,
  lbrace: 0x7b,
  rbrace: 0x7d,
  tab: 0x09,
  newline: 0x0a,
};

/** HTML character references: `&amp;`, `&#64;`, `&#x2F;` (the `;` may be left out). */
function htmlView(source: View, cut: boolean): View | undefined {
  if (source.codes.indexOf(0x26) === -1) return undefined;
  return decoded(source, (codes, emit) => {
    const n = codes.length;
    for (let i = 0; i < n;) {
      if (codes[i] === 0x26) {
        let j = i + 1;
        let cp = -1;
        if (codes[j] === 0x23) {
          j++;
          const isHex = codes[j] === 0x78;
          if (isHex) j++;
          const begin = j;
          let value = 0;
          while (j < n && j - begin < 8) {
            const d = isHex ? hexDigit(codes[j]) : codes[j] >= 0x30 && codes[j] <= 0x39 ? codes[j] - 0x30 : -1;
            if (d < 0) break;
            value = value * (isHex ? 16 : 10) + d;
            j++;
          }
          if (j > begin && value <= 0x10ffff) cp = value;
        } else {
          const begin = j;
          while (j < n && j - begin < 8 && codes[j] >= 0x61 && codes[j] <= 0x7a) j++;
          const name = String.fromCharCode(...codes.subarray(begin, j));
          if (Object.hasOwn(ENTITIES, name)) cp = ENTITIES[name];
        }
        // Run to the cut without its `;`: it may go on past it.
        if (cut && j >= n) return i;
        if (cp >= 0) {
          if (codes[j] === 0x3b) j++;
          emit(cp, i, j);
          i = j;
          continue;
        }
      }
      emit(codes[i], i, i + 1);
      i++;
    }
  });
}

/** The decoded views a text is searched in, besides the text itself: one decoding, or two in a row. */
// How the text may have been encoded, one layer each; layers stack (a password percent-encoded
// twice in a redirect URL, Go's JSON escapes under percent-encoding, HTML over percent).
const DECODERS: ((view: View, cut: boolean) => View | undefined)[] = [
  jsonView,
  (v, cut) => percentView(v, false, cut),
  (v, cut) => percentView(v, true, cut),
  htmlView,
  hexEscapeView,
  hexRunsView,
];
/** Layers of encoding undone, at most; and views made, at most (each is one pass over the text). */
const MAX_LAYERS = 3;
const MAX_VIEWS = 24;

/**
 * The text (or a view of it: the pieces of a peer's answer joined) and its decoded views; with
 * `cut` (the text was cut short), escapes the cut left unfinished are left out of them (View.dropped).
 */
export function views(text: Uint16Array | View, cut = false): View[] {
  const plain: View = text instanceof Uint16Array ? { codes: text, from: undefined, to: undefined } : text;
  const out: View[] = [plain];
  let layer = [plain];
  for (let depth = 0; depth < MAX_LAYERS && layer.length > 0; depth++) {
    const next: View[] = [];
    for (const view of layer) {
      for (const decode of DECODERS) {
        const decoded = decode(view, cut);
        if (decoded === undefined) continue;
        next.push(decoded);
        out.push(decoded);
        if (out.length >= MAX_VIEWS) return out;
      }
    }
    layer = next;
  }
  return out;
}

/**
 * The text without the ranges in `cuts` ([start, end) pairs, in order): the separators this
 * service put between a peer's pieces (the `: ` between an error's code and its message), and maybe
 * pieces too, so that a secret the peer split over two fields is found whole.
 */
export function without(text: Uint16Array, cuts: number[]): View {
  const plain: View = { codes: text, from: undefined, to: undefined };
  return decoded(plain, (codes, emit) => {
    let s = 0;
    for (let i = 0; i < codes.length; i++) {
      while (s < cuts.length && cuts[s + 1] <= i) s += 2;
      if (s < cuts.length && cuts[s] <= i) continue;
      emit(codes[i], i, i + 1);
    }
  });
}

/**
 * A view's [start, end) pairs, in place, as the original text's. `end`: the original text's length,
 * when the view stops before an escape the cut left unfinished; a pair that reaches the view's end
 * (a secret's start, cut) then reaches the text's end.
 */
export function inOriginal(view: View, spans: number[], end?: number): number[] {
  if (view.from === undefined || view.to === undefined) return spans;
  for (let i = 0; i < spans.length; i += 2) {
    const last = spans[i + 1];
    spans[i] = view.from[spans[i]];
    spans[i + 1] = end !== undefined && last === view.codes.length ? end : view.to[last - 1];
  }
  return spans;
}

/**
 * The view as the white-space-free search sees it: without its white space (folded to ' '), and with
 * base64url's `-` and `_` read as base64's `+` and `/`, so that one form stands for both alphabets.
 */
export function joinedView(source: View): View {
  return decoded(source, (codes, emit) => {
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i];
      if (c !== 0x20) emit(c === 0x2d ? 0x2b : c === 0x5f ? 0x2f : c, i, i + 1);
    }
  });
}
