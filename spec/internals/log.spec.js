'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const os = require('node:os');
const { createLogger, parseLogLevel, serializeError, prettyDestination } = require('../../lib/log/log.js');
const { sink } = require('../helpers');

/** The top-level keys of a JSON object text, in order and with repeats (JSON.parse would hide a duplicate). */
function topLevelKeys(text) {
  const keys = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) keys.push(JSON.parse(text.slice(i, j + 1)));
      expectKey = false;
      i = j;
    } else if (c === '{' || c === '[') {
      depth++;
      expectKey = c === '{' && depth === 1;
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return keys;
}

/** Logs with `fn(log)` on a request logger (reqId 7) at trace and returns the raw lines, each checked to be one JSON object without duplicate keys. */
function lines(fn, level = 'trace') {
  const out = sink();
  const log = createLogger(level, out).forRequest(7);
  assert.doesNotThrow(() => fn(log));
  for (const line of out.lines) {
    assert.ok(line.endsWith('}\n') && line.indexOf('\n') === line.length - 1, `one line: ${line}`);
    const keys = topLevelKeys(line);
    assert.equal(new Set(keys).size, keys.length, `duplicate key in ${line}`);
  }
  return out.entries();
}

describe('logger', () => {
  it('writes one JSON line per call with level, time, pid, hostname, msg', () => {
    const out = sink();
    const before = Date.now();
    createLogger('info', out).info('hello');
    assert.equal(out.lines.length, 1);
    assert.ok(out.lines[0].endsWith('}\n'));
    const [line] = out.entries();
    assert.equal(line.level, 30);
    assert.ok(line.time >= before && line.time <= Date.now());
    assert.equal(line.pid, process.pid);
    assert.equal(line.hostname, os.hostname());
    assert.equal(line.msg, 'hello');
  });

  it('writes the fields in order: level, time, pid, hostname, reqId, bindings, fields, msg', () => {
    const out = sink();
    createLogger('info', out).forRequest(3).child({ user: 'u' }).info({ order: 1 }, 'paid');
    assert.deepEqual(topLevelKeys(out.lines[0]), ['level', 'time', 'pid', 'hostname', 'reqId', 'user', 'order', 'msg']);
  });

  it("uses pino's level numbers", () => {
    const out = sink();
    const log = createLogger('trace', out);
    for (const method of ['trace', 'debug', 'info', 'warn', 'error', 'fatal']) log[method](method);
    assert.deepEqual(
      out.entries().map((e) => [e.msg, e.level]),
      [
        ['trace', 10],
        ['debug', 20],
        ['info', 30],
        ['warn', 40],
        ['error', 50],
        ['fatal', 60],
      ],
    );
  });

  it('writes nothing below its level, and nothing at all when silent', () => {
    const out = sink();
    const warn = createLogger('warn', out);
    warn.info('no');
    warn.debug('no');
    warn.warn('yes');
    const silent = createLogger('silent', out);
    silent.fatal('no');
    assert.deepEqual(
      out.entries().map((e) => e.msg),
      ['yes'],
    );
  });

  it('disabled methods are one shared no-op, in request loggers and children too', () => {
    const log = createLogger('error', sink());
    assert.equal(log.debug, log.info);
    assert.equal(log.forRequest(1).trace, log.warn);
    assert.equal(log.child({ a: 1 }).debug, log.info);
    assert.equal(createLogger('silent', sink()).fatal, log.debug);
  });

  it('forRequest(reqId) gives a logger whose lines carry reqId, sharing the root methods', () => {
    const out = sink();
    const root = createLogger('info', out);
    const reqLog = root.forRequest(12);
    assert.equal(reqLog.info, root.info);
    reqLog.info('in a request');
    root.info('outside');
    const [inside, outside] = out.entries();
    assert.equal(inside.reqId, 12);
    assert.equal('reqId' in outside, false);
  });

  it('every logger has a readable level and isLevelEnabled; the root keeps isEnabled', () => {
    const root = createLogger('info', sink());
    const reqLog = root.forRequest(1);
    const child = reqLog.child({ a: 1 });
    for (const log of [root, reqLog, child]) {
      assert.equal(log.level, 'info');
      assert.equal(log.isLevelEnabled('info'), true);
      assert.equal(log.isLevelEnabled('warn'), true);
      assert.equal(log.isLevelEnabled('debug'), false);
      assert.equal(log.isLevelEnabled('nonsense'), false);
      assert.equal(log.isLevelEnabled('silent'), false);
      assert.equal(typeof log.child, 'function');
    }
    assert.equal(root.isEnabled('info'), true);
    assert.equal(root.isEnabled('debug'), false);
    assert.equal(createLogger('silent', sink()).level, 'silent');
  });

  it('accepts only the known level names', () => {
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent', 'INFO']) assert.ok(parseLogLevel(level));
    assert.throws(() => parseLogLevel('verbose'), /unknown log level 'verbose'/);
  });
});

