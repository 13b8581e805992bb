// Quoting a peer: what of its answer, or of another text it sent (an API error's message, a gRPC
// status message, the names of a certificate), is shown in a message: masked, on one line, at
// most EXCERPT_LENGTH characters, from a window of the text whatever its length.
import { isUtf8 } from 'node:buffer';
import type { Reply } from './http';
import { MASK, type Redactor } from './secrets';

/** The most of a peer's text a message shows. */
export const EXCERPT_LENGTH = 160;

/**
 * How much of a peer's text is masked and put on one line for an excerpt: a longer text is cut
 * here and masked as a cut text is (a secret whose start, in any form, runs to the cut is masked
 * to it: Redactor.redact's `cut`), so the excerpt shows nothing past the window unmasked, and the
 * work is the same for an answer of 64 KiB as for one of 1 KiB, whatever the secrets. An excerpt
 * is shorter than EXCERPT_LENGTH only when masks and white space took the window's room.
 */
const WINDOW = 1024;

/**
 * `parts`, a peer's pieces of text (even indices) and the separators this service puts between
 * them (odd indices: `code`, `: `, `message`), masked, on one line, cut at EXCERPT_LENGTH (and at
 * WINDOW before masking). Masked before it is put on one line and cut, so neither a cut through a
 * secret nor a run of spaces in one keeps part of it from being masked; a secret split over two
 * pieces is masked too. With `cut`, the text was already cut short (a body read up to its cap).
 * Empty when there is nothing to show.
 */
export function quote(parts: string[], redactor: Redactor, { cut = false }: { cut?: boolean } = {}): string {
  let text = '';
  const spans: number[] = []; // [start, end) of each part in text
  let shortened = cut;
  for (let i = 0; i < parts.length; i++) {
    const room = WINDOW - text.length;
    const part = parts[i].length > room ? parts[i].slice(0, room) : parts[i];
    spans.push(text.length, text.length + part.length);
    text += part;
    if (part.length < parts[i].length) {
      shortened = true;
      break;
    }
  }
  const line = oneLine(redactor.redact(text, { cut: shortened, joins: joins(spans) }));
  if (line === '') return '';
  if (line.length <= EXCERPT_LENGTH) return shortened ? `${line}...` : line;
  // A cut through a mask keeps the whole mask, so that `******` never reads as a shorter run of stars.
  let end = EXCERPT_LENGTH;
  while (end < line.length && end < EXCERPT_LENGTH + MASK.length && line[end - 1] === '*' && line[end] === '*') end++;
  return `${line.slice(0, end)}...`;
}

/**
 * The ways to read pieces joined by separators (`spans`: each part's [start, end), a piece's at
 * even indices of parts, a separator's at odd) that find a secret split over them: without the
 * separators (a code and its message, `abc` + `def`); and, with three pieces or more, without the
 * separators and every other piece (two messages with a code between them, or two codes).
 */
function joins(spans: number[]): number[][] {
  const parts = spans.length / 2;
  if (parts < 3) return [];
  const separators: number[] = [];
  const withoutOddPieces: number[] = [];
  const withoutEvenPieces: number[] = [];
  for (let p = 0; p < parts; p++) {
    const range = [spans[2 * p], spans[2 * p + 1]];
    if (p % 2 === 1) separators.push(...range);
    if (p % 2 === 1 || p % 4 === 2) withoutOddPieces.push(...range);
    if (p % 2 === 1 || p % 4 === 0) withoutEvenPieces.push(...range);
  }
  return parts < 5 ? [separators] : [separators, withoutOddPieces, withoutEvenPieces];
}

/** The text with each run of white space one space, trimmed; one pass. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * A short, single-line excerpt of a peer's answer, `: <excerpt>`, or '' when it has nothing to
 * show: the registry's error codes and messages when it gives them structured, else its text.
 */
export function excerpt(reply: Reply, redactor: Redactor): string {
  const raw = bodyText(reply);
  const structured = reply.truncated ? undefined : structuredErrors(raw);
  const text = quote(structured ?? [raw], redactor, { cut: reply.truncated === true });
  return text === '' ? '' : `: ${text}`;
}

/**
 * A peer's answer as text: UTF-8 when it is (a sequence cut at the cap aside), else each byte one
 * character (Latin-1), so that no byte is lost to U+FFFD before the redactor reads it: a secret
 * echoed in UTF-16 (`é` is the bytes E9 00) is then found and masked whole.
 */
export function bodyText(reply: Reply): string {
  const { body } = reply;
  if (isUtf8(body)) return body.toString('utf8');
  if (reply.truncated) {
    // The cap may cut the last character: its first bytes are left out, not read as Latin-1.
    for (let keep = body.length - 1; keep >= Math.max(0, body.length - 3); keep--) {
      if (isUtf8(body.subarray(0, keep))) return body.subarray(0, keep).toString('utf8');
    }
  }
  return body.toString('latin1');
}

/** A string that says something, or undefined. */
const said = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value : undefined);

/**
 * A code and a message as quote's parts, `code: message` (either may be missing), or undefined
 * when neither says anything.
 */
export function codeAndMessage(code: unknown, message: unknown): string[] | undefined {
  const c = said(code);
  const m = said(message);
  return c !== undefined && m !== undefined ? [c, ': ', m] : c !== undefined ? [c] : m !== undefined ? [m] : undefined;
}

/**
 * The error codes and messages of a JSON answer, as quote's parts: Docker Distribution's
 * `{"errors": [{"code", "message"}]}` (the first five, `; ` between them), or an OAuth or token
 * server's `error`, `message`, `details`. Parsing decodes the JSON escapes (Go writes `&` as
 * `\u0026`), so the redactor sees the text as it is.
 */
function structuredErrors(text: string): string[] | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return undefined;
  const pair = (o: Record<string, unknown>) =>
    codeAndMessage(said(o.code) ?? o.error, said(o.message) ?? said(o.error_description) ?? said(o.details) ?? o.detail);
  const body = json as Record<string, unknown>;
  const errors = Array.isArray(body.errors)
    ? body.errors.slice(0, 5).map((e) => (e !== null && typeof e === 'object' ? pair(e as Record<string, unknown>) : codeAndMessage(undefined, e)))
    : [pair(body)];
  const parts: string[] = [];
  for (const error of errors) if (error !== undefined) parts.push(...(parts.length > 0 ? ['; '] : []), ...error);
  return parts.length > 0 ? parts : undefined;
}
