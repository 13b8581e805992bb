// XML request bodies: a linear pre-scan checks well-formedness and bounds the document's shape,
// then @xmldom/xmldom (loaded on the first XML body) builds the DOM and stops at its first error.
// xmldom is quadratic on some inputs (nested namespace scopes, recovery after errors) and slow
// per node; it only ever sees text that passed the scan.
import { HttpError, runtimeError } from '../errors';
import { lineAndColumn } from '../body/position';
import { MAX_XML_NODES, type XmlBudget } from '../body/body';

/** Deepest element nesting accepted. */
export const MAX_XML_DEPTH = 256;
/** Most attributes (namespace declarations included) on one element. */
export const MAX_XML_ATTRIBUTES = 256;
/** Most namespace declarations in scope at once (xmldom's lookups and serializer walk them per element). */
export const MAX_XML_NAMESPACES = 128;
export { MAX_XML_NODES, type XmlBudget };

/** How many characters of a name an error message quotes. */
const QUOTE = 40;
/** How long an error reason from xmldom may be. */
const REASON = 120;

type XmlModule = typeof import('@xmldom/xmldom');
// Loaded on the first XML body (parseXml): a start, and a function that never sees XML, do not pay for it.
let xmldom: XmlModule | undefined;

/**
 * Parses XML into a DOM Document. Anything not well-formed, a DOCTYPE with an internal subset
 * (where entities are declared), and a document past one of the bounds above is a 400 that says
 * what and where (line and column), quoting at most a few dozen characters of the input.
 */
export function parseXml(text: string, budget: XmlBudget = { nodes: MAX_XML_NODES }): unknown {
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  // XML 1.0 end-of-line handling, done once here so that the scan and xmldom count lines alike.
  if (text.includes('\r')) text = text.replace(/\r\n?/g, '\n');
  scan(text, budget);
  // Loaded on the first XML body: functions that never see XML never pay for the parser.
  xmldom ??= require('@xmldom/xmldom') as XmlModule;
  let failure: { message: string; line?: number; column?: number } | undefined;
  const parser = new xmldom.DOMParser({
    normalizeLineEndings: (source: string) => source,
    onError(level, message, context) {
      // Warnings are not well-formedness errors (such as a U+FFFD in the text): keep going.
      if (level === 'warning') return;
      const locator = (context as { locator?: { lineNumber?: unknown; columnNumber?: unknown } } | undefined)?.locator;
      failure ??= { message: String(message), line: positive(locator?.lineNumber), column: positive(locator?.columnNumber) };
      // Throwing here is what stops xmldom: it rethrows as a ParseError and parses no further.
      throw new Error('stop');
    },
  });
  try {
    return parser.parseFromString(text, 'text/xml');
  } catch (err) {
    const { message, line, column } = failure ?? { message: String((err as Error)?.message ?? err) };
    throw invalid(line, column, shortReason(message));
  }
}

function positive(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined;
}

function invalid(line: number | undefined, column: number | undefined, reason: string): HttpError {
  if (line === undefined) return runtimeError('FUNCRUN_INVALID_XML', `invalid XML: ${reason}`);
  const at = column === undefined ? `line ${line}` : `line ${line}, column ${column}`;
  return runtimeError('FUNCRUN_INVALID_XML', `invalid XML at ${at}: ${reason}`, { details: column === undefined ? { line } : { line, column } });
}