describe('no key twice, however long or however named', () => {
  const long = (tail) => 'k'.repeat(2000) + tail;

  it('long keys that cut to the same text are told apart, in a logged object and against a binding', () => {
    const [line] = lines((log) => log.info({ [long('a')]: 1, [long('b')]: 2 }, 'two long keys'));
    const keys = Object.keys(line).filter((k) => k.startsWith('kkk'));
    assert.equal(keys.length, 2);
    assert.deepEqual(keys.map((k) => line[k]).sort(), [1, 2]);
    // A binding's long key wins over an object's that cuts to the same text, as a binding's key does.
    const [bound] = lines((log) => log.child({ [long('a')]: 'binding' }).info({ [long('b')]: 'object' }, 'bound'));
    const boundKeys = Object.keys(bound).filter((k) => k.startsWith('kkk'));
    assert.deepEqual(
      boundKeys.map((k) => bound[k]),
      ['binding'],
    );
  });

  it("an object's own \"…\" key is left out, as the line's own mark of a cut is funcrun's", () => {
    const big = { '…': 'mine' };
    for (let i = 0; i < 60_000; i++) big[`k${i}`] = i;
    const [line] = lines((log) => log.info(big, 'big'));
    assert.equal(line['…'], '[Truncated]');
  });

  it('a placeholder argument that cannot be read is that one value, not the whole message; a __proto__ binding is kept', () => {
    const revoked = Proxy.revocable([], {});
    revoked.revoke();
    const [line] = lines((log) => log.info('user %s paid %d cents', revoked.proxy, 300));
    assert.match(line.msg, /^user .* paid 300 cents$/);
    // The request-scoped log (outside an invocation, the process's logger: here one writing to `out`).
    const { log, setProcessLogger } = require('../../lib/log/scope.js');
    const out = sink();
    setProcessLogger(createLogger('info', out));
    log.child(JSON.parse('{"__proto__":"kept","tenant":"a"}')).info('child');
    assert.deepEqual(
      Object.entries(out.entries()[0]).filter(([k]) => k === '__proto__' || k === 'tenant'),
      [
        ['__proto__', 'kept'],
        ['tenant', 'a'],
      ],
    );
  });
});

