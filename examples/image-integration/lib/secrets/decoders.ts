// The escapes a peer's text may hold a secret in, each undone into a view of its own: JSON string
// escapes, percent-encoding (with or without `+` for a space), `\x` and octal escapes of bytes,
// HTML character references, and quotes written twice. With `cut`, an escape the text's end cut short ends the view there
// (View.dropped). views.ts stacks them in layers.
import { decoded, hex, hexDigit, hexTail, utf8, type View } from './view';

// JSON's, and `\'`: the quote Python's repr(), PHP's addslashes() and JavaScript escape in a text quoted with it.
const JSON_ESCAPES: Record<number, number> = { 0x22: 0x22, 0x27: 0x27, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09 };

/** JSON string escapes: `\"`, `\\`, `\/`, `\n`..., and `\u0026` (Go writes <, > and & so); also `\u{26}` and `\'`. */
export function jsonView(source: View, cut: boolean): View | undefined {
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
export function percentView(source: View, plus: boolean, cut: boolean): View | undefined {
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
export function hexEscapeView(source: View, cut: boolean): View | undefined {
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
export function htmlView(source: View, cut: boolean): View | undefined {
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

const QUOTE = 0x27;
const DOUBLE_QUOTE = 0x22;

/**
 * Quotes in a quoted text: written twice to stand for one (SQL's `''`, CSV's `""`), and the
 * shell's `'\''` (the quote closed, escaped, opened again) for a `'`. A cut after a pair's first
 * quote leaves the secret's start in the text itself: nothing is left out at a cut.
 */
export function quoteView(source: View): View | undefined {
  if (!doublesQuotes(source.codes)) return undefined;
  return decoded(source, (codes, emit) => {
    const n = codes.length;
    for (let i = 0; i < n;) {
      const c = codes[i];
      if (c === QUOTE && codes[i + 1] === 0x5c && codes[i + 2] === QUOTE && codes[i + 3] === QUOTE) {
        emit(QUOTE, i, i + 4);
        i += 4;
        continue;
      }
      if ((c === QUOTE || c === DOUBLE_QUOTE) && codes[i + 1] === c) {
        emit(c, i, i + 2);
        i += 2;
        continue;
      }
      emit(c, i, i + 1);
      i++;
    }
  });
}

/** Whether a quote follows one of its own (`'\''` holds `''` too): where none does, the view would be the text. */
function doublesQuotes(codes: Uint16Array): boolean {
  for (let i = 1; i < codes.length; i++) {
    const c = codes[i];
    if ((c === QUOTE || c === DOUBLE_QUOTE) && codes[i - 1] === c) return true;
  }
  return false;
}
