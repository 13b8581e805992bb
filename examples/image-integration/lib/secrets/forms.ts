// The forms a secret travels in besides itself: its text as a peer may have rewritten it (case,
// normalisation, punycode) and its encodings (base64, also at any alignment inside a longer
// encoded text; hex; UTF-16; its UTF-8 read as Latin-1). The size of each is known, or measured,
// before it is made, so that the Redactor makes only what fits in its budget (form-book.ts).
import { domainToASCII } from 'node:url';
import { FOLD, folded, fromCodes } from './matcher';

const isPrintableAscii = (text: string) => /^[\x20-\x7e]*$/.test(text);

/** A form as the white-space-free search sees it: folded, without white space, base64url's `-` and `_` as `+` and `/` (joinedView). */
export function joinedForm(form: string): string {
  if (isPrintableAscii(form)) return form.toLowerCase().replace(/ /g, '').replace(/-/g, '+').replace(/_/g, '/');
  const codes = folded(form);
  let length = 0;
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    if (c !== 0x20) codes[length++] = c === 0x2d ? 0x2b : c === 0x5f ? 0x2f : c;
  }
  return fromCodes(codes.subarray(0, length));
}

/** The length of the base64 of `bytes` bytes, padded. */
export const base64Length = (bytes: number) => 4 * Math.ceil(bytes / 3);

/** Base64 and base64url, padded or not. */
export function base64Forms(bytes: Buffer): string[] {
  const url = bytes.toString('base64url');
  return [bytes.toString('base64'), url, `${url}${'='.repeat((4 - (url.length % 4)) % 4)}`];
}

const BASE64_URL = (text: string) => text.replace(/\+/g, '-').replace(/\//g, '_');

/**
 * The part of the base64 of `bytes` that stays the same wherever they sit in a longer encoded text,
 * for each of the three alignments, in both alphabets: a secret inside a base64 blob (a JSON
 * document, `user:password` after a prefix). None for fewer than 6 bytes.
 */
export function alignedForms(bytes: Buffer): string[] {
  const forms: string[] = [];
  if (bytes.length < 6) return forms;
  for (let r = 0; r < 3; r++) {
    const encoded = Buffer.concat([Buffer.alloc(r), bytes]).toString('base64');
    const core = encoded.slice(Math.ceil((8 * r) / 6), Math.floor((8 * (r + bytes.length)) / 6));
    if (core.length >= 6) forms.push(core, BASE64_URL(core));
  }
  return forms;
}

/** UTF-16 code units as bytes, each byte one character: what a peer's UTF-16 text is when read byte by byte. */
function utf16Bytes(value: string, bigEndian: boolean): Buffer {
  const bytes = Buffer.from(value, 'utf16le');
  return bigEndian ? bytes.swap16() : bytes;
}

/**
 * A secret's bytes in other encodings: as `bytes`, its UTF-16 (LE, BE) bytes as characters (`p\0a\0`,
 * `\0p\0a`, which JSON writes `p\u0000a\u0000`) and its UTF-8 bytes read as Latin-1 (`Ã©` for `é`);
 * as `encoded`, the hex of its UTF-8 and UTF-16 (LE, BE) bytes. Some twelve times the secret's
 * length in all (encodingsLength).
 */
export function encodingForms(value: string, bytes: Buffer): { bytes: string[]; encoded: string[] } {
  const le = utf16Bytes(value, false);
  const be = utf16Bytes(value, true);
  const latin1 = bytes.toString('latin1');
  return {
    bytes: [le.toString('latin1'), be.toString('latin1'), ...(latin1 !== value ? [latin1] : [])],
    encoded: [bytes.toString('hex'), le.toString('hex'), be.toString('hex')],
  };
}

/** The characters of encodingForms for a value of `units` UTF-16 units and `bytes` UTF-8 bytes, at most. */
export const encodingsLength = (units: number, bytes: number) => 12 * units + 3 * bytes;

/** Characters transformed at a time when a form is measured: past its bound, the rest is never made. */
const PIECE = 1024;

/**
 * Whether `transform(text)` has at most `most` characters, found piece by piece and stopping once
 * past it, so that a form that grows (U+FDFA is 18 characters in NFKC) is never made whole. The
 * transforms measured so (NFD, NFKD, full case mappings) map each code point on its own, so the
 * pieces' lengths add up to the whole's; a piece never ends between the halves of a surrogate pair.
 */
function within(text: string, transform: (piece: string) => string, most: number): boolean {
  let length = 0;
  for (let start = 0; start < text.length;) {
    let end = Math.min(text.length, start + PIECE);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++;
    length += transform(text.slice(start, end)).length;
    if (length > most) return false;
    start = end;
  }
  return true;
}

const CASES = [(text: string) => text.toUpperCase(), (text: string) => text.toLowerCase()];

const MARK = /\p{M}/u;

/**
 * Whether UTF-16 unit `c` is its own every text form: no decomposition (canonical or
 * compatibility), no part in a composition (combining marks, and the Hangul vowel and final jamo,
 * the only other characters that compose with the one before them), and a case mapping of one unit
 * that the folding covers. A text of such units alone (CJK, most scripts, printable ASCII) has no
 * other text forms, and is not normalised and case mapped over and over to find so. A surrogate is not.
 */
function inertUnit(c: number): boolean {
  if ((c >= 0xd800 && c <= 0xdfff) || (c >= 0x1161 && c <= 0x1175) || (c >= 0x11a8 && c <= 0x11c2)) return false;
  const ch = String.fromCharCode(c);
  if (MARK.test(ch) || ch.normalize('NFKD') !== ch || ch.normalize('NFC') !== ch) return false;
  const upper = ch.toUpperCase();
  const lower = ch.toLowerCase();
  return upper.length === 1 && lower.length === 1 && FOLD[upper.charCodeAt(0)] === FOLD[c] && FOLD[lower.charCodeAt(0)] === FOLD[c];
}

/** inertUnit's answers, found as units are met (0: not yet; 1: inert; 2: not): a memo of a pure function, the same for every request. */
const INERT = new Uint8Array(0x10000);

function inert(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (INERT[c] === 0) INERT[c] = inertUnit(c) ? 1 : 2;
    if (INERT[c] === 2) return false;
  }
  return true;
}