describe('logger call forms (as pino)', () => {
  it("formats pino's placeholders %s %d %i %f %j %o %O and %%", () => {
    const [line] = lines((log) => log.info('%s|%d|%i|%f|%j|%o|%O|100%%', 'x', '42.5', 3.9, '1.5', { a: [1] }, 'str', function named() {}));
    assert.equal(line.msg, `x|42.5|3|1.5|{"a":[1]}|'str'|named|100%`);
  });

  it('%d of a non-number is NaN; %s of an object is String(obj); a placeholder without argument stays', () => {
    const [a, b, c, d] = lines((log) => {
      log.info('%d and %i', 'abc', {});
      log.info('%s', { a: 1 });
      log.info('%s and %s', 'only one');
      log.info('%d|%j|%s', null, undefined, 'third');
    });
    assert.equal(a.msg, 'NaN and NaN');
    assert.equal(b.msg, '[object Object]');
    assert.equal(c.msg, 'only one and %s');
    // as quick-format-unescaped: %d leaves null as written, %j leaves undefined, and each still uses up its argument
    assert.equal(d.msg, '%d|%j|third');
  });

  it('a message without arguments is written as it is, placeholders included', () => {
    const [line] = lines((log) => log.info('100%% done, %s'));
    assert.equal(line.msg, '100%% done, %s');
  });

  it('arguments without placeholders are ignored, so info(msg, obj) writes msg only', () => {
    const [line] = lines((log) => log.info('query', { a: '1' }, 'more'));
    assert.equal(line.msg, 'query');
    assert.equal('a' in line, false);
  });

  it('a message that is not a string is written as pino does: number, boolean, null keep their type', () => {
    const [n, t, z, none, after] = lines((log) => {
      log.info(42);
      log.info(true);
      log.info(null);
      log.info();
      log.info(undefined, 'second');
    });
    assert.equal(n.msg, 42);
    assert.equal(t.msg, true);
    assert.equal(z.msg, null);
    assert.equal('msg' in none, false);
    assert.equal(after.msg, 'second');
  });

  it('info(obj, msg, ...args) merges obj into the line and formats msg', () => {
    const [line] = lines((log) => log.info({ order: 7, user: { id: 'u' } }, 'paid %d cents', 300));
    assert.equal(line.order, 7);
    assert.deepEqual(line.user, { id: 'u' });
    assert.equal(line.msg, 'paid 300 cents');
    assert.equal(line.level, 30);
  });

  it("an object's own msg is the message when no message argument is given, and is never written twice", () => {
    const [own, given] = lines((log) => {
      log.info({ msg: 'from the object', a: 1 });
      log.info({ msg: 'from the object' }, 'given');
    });
    assert.equal(own.msg, 'from the object');
    assert.equal(given.msg, 'given');
  });

  it('info(err) writes err with type, message and stack, and takes its message', () => {
    const [line] = lines((log) => log.error(new TypeError('broken')));
    assert.equal(line.msg, 'broken');
    assert.equal(line.err.type, 'TypeError');
    assert.equal(line.err.message, 'broken');
    assert.match(line.err.stack, /log\.spec\.js/);
  });

  it('info(err, msg, ...args) keeps the given message', () => {
    const [line] = lines((log) => log.error(new Error('inner'), 'charge %s failed', 'ch_1'));
    assert.equal(line.msg, 'charge ch_1 failed');
    assert.equal(line.err.message, 'inner');
  });

  it("info({ err }, msg) serialises the err; without msg the message is err's", () => {
    const [withMsg, without] = lines((log) => {
      log.warn({ err: new RangeError('out'), attempt: 2 }, 'retrying');
      log.warn({ err: new RangeError('out') });
    });
    assert.equal(withMsg.msg, 'retrying');
    assert.equal(withMsg.attempt, 2);
    assert.equal(withMsg.err.type, 'RangeError');
    assert.equal(withMsg.err.message, 'out');
    assert.equal(without.msg, 'out');
  });

  it('serializeError gives type, message, stack, and code, cause and other own properties when present', () => {
    const err = new Error('outer', { cause: new TypeError('inner') });
    err.code = 'E_OUTER';
    err.statusCode = 503;
    const out = serializeError(err);
    assert.equal(out.type, 'Error');
    assert.equal(out.message, 'outer');
    assert.match(out.stack, /log\.spec\.js/);
    assert.equal(out.code, 'E_OUTER');
    assert.equal(out.statusCode, 503);
    assert.equal(out.cause.type, 'TypeError');
    assert.equal(out.cause.message, 'inner');
    const plain = serializeError(new Error('plain'));
    assert.equal('code' in plain || 'cause' in plain, false);
  });

  it('Errors nested in a logged object are serialised too', () => {
    const [line] = lines((log) => log.info({ result: { failures: [new SyntaxError('bad')] } }, 'done'));
    assert.equal(line.result.failures[0].type, 'SyntaxError');
    assert.equal(line.result.failures[0].message, 'bad');
  });

  it('an array as the merging object is spread by index, as pino does with any enumerable keys', () => {
    const [line] = lines((log) => log.info(['a', 'b'], 'array'));
    assert.equal(line['0'], 'a');
    assert.equal(line['1'], 'b');
    assert.equal(line.msg, 'array');
  });
});

