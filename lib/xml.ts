// XML request bodies: parsed into a DOM Document by @xmldom/xmldom, loaded on the first XML body.
import { HttpError } from './errors';

type XmlModule = typeof import('@xmldom/xmldom');
let xmldom: XmlModule | undefined;

/** Parses XML into a DOM Document; malformed XML is a 400 saying what and where. */
export function parseXml(text: string): unknown {
  // Loaded on the first XML body: functions that never see XML never pay for the parser.
  xmldom ??= require('@xmldom/xmldom') as XmlModule;
  let problem: string | undefined;
  let where: { line?: number; column?: number } = {};
  const parser = new xmldom.DOMParser({
    onError(_level, message, context) {
      if (problem !== undefined) return;
      problem = message;
      const locator = (context as { locator?: { lineNumber?: number; columnNumber?: number } } | undefined)?.locator;
      where = { line: locator?.lineNumber, column: locator?.columnNumber };
    },
  });
  let document: unknown;
  try {
    document = parser.parseFromString(text, 'text/xml');
  } catch (err) {
    problem ??= (err as Error).message;
    const locator = (err as { locator?: { lineNumber?: number; columnNumber?: number } }).locator;
    if (locator && where.line === undefined) where = { line: locator.lineNumber, column: locator.columnNumber };
  }
  if (problem !== undefined) {
    const at = where.line ? ` at line ${where.line}${where.column ? `, column ${where.column}` : ''}` : '';
    const details: Record<string, unknown> = {};
    if (where.line) details.line = where.line;
    if (where.column) details.column = where.column;
    throw new HttpError(400, `invalid XML${at}: ${problem.replace(/\s*@#\[line:.*$/s, '')}`, { details });
  }
  return document;
}