/**
 * A secret as text in the ways a peer may have rewritten it, besides as it is: composed and
 * decomposed (NFC, NFD, and their compatibility forms: `é` as one character or as `e` and an
 * accent); upper and lower cased with Unicode's full case mappings (`straße` upper cased is
 * `STRASSE`, which the one-unit folding cannot reach); and, as a host name, in punycode (`xn--...`:
 * a URL's parser writes a host so). Printable ASCII has none of these (the folding covers its
 * case), and a text of inert units (CJK) none but its punycode. Each other form is measured before
 * it is made, and made only when it has at most `most()` characters (asked again for each form, as
 * what is left of a budget shrinks): NFKC writes U+FDFA as 18 characters, so 64 KiB of it would be
 * 1.2 million.
 */
export function* textForms(value: string, most: () => number): Generator<string> {
  if (isPrintableAscii(value)) return;
  const made = new Set([value]);
  if (!inert(value)) {
    const normal = [value];
    // NFC and NFKC are no longer than NFD and NFKD (composing only shortens), whose lengths add up piece by piece.
    const fits = new Map<string, boolean>();
    for (const [form, longest] of [
      ['NFC', 'NFD'],
      ['NFD', 'NFD'],
      ['NFKC', 'NFKD'],
      ['NFKD', 'NFKD'],
    ] as const) {
      if (!fits.has(longest))
        fits.set(
          longest,
          within(value, (piece) => piece.normalize(longest), most()),
        );
      if (!fits.get(longest)) continue;
      const text = value.normalize(form);
      if (made.has(text)) continue;
      made.add(text);
      normal.push(text);
      yield text;
    }
    for (const text of normal) {
      for (const cased of CASES) {
        if (!within(text, cased, most())) continue;
        const form = cased(text);
        if (made.has(form)) continue;
        made.add(form);
        yield form;
      }
    }
  }
  // A host name is at most 253 characters, and so its punycode a few hundred: it is not measured.
  if (value.length <= 253) {
    const lower = value.toLowerCase();
    const host = domainToASCII(lower);
    if (host !== '' && host !== lower && !made.has(host)) yield host;
  }
}