describe('child loggers', () => {
  it('child(bindings) adds the bindings to every line, reading them once when the child is made', () => {
    const out = sink();
    let reads = 0;
    const bindings = {
      get user() {
        reads++;
        return 'u1';
      },
    };
    const child = createLogger('info', out).child(bindings);
    child.info('one');
    child.info('two');
    assert.equal(reads, 1);
    assert.deepEqual(
      out.entries().map((e) => [e.user, e.msg]),
      [
        ['u1', 'one'],
        ['u1', 'two'],
      ],
    );
  });

  it("nested children keep their parents' bindings and the request's reqId; a child's binding replaces its parent's", () => {
    const out = sink();
    createLogger('info', out).forRequest(5).child({ user: 'a', step: 1 }).child({ step: 2, part: 'x' }).info('deep');
    const [line] = out.entries();
    assert.equal(line.reqId, 5);
    assert.equal(line.user, 'a');
    assert.equal(line.step, 2);
    assert.equal(line.part, 'x');
    assert.deepEqual(
      topLevelKeys(out.lines[0]).filter((k) => k === 'step'),
      ['step'],
    );
  });

  it('bindings cannot set level, time, pid, hostname, reqId or msg', () => {
    const out = sink();
    const child = createLogger('info', out).forRequest(5).child({ level: 60, time: 0, pid: 1, hostname: 'evil', reqId: 999, msg: 'forged', ok: true });
    child.info('real');
    const [line] = out.entries();
    assert.equal(line.level, 30);
    assert.notEqual(line.time, 0);
    assert.equal(line.pid, process.pid);
    assert.equal(line.hostname, os.hostname());
    assert.equal(line.reqId, 5);
    assert.equal(line.msg, 'real');
    assert.equal(line.ok, true);
  });

  it('child(bindings, { level }) has its own level; an unknown level keeps the parent one', () => {
    const out = sink();
    const root = createLogger('info', out);
    const verbose = root.child({ part: 'db' }, { level: 'debug' });
    const quiet = root.child({ part: 'http' }, { level: 'error' });
    const odd = root.child({}, { level: 'loud' });
    assert.equal(verbose.level, 'debug');
    assert.equal(quiet.level, 'error');
    assert.equal(odd.level, 'info');
    verbose.debug('shown');
    quiet.warn('hidden');
    assert.deepEqual(
      out.entries().map((e) => e.msg),
      ['shown'],
    );
  });

  it('a logged object cannot replace a binding', () => {
    const [line] = lines((log) => log.child({ tenant: 'acme' }).info({ tenant: 'evil', other: 1 }, 'x'));
    assert.equal(line.tenant, 'acme');
    assert.equal(line.other, 1);
  });
});