/** xmldom's message without its location suffix, control characters or more than REASON characters. */
function shortReason(message: string): string {
  const end = message.indexOf('@#[line:');
  let reason = (end >= 0 ? message.slice(0, end) : message)
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    // A long name in the message (xmldom quotes tag and attribute names) is cut like ours.
    .replace(/[^\s"':]{41,}/g, (run) => quote(run))
    .trim();
  if (reason.length > REASON) reason = cut(reason, REASON - 1) + '…';
  return reason || 'not well-formed';
}

/** At most `length` characters of `s`, never half of a surrogate pair. */
function cut(s: string, length: number): string {
  if (s.length <= length) return s;
  const code = s.charCodeAt(length - 1);
  return s.slice(0, code >= 0xd800 && code <= 0xdbff ? length - 1 : length);
}

/** A name as an error message quotes it. */
function quote(name: string): string {
  return name.length > QUOTE ? cut(name, QUOTE) + '…' : name;
}

// Character codes the scan looks for.
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const BANG = 0x21;
const QUOT = 0x22;
const HASH = 0x23;
const AMP = 0x26;
const APOS = 0x27;
const DASH = 0x2d;
const SLASH = 0x2f;
const SEMI = 0x3b;
const LT = 0x3c;
const EQ = 0x3d;
const GT = 0x3e;
const QUESTION = 0x3f;
const RBRACKET = 0x5d;
const LBRACKET = 0x5b;
const X = 0x78;

const PREDEFINED = new Set(['lt', 'gt', 'amp', 'apos', 'quot']);

function isSpace(c: number): boolean {
  return c === SPACE || c === LF || c === TAB || c === CR;
}

/** XML 1.0 NameStartChar (below U+10000; pairs are handled by nameEnd). */
function isNameStart(c: number): boolean {
  if (c < 0xc0) return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || c === 0x3a;
  return (
    (c <= 0x2ff && c !== 0xd7 && c !== 0xf7) ||
    (c >= 0x370 && c <= 0x1fff && c !== 0x37e) ||
    c === 0x200c ||
    c === 0x200d ||
    (c >= 0x2070 && c <= 0x218f) ||
    (c >= 0x2c00 && c <= 0x2fef) ||
    (c >= 0x3001 && c <= 0xd7ff) ||
    (c >= 0xf900 && c <= 0xfdcf) ||
    (c >= 0xfdf0 && c <= 0xfffd)
  );
}

/** XML 1.0 NameChar (below U+10000). */
function isNameChar(c: number): boolean {
  return isNameStart(c) || c === DASH || c === 0x2e || (c >= 0x30 && c <= 0x39) || c === 0xb7 || (c >= 0x300 && c <= 0x36f) || c === 0x203f || c === 0x2040;
}

/** True for a code point XML 1.0 allows (its Char production). */
function isXmlChar(code: number): boolean {
  return (
    (code >= 0x20 && code <= 0xd7ff) ||
    code === TAB ||
    code === LF ||
    code === CR ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}

/** The index after the Name starting at `i`, or `i` when none starts there. */
function nameEnd(text: string, i: number): number {
  const start = i;
  for (;;) {
    const c = text.charCodeAt(i);
    // A surrogate pair for U+10000 to U+EFFFF is a name character, a start one included.
    if (c >= 0xd800 && c <= 0xdb7f) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i += 2;
        continue;
      }
      return i;
    }
    if (i === start ? !isNameStart(c) : !isNameChar(c)) return i;
    i++;
  }
}

/** The index after the character at `i`, or -1 when XML does not allow it there. */
function charEnd(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if ((c >= 0x20 && c < 0xd800) || c === LF || c === TAB || c === CR || (c >= 0xe000 && c <= 0xfffd)) return i + 1;
  if (c >= 0xd800 && c <= 0xdbff) {
    const d = text.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return i + 2;
  }
  return -1;
}

function hex(code: number): string {
  return 'U+' + code.toString(16).toUpperCase().padStart(4, '0');
}

/**
 * Checks in one pass, each character looked at a bounded number of times, that `text` is a
 * well-formed XML document within the bounds above; throws the 400 for the first problem.
 * It does not check what xmldom checks in linear time: attribute names unique per element,
 * namespace prefixes bound, the XML declaration's and the DOCTYPE's inner syntax.
 */
function scan(text: string, budget: XmlBudget): void {
  const n = text.length;
  const open: string[] = []; // names of the open elements, innermost last
  const declared: number[] = []; // namespace declarations of each open element
  let inScope = 0;
  let rootSeen = false;
  let doctypeSeen = false;

  const fail = (at: number, reason: string): never => {
    const { line, column } = lineAndColumn(text, at);
    throw invalid(line, column, reason);
  };
  const badChar = (at: number): never => {
    const c = text.charCodeAt(at);
    return fail(at, c >= 0xd800 && c <= 0xdfff ? `unpaired surrogate ${hex(c)}` : `character ${hex(c)} is not allowed in XML`);
  };
  const count = (at: number): void => {
    if (--budget.nodes < 0) fail(at, `more than ${MAX_XML_NODES} elements, attributes, comments and other nodes`);
  };

  /** `&...;` at `i` (in text or an attribute value); returns the index after it. */
  const reference = (i: number): number => {
    if (text.charCodeAt(i + 1) === HASH) {
      const isHex = text.charCodeAt(i + 2) === X;
      const digits = i + (isHex ? 3 : 2);
      let j = digits;
      let code = 0;
      for (;;) {
        const c = text.charCodeAt(j);
        let digit = c - 0x30;
        if (isHex && !(digit >= 0 && digit <= 9)) digit = c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
        if (!(digit >= 0 && digit < (isHex ? 16 : 10))) break;
        // Past U+10FFFF it is out of range whatever follows: stop growing.
        code = Math.min(code * (isHex ? 16 : 10) + digit, 0x110000);
        j++;
      }
      if (j === digits || text.charCodeAt(j) !== SEMI) {
        return fail(i, `malformed character reference (expected ${isHex ? 'hex digits' : 'digits'} then ';')`);
      }
      if (!isXmlChar(code)) {
        return fail(i, code > 0x10ffff ? 'character reference past U+10FFFF' : `character reference to ${hex(code)}, which XML does not allow`);
      }
      return j + 1;
    }
    const end = nameEnd(text, i + 1);
    if (end === i + 1) return fail(i, "'&' that starts no entity or character reference (write &amp;)");
    const name = text.slice(i + 1, end);
    if (text.charCodeAt(end) !== SEMI) return fail(i, `entity reference &${quote(name)} not ended by ';'`);
    if (!PREDEFINED.has(name)) return fail(i, `undefined entity &${quote(name)}; (only &lt; &gt; &amp; &apos; &quot; are defined)`);
    return end + 1;
  };

  /** `<!--` at `i`. */
  const comment = (i: number): number => {
    count(i);
    let j = i + 4;
    for (;;) {
      if (j >= n) return fail(i, 'comment is not closed');
      if (text.charCodeAt(j) === DASH && text.charCodeAt(j + 1) === DASH) {
        if (text.charCodeAt(j + 2) === GT) return j + 3;
        return fail(j, "'--' inside a comment");
      }
      const next = charEnd(text, j);
      j = next < 0 ? badChar(j) : next;
    }
  };

  /** `<![CDATA[` at `i`. */
  const cdata = (i: number): number => {
    if (open.length === 0) return fail(i, 'CDATA section outside the root element');
    count(i);
    let j = i + 9;
    for (;;) {
      if (j >= n) return fail(i, 'CDATA section is not closed');
      if (text.charCodeAt(j) === RBRACKET && text.charCodeAt(j + 1) === RBRACKET && text.charCodeAt(j + 2) === GT) return j + 3;
      const next = charEnd(text, j);
      j = next < 0 ? badChar(j) : next;
    }
  };

  /** `<?` at `i`. */
  const instruction = (i: number): number => {
    const end = nameEnd(text, i + 2);
    if (end === i + 2) return fail(i, "'<?' not followed by a target name");
    if (end - i === 5 && text.slice(i + 2, end).toLowerCase() === 'xml' && i !== 0) {
      return fail(i, 'XML declaration not at the start of the document');
    }
    count(i);
    let j = end;
    if (!isSpace(text.charCodeAt(j)) && !(text.charCodeAt(j) === QUESTION && text.charCodeAt(j + 1) === GT)) {
      return fail(j, 'processing instruction target not followed by white space or ?>');
    }
    for (;;) {
      if (j >= n) return fail(i, 'processing instruction is not closed');
      if (text.charCodeAt(j) === QUESTION && text.charCodeAt(j + 1) === GT) return j + 2;
      const next = charEnd(text, j);
      j = next < 0 ? badChar(j) : next;
    }
  };

  /** `<!DOCTYPE` at `i`: an external identifier at most, no internal subset. */
  const doctype = (i: number): number => {
    if (rootSeen) return fail(i, 'DOCTYPE after the root element');
    if (doctypeSeen) return fail(i, 'a second DOCTYPE');
    doctypeSeen = true;
    let j = i + 9;
    for (;;) {
      if (j >= n) return fail(i, 'DOCTYPE is not closed');
      const c = text.charCodeAt(j);
      if (c === GT) return j + 1;
      if (c === LBRACKET) return fail(j, 'a DOCTYPE internal subset is not accepted (no ENTITY or other declarations)');
      if (c === QUOT || c === APOS) {
        const from = j;
        for (j++; text.charCodeAt(j) !== c;) {
          if (j >= n) return fail(from, 'DOCTYPE literal is not closed');
          const next = charEnd(text, j);
          j = next < 0 ? badChar(j) : next;
        }
        j++;
        continue;
      }
      const next = charEnd(text, j);
      j = next < 0 ? badChar(j) : next;
    }
  };

  /** `<name` at `i`: attributes, then `>` or `/>`. */
  const startTag = (i: number): number => {
    const end = nameEnd(text, i + 1);
    if (end === i + 1) {
      return fail(i, text.charCodeAt(i + 1) === LT || i + 1 >= n ? "'<' not followed by a name" : `'<' followed by ${describeAt(i + 1)}, not a name`);
    }
    if (rootSeen && open.length === 0) return fail(i, 'a second root element');
    if (open.length >= MAX_XML_DEPTH) return fail(i, `nesting deeper than ${MAX_XML_DEPTH} elements`);
    count(i);
    rootSeen = true;
    const name = text.slice(i + 1, end);
    let attributes = 0;
    let namespaces = 0;
    let j = end;
    for (;;) {
      const before = j;
      while (isSpace(text.charCodeAt(j))) j++;
      const c = text.charCodeAt(j);
      if (c === GT || c === SLASH) {
        if (c === SLASH && text.charCodeAt(j + 1) !== GT) return fail(j, "'/' not followed by '>' in a tag");
        inScope -= c === SLASH ? namespaces : 0;
        if (c === GT) {
          open.push(name);
          declared.push(namespaces);
        }
        return j + (c === GT ? 1 : 2);
      }
      if (j >= n) return fail(i, `tag <${quote(name)}> is not closed`);
      const attrStart = j;
      const attrEnd = nameEnd(text, j);
      if (attrEnd === j) return fail(j, `${describeAt(j)} in tag <${quote(name)}>`);
      if (j === before) return fail(j, 'attributes must be separated by white space');
      if (++attributes > MAX_XML_ATTRIBUTES) return fail(j, `more than ${MAX_XML_ATTRIBUTES} attributes on one element`);
      count(j);
      if (text.startsWith('xmlns', j) && (attrEnd === j + 5 || text.charCodeAt(j + 5) === 0x3a)) {
        namespaces++;
        if (++inScope > MAX_XML_NAMESPACES) return fail(j, `more than ${MAX_XML_NAMESPACES} namespace declarations in scope`);
      }
      j = attrEnd;
      while (isSpace(text.charCodeAt(j))) j++;
      if (text.charCodeAt(j) !== EQ) return fail(attrStart, `attribute ${quote(text.slice(attrStart, attrEnd))} has no '=' and value`);
      j++;
      while (isSpace(text.charCodeAt(j))) j++;
      const q = text.charCodeAt(j);
      if (q !== QUOT && q !== APOS) return fail(j, 'attribute value not in quotes');
      const from = j;
      for (j++; text.charCodeAt(j) !== q;) {
        if (j >= n) return fail(from, 'attribute value is not closed');
        const v = text.charCodeAt(j);
        if (v === LT) return fail(j, "'<' in an attribute value");
        if (v === AMP) {
          j = reference(j);
          continue;
        }
        const next = charEnd(text, j);
        j = next < 0 ? badChar(j) : next;
      }
      j++;
    }
  };

  /** `</` at `i`. */
  const endTag = (i: number): number => {
    const end = nameEnd(text, i + 2);
    if (end === i + 2) return fail(i, "'</' not followed by a name");
    let j = end;
    while (isSpace(text.charCodeAt(j))) j++;
    if (text.charCodeAt(j) !== GT) return fail(j, `end tag </${quote(text.slice(i + 2, end))}> not closed by '>'`);
    const expected = open.pop();
    if (expected === undefined) return fail(i, `end tag </${quote(text.slice(i + 2, end))}> without a start tag`);
    if (end - (i + 2) !== expected.length || !text.startsWith(expected, i + 2)) {
      return fail(i, `end tag </${quote(text.slice(i + 2, end))}> does not match <${quote(expected)}>`);
    }
    inScope -= declared.pop() ?? 0;
    return j + 1;
  };

  /** A short description of the character at `at`, for messages. */
  const describeAt = (at: number): string => {
    if (at >= n) return 'the end of the input';
    const c = text.charCodeAt(at);
    return c > 0x20 && c < 0x7f ? `'${text[at]}'` : `character ${hex(c)}`;
  };

  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === LT) {
      const d = text.charCodeAt(i + 1);
      if (d === SLASH) i = endTag(i);
      else if (d === QUESTION) i = instruction(i);
      else if (d !== BANG) i = startTag(i);
      else if (text.startsWith('<!--', i)) i = comment(i);
      else if (text.startsWith('<![CDATA[', i)) i = cdata(i);
      else if (text.startsWith('<!DOCTYPE', i)) i = doctype(i);
      else fail(i, "'<!' that starts no comment, CDATA section or DOCTYPE");
    } else if (open.length === 0) {
      // Outside the root element only white space, comments and processing instructions.
      if (!isSpace(c)) fail(i, rootSeen ? 'text after the root element' : 'text before the root element');
      i++;
    } else if (c === AMP) {
      i = reference(i);
    } else if (c === RBRACKET && text.charCodeAt(i + 1) === RBRACKET && text.charCodeAt(i + 2) === GT) {
      fail(i, "']]>' in text");
    } else {
      const next = charEnd(text, i);
      i = next < 0 ? badChar(i) : next;
    }
  }
  if (open.length > 0) fail(n, `element <${quote(open[open.length - 1])}> is not closed at the end of the input`);
  if (!rootSeen) fail(n, 'no root element');
}
