// Where lines go: any `{ write(line) }` (process.stdout, a test's sink), and the pretty destination
// for local development, which rewrites each JSON line for a terminal.

/** Where lines go: anything with `write(line)`, such as `process.stdout` or a test sink. */
export interface LogDestination {
  write(line: string): unknown;
}

const NAMES: Record<string, string> = Object.assign(Object.create(null) as Record<string, string>, {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
});

/**
 * For local development: writes each JSON line as `12:00:01.123 INFO  [req 3] message key=value`,
 * with an error's stack below it. Lines that are not a JSON object pass through as they are.
 */
export function prettyDestination(out: LogDestination): LogDestination {
  return {
    write(line: string) {
      let pretty: string | undefined;
      try {
        pretty = prettyLine(line);
      } catch {
        pretty = undefined;
      }
      return out.write(pretty ?? line);
    },
  };
}

function prettyLine(line: string): string | undefined {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) return undefined;
  const { level, time, pid: _pid, hostname: _host, reqId, msg, err, ...rest } = entry as Record<string, unknown>;
  const date = new Date(Number(time));
  const clock = Number.isNaN(date.getTime()) ? '--:--:--.---' : date.toISOString().slice(11, 23);
  const name = (NAMES[String(level)] ?? JSON.stringify(level) ?? '?').padEnd(5);
  const req = reqId === undefined ? '' : ` [req ${printable(typeof reqId === 'string' ? reqId : JSON.stringify(reqId))}]`;
  const message = msg === undefined ? '' : printable(typeof msg === 'string' ? msg : JSON.stringify(msg));
  const extra = Object.entries(rest)
    .map(([k, v]) => ` ${printable(k)}=${printable(typeof v === 'string' ? v : JSON.stringify(v))}`)
    .join('');
  return `${clock} ${name}${req} ${message}${extra}${stackBelow(err)}\n`;
}

/** An error's stack as lines below the line's, or '' for none. */
function stackBelow(err: unknown): string {
  const stack = err !== null && typeof err === 'object' ? (err as { stack?: unknown }).stack : undefined;
  if (typeof stack !== 'string') return '';
  // A stack's lines are indented: its first line is a message, which a client's text may be part of.
  return `\n${stack
    .split('\n')
    .map((l) => `    ${printable(l.trimStart())}`)
    .join('\n')}`;
}

// Control characters (a newline, a terminal's escape sequences) as escapes: text a client sent
// cannot start a line of its own or drive the terminal.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

function printable(text: string): string {
  return text.replace(CONTROL, (c) => (c === '\n' ? '\\n' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}