describe('logging never throws', () => {
  it("info('query', context.query): a null-prototype object as argument, object or %s", () => {
    const query = Object.create(null);
    query.a = '1';
    const [plain, merged, formatted] = lines((log) => {
      log.info('query', query);
      log.info(query, 'merged');
      log.info('query %s %j', query, query);
    });
    assert.equal(plain.msg, 'query');
    assert.equal(merged.a, '1');
    assert.equal(formatted.msg, 'query [object Object] {"a":"1"}');
  });

  it('info({}, 10n) and other BigInts become strings', () => {
    const [msg, field, placeholder] = lines((log) => {
      log.info({}, 10n);
      log.info({ big: 2n ** 70n, nested: [1n] });
      log.info('%d %s', 5n, 6n);
    });
    assert.equal(msg.msg, '10');
    assert.equal(field.big, '1180591620717411303424');
    assert.deepEqual(field.nested, ['1']);
    assert.equal(placeholder.msg, '5 6');
  });

  it('cyclic values become "[Circular]"', () => {
    const cyclic = { name: 'loop' };
    cyclic.self = cyclic;
    const err = new Error('self-caused');
    err.cause = err;
    const [asObject, asField, asError] = lines((log) => {
      log.info(cyclic);
      log.info({ cyclic }, 'field');
      log.error(err);
    });
    assert.equal(asObject.name, 'loop');
    assert.equal(asObject.self, '[Circular]');
    assert.equal(asField.cyclic.self, '[Circular]');
    assert.equal(asError.err.cause, '[Circular]');
  });

  it('a Symbol as message is stringified; as a value or key it is dropped; functions are dropped', () => {
    const [msg, field] = lines((log) => {
      log.info(Symbol('why'));
      log.info({ s: Symbol('v'), [Symbol('k')]: 1, fn() {}, kept: 1 });
    });
    assert.equal(msg.msg, 'Symbol(why)');
    assert.deepEqual(
      Object.keys(field).filter((k) => !['level', 'time', 'pid', 'hostname', 'reqId'].includes(k)),
      ['kept'],
    );
  });

  it('an Error with a throwing getter is still logged', () => {
    const err = new Error('getter');
    Object.defineProperty(err, 'code', {
      enumerable: true,
      get: () => {
        throw new Error('no code for you');
      },
    });
    const hostile = new Error('hidden');
    Object.defineProperty(hostile, 'message', {
      get: () => {
        throw new Error('no message');
      },
    });
    const [first, second] = lines((log) => {
      log.error(err);
      log.error({ err: hostile }, 'nested');
    });
    assert.equal(first.err.message, 'getter');
    assert.equal(first.err.code, '[unreadable]');
    assert.equal(second.msg, 'nested');
    assert.equal(second.err.message, '[unreadable]');
  });

  it('a Proxy whose traps all throw: as object, message, field, placeholder, Error, bindings or this', () => {
    const trap = () => {
      throw new Error('trap');
    };
    const proxy = new Proxy({}, { get: trap, ownKeys: trap, getPrototypeOf: trap, getOwnPropertyDescriptor: trap, has: trap });
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    const entries = lines((log) => {
      log.info(proxy);
      log.info(proxy, 'as object');
      log.info({ proxy, revoked }, 'as field');
      log.info('%s %d %j %o', proxy, proxy, proxy, revoked);
      log.info({}, proxy);
      log.child(proxy, proxy).info('as bindings');
      log.info.call(proxy, 'as this');
    });
    assert.equal(entries.length, 7);
    assert.equal(entries[1].msg, 'as object');
    assert.equal(entries[2].proxy, '[unserializable]');
    assert.equal(entries[5].msg, 'as bindings');
    assert.equal(entries[6].msg, 'as this');
  });

  it('a toJSON that throws is survived', () => {
    const [line] = lines((log) =>
      log.info(
        {
          bad: {
            toJSON: () => {
              throw new Error('toJSON');
            },
          },
          good: 1,
        },
        'still here',
      ),
    );
    assert.equal(line.msg, 'still here');
    assert.equal(line.good, 1);
    assert.equal(line.bad, '[unserializable]');
  });

  it('a detached method logs as the root instead of throwing', () => {
    const out = sink();
    const { info } = createLogger('info', out).forRequest(2);
    assert.doesNotThrow(() => info('detached'));
    assert.equal(out.entries()[0].msg, 'detached');
  });

  it('when a line cannot be built, it is still written with a placeholder message', () => {
    const out = sink();
    const log = createLogger('info', out).forRequest(4);
    const stringify = JSON.stringify;
    JSON.stringify = () => {
      throw new Error('JSON is broken');
    };
    try {
      assert.doesNotThrow(() => log.info({ a: 1 }, 'lost'));
    } finally {
      JSON.stringify = stringify;
    }
    const [line] = out.entries();
    assert.equal(line.reqId, 4);
    assert.equal(line.msg, '[unloggable log arguments]');
  });

  it('a destination that throws does not throw into the caller', () => {
    const log = createLogger('info', {
      write() {
        throw new Error('disk full');
      },
    });
    assert.doesNotThrow(() => log.info('lost'));
  });
});

describe('a logged object cannot forge the line', () => {
  it('level, time, pid, hostname, reqId and msg in a logged object are dropped, each key written once', () => {
    const forged = { level: 60, time: 0, pid: 1, hostname: 'evil', reqId: 999, msg: 'forged', body: 'kept' };
    const [withMsg, withoutMsg] = lines((log) => {
      log.info(forged, 'real');
      log.info(JSON.parse(JSON.stringify({ ...forged, msg: undefined })));
    });
    assert.equal(withMsg.level, 30);
    assert.notEqual(withMsg.time, 0);
    assert.equal(withMsg.pid, process.pid);
    assert.equal(withMsg.hostname, os.hostname());
    assert.equal(withMsg.reqId, 7);
    assert.equal(withMsg.msg, 'real');
    assert.equal(withMsg.body, 'kept');
    assert.equal(withoutMsg.level, 30);
    assert.equal(withoutMsg.reqId, 7);
  });

  it('a forged level or reqId inside a string, a key or a message stays inside its string', () => {
    const attack = 'x","level":60,"reqId":1,"y":"';
    const [line] = lines((log) => log.info({ [attack]: attack, nested: { level: 60, reqId: 1 } }, attack));
    assert.equal(line.level, 30);
    assert.equal(line.reqId, 7);
    assert.equal(line[attack], attack);
    assert.equal(line.msg, attack);
    assert.deepEqual(line.nested, { level: 60, reqId: 1 });
  });

  it('a value with \\n, U+2028 or U+2029 stays escaped, so the line stays one line', () => {
    const out = sink();
    createLogger('info', out).child({ 'b\u2028': 'v\u2029' }).info({ 'k\u2028': 'a\nb\u2028c' }, 'm\n\u2028\u2029');
    const [raw] = out.lines;
    assert.equal(raw.split('\n').length, 2);
    assert.ok(!/[\u2028\u2029]/.test(raw), raw);
    assert.ok(raw.includes('\\u2028') && raw.includes('\\u2029') && raw.includes('\\n'));
    const [line] = out.entries();
    assert.equal(line['k\u2028'], 'a\nb\u2028c');
    assert.equal(line['b\u2028'], 'v\u2029');
    assert.equal(line.msg, 'm\n\u2028\u2029');
  });
});

describe('a line has one length budget, whichever way its text comes in', () => {
  // Far past any line's budget: each way in below would otherwise write megabytes.
  const huge = 'x'.repeat(8_000_000);
  const many = Array.from({ length: 2_000_000 }, () => 'ab');
  const cases = {
    'a message': (log) => log.info(huge),
    '%s of a string': (log) => log.info('got %s', huge),
    '%s of a large array': (log) => log.info('got %s', many),
    '%s of nested arrays': (log) =>
      log.info(
        'got %s',
        Array.from({ length: 1000 }, () => many.slice(0, 5000)),
      ),
    '%j of a string': (log) => log.info('got %j', huge),
    '%d, %s and %j together': (log) => log.info('%s %s %j %s', huge, huge, { a: huge }, many),
    'a field': (log) => log.info({ body: huge }, 'got it'),
    'many fields': (log) => log.info(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, huge.slice(0, 200_000)]))),
    'a key': (log) => log.info({ [huge]: 1 }),
    'a key nested in a value': (log) => log.info({ a: { [huge]: 1 } }, 'nested'),
    'nested values': (log) => log.info({ items: Array.from({ length: 50 }, () => ({ text: huge.slice(0, 100_000) })) }),
    "an Error's message and stack": (log) => log.error(new Error(huge)),
    "a child's bindings": (log) => log.child({ tag: huge }).info('tagged'),
    'a message that is an object': (log) => log.info(null, { huge }),
  };
  for (const [what, write] of Object.entries(cases)) {
    it(`${what}: the line stays within the budget, whole JSON, and says what it cut`, () => {
      const out = sink();
      const log = createLogger('info', out).forRequest(7);
      const started = performance.now();
      write(log);
      const took = performance.now() - started;
      assert.equal(out.lines.length, 1);
      const [line] = out.lines;
      assert.ok(line.length < 1_100_000, `a line of ${line.length} characters`);
      const keys = topLevelKeys(line);
      assert.equal(new Set(keys).size, keys.length, 'a key written twice');
      assert.ok(line.endsWith('}\n') && line.indexOf('\n') === line.length - 1);
      const entry = JSON.parse(line);
      assert.equal(entry.reqId, 7);
      assert.match(line, /more characters|fields were left out/);
      // A wide bound: it catches work that grows with the value, not a slow machine.
      assert.ok(took < 1500, `took ${Math.round(took)} ms`);
    });
  }

  it('a message is cut once, to the budget, with the count of what was left out', () => {
    const [under, over, around] = lines((log) => {
      log.info('%s', 'x'.repeat(200_000));
      log.info('%s', 'x'.repeat(300_000));
      log.info('before %s after', 'x'.repeat(300_000));
    });
    assert.equal(under.msg, 'x'.repeat(200_000));
    assert.equal(over.msg, `${'x'.repeat(256 * 1024)}…[${300_000 - 256 * 1024} more characters]`);
    assert.ok(around.msg.startsWith('before xxx') && around.msg.endsWith(`…[${300_007 + 6 - 256 * 1024} more characters]`), around.msg.slice(-40));
  });

  it('a large field leaves the message, the short values and every key as they are', () => {
    const [entry] = lines((log) => log.info({ big: 'x'.repeat(300_000), a: 1, status: 'failed', userId: 42 }, 'order failed'));
    assert.equal(entry.msg, 'order failed');
    assert.deepEqual([entry.a, entry.status, entry.userId], [1, 'failed', 42]);
    assert.match(entry.big, /more characters\]$/);
    const [child] = lines((log) => log.child({ b: 'x'.repeat(300_000), c: 'small' }).info('child msg'));
    assert.equal(child.c, 'small');
    assert.equal(child.msg, 'child msg');
    assert.match(child.b, /^x+…\[\d+ more characters\]$/);
  });

  it('a line still too long for the budgets (a long key nested in a value) keeps its ids and message', () => {
    const [entry] = lines((log) => log.info({ a: { ['k'.repeat(2_000_000)]: 1 } }, 'nested key'));
    assert.equal(entry.msg, 'nested key');
    assert.equal(entry.reqId, 7);
    assert.match(entry.cut, /fields were left out/);
  });

  it('tens of thousands of arguments do not make logging throw', () => {
    const { log } = require('../../lib/index.js');
    assert.doesNotThrow(() => log.info('m %s', ...Array(70_000).fill('a')));
    assert.doesNotThrow(() => log.child({ c: 1 }).info('m', ...Array(70_000).fill('a')));
  });

  it('a line within the budget is written whole', () => {
    const [entry] = lines((log) => log.info({ body: 'y'.repeat(100_000) }, 'got %s', 'z'.repeat(50_000)));
    assert.equal(entry.body.length, 100_000);
    assert.equal(entry.msg, `got ${'z'.repeat(50_000)}`);
  });
});

describe('prettyDestination', () => {
  it('writes a readable line, and passes odd lines through without throwing', () => {
    const written = [];
    const pretty = prettyDestination({ write: (line) => written.push(line) });
    const out = sink();
    createLogger('info', out).forRequest(3).info({ order: 1 }, 'paid');
    pretty.write(out.lines[0]);
    assert.match(written[0], /^\d\d:\d\d:\d\d\.\d{3} INFO {2}\[req 3\] paid order=1\n$/);
    const odd = ['null\n', '5\n', '[1]\n', 'not json\n', '{"time":"never"}\n', '{"level":{"a":1},"msg":{"b":2},"reqId":null,"err":null}\n'];
    for (const line of odd) assert.doesNotThrow(() => pretty.write(line));
    assert.deepEqual(written.slice(1, 5), ['null\n', '5\n', '[1]\n', 'not json\n']);
    assert.equal(written.length, 1 + odd.length);
  });

  it("writes a client's text with its control characters escaped: it cannot forge a line or drive the terminal", () => {
    const written = [];
    const pretty = prettyDestination({ write: (line) => written.push(line) });
    const out = sink();
    const forged = 'order\n12:00:00.000 FATAL forged line\u001b[2J\r';
    createLogger('info', out)
      .forRequest(3)
      .error({ path: forged, err: new Error(forged) }, forged);
    pretty.write(out.lines[0]);
    const lines = written[0].split('\n').filter(Boolean);
    assert.match(lines[0], /^\d\d:\d\d:\d\d\.\d{3} ERROR \[req 3\] order\\n12:00:00\.000 FATAL forged line\\u001b\[2J\\u000d path=order\\n/);
    // The stack's lines are indented: none starts as a line of the log does.
    for (const line of lines.slice(1)) assert.match(line, /^ {4}/);
    assert.ok(!/[\u0000-\u0009\u000b-\u001f]/.test(written[0]), JSON.stringify(written[0]));
  });
});
