'use strict';
// The idempotency stores: one contract, held by the in-memory store and by the Redis store
// against a real redis-server; then what only Redis has (outages, a hung server, credentials
// kept out of the logs) and what only memory has (its bounds).
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { MemoryStore } = require('../lib/events/idempotency/memory-store.js');
const { redisStore } = require('../lib/events/idempotency/redis-store.js');
const { createLogger } = require('../lib/log/log.js');
const { sink } = require('./helpers');
const { startRedis } = require('./redis');

const checkout = path.join(__dirname, '..');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Every byte value, and a few that are not UTF-8. */
const BYTES = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0x00])]);
/** A claim's and an answer's short life, and how long the specs wait for it to end. */
/** An answer as the request path keeps one: status, headers, and the body's bytes. */
const answerOf = (body) => ({
  status: 200,
  headers: [
    ['content-type', 'application/octet-stream'],
    ['ce-id', 'x'],
  ],
  body,
});
const SHORT_MS = 200;
let tokens = 0;
/** One delivery's claim on `key`: a token of its own, and its event's digest. */
const held = (key, digest = '') => ({ key, token: `token-${++tokens}`, digest });
const PAST_SHORT_MS = 500;
/** The Redis store's bound on one call is 2 s: a rejection within this caught no hang. */
const REJECTS_WITHIN_MS = 3000;

/** Resolves once `check()` is true, polling; fails after `ms`. */
async function until(check, what, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

/** How long `promise` takes to reject, and its error. */
async function rejection(promise) {
  const started = Date.now();
  const error = await promise.then(
    () => assert.fail('resolved'),
    (err) => err,
  );
  return { ms: Date.now() - started, error };
}

/** Each store kind: opens a store (several sharing one backend when `replicas` > 1) for the test `t`. */
const KINDS = {
  memory: async (t, replicas = 1) => {
    const store = new MemoryStore({ entries: 10_000, bytes: 10_000_000 });
    return Array.from({ length: replicas }, () => store);
  },
  redis: async (t, replicas = 1) => {
    const redis = await startRedis(t);
    const stores = await Promise.all(Array.from({ length: replicas }, () => redisStore(redis.url, checkout, createLogger('silent'))));
    t.after(() => Promise.all(stores.map((store) => store.close())));
    return stores;
  },
};

for (const [kind, open] of Object.entries(KINDS)) {
  describe(`the ${kind} store`, () => {
    it('claims a free key; a second claim while the first runs is told running, with the digest of its event', async (t) => {
      const [store] = await open(t);
      assert.deepEqual(await store.claim(held('k', 'digest-1'), 60_000), { state: 'claimed' });
      assert.deepEqual(await store.claim(held('k', 'digest-2'), 60_000), { state: 'running', digest: 'digest-1' });
      assert.equal((await store.claim(held('other'), 60_000)).state, 'claimed');
      assert.deepEqual(await store.claim(held('other'), 60_000), { state: 'running', digest: '' });
      assert.equal(store.problem(), undefined);
    });

    it("completing the claim stores the answer and the event's digest: the next claims get its exact bytes", async (t) => {
      const [store] = await open(t);
      const first = held('k', 'digest-1');
      await store.claim(first, 60_000);
      assert.equal(await store.complete(first, answerOf(BYTES), 60_000), 'kept');
      for (let i = 0; i < 2; i++) {
        const again = await store.claim(held('k'), 60_000);
        assert.equal(again.state, 'done');
        assert.equal(again.digest, 'digest-1');
        assert.ok(Buffer.isBuffer(again.answer.body));
        assert.deepEqual([...again.answer.body], [...BYTES]);
        assert.deepEqual(again.answer.headers, answerOf(BYTES).headers);
      }
      const empty = held('empty');
      await store.claim(empty, 60_000);
      await store.complete(empty, answerOf(Buffer.alloc(0)), 60_000);
      const replay = await store.claim(held('empty'), 60_000);
      assert.deepEqual([replay.state, replay.answer.body.length], ['done', 0]);
    });

    it("an answer's event mode is kept with it; an answer that carries no event has none", async (t) => {
      const [store] = await open(t);
      for (const [key, mode] of [
        ['binary', 'binary'],
        ['structured', 'structured'],
        ['none', undefined],
      ]) {
        const first = held(key);
        await store.claim(first, 60_000);
        await store.complete(first, { ...answerOf(Buffer.from('{}')), ...(mode === undefined ? {} : { mode }) }, 60_000);
        const again = await store.claim(held(key), 60_000);
        assert.equal(again.answer.mode, mode);
      }
    });

    it("release and extend by another delivery change nothing; its answer does not replace another's", async (t) => {
      const [store] = await open(t);
      const first = held('k');
      await store.claim(first, 60_000);
      const other = held('k');
      await store.release(other);
      assert.equal(await store.extend(other, 60_000), false);
      assert.deepEqual(await store.claim(held('k'), 60_000), { state: 'running', digest: '' });
      assert.equal(await store.complete(first, answerOf(Buffer.from('real')), 60_000), 'kept');
      await store.release(first);
      assert.equal(await store.complete(other, answerOf(Buffer.from('forged')), 60_000), 'answered');
      const done = await store.claim(held('k'), 60_000);
      assert.deepEqual([done.state, done.answer.body.toString()], ['done', 'real']);
    });

    it('a released key is claimed by the next delivery; an answer from the first then takes the place of its claim', async (t) => {
      const [store] = await open(t);
      const first = held('k');
      await store.claim(first, 60_000);
      await store.release(first);
      const second = held('k');
      assert.equal((await store.claim(second, 60_000)).state, 'claimed');
      // The first delivery ran all the same: its answer is kept for the duplicates, in the place of the second's claim.
      assert.equal(await store.complete(first, answerOf(Buffer.from('first')), 60_000), 'lapsed');
      assert.equal(await store.complete(second, answerOf(Buffer.from('second')), 60_000), 'answered');
      assert.equal((await store.claim(held('k'), 60_000)).answer.body.toString(), 'first');
    });

    it('a claim ends after claimMs unless extended; an answer whose claim had ended is still stored', async (t) => {
      const [store] = await open(t);
      const first = held('k');
      await store.claim(first, SHORT_MS);
      assert.equal((await store.claim(held('k'), SHORT_MS)).state, 'running');
      await sleep(PAST_SHORT_MS);
      assert.equal(await store.extend(first, 60_000), false);
      assert.equal(await store.complete(first, answerOf(Buffer.from('late')), 60_000), 'lapsed');
      assert.equal((await store.claim(held('k'), 60_000)).answer.body.toString(), 'late');
    });

    it('an extended claim holds past its first claimMs', async (t) => {
      const [store] = await open(t);
      const first = held('k');
      await store.claim(first, SHORT_MS);
      for (let i = 0; i < 4; i++) {
        await sleep(SHORT_MS / 2);
        assert.equal(await store.extend(first, SHORT_MS), true);
      }
      assert.equal((await store.claim(held('k'), SHORT_MS)).state, 'running');
      assert.equal(await store.complete(first, answerOf(Buffer.from('answer')), 60_000), 'kept');
    });

    it('an answer ends after windowMs: the next delivery claims again', async (t) => {
      const [store] = await open(t);
      const first = held('k');
      await store.claim(first, 60_000);
      await store.complete(first, answerOf(Buffer.from('answer')), SHORT_MS);
      assert.equal((await store.claim(held('k'), 60_000)).state, 'done');
      await sleep(PAST_SHORT_MS);
      assert.equal((await store.claim(held('k'), 60_000)).state, 'claimed');
    });

    it('50 claims of one key at once, spread over 5 replicas: exactly one claims', async (t) => {
      const stores = await open(t, 5);
      const claims = await Promise.all(Array.from({ length: 50 }, (_, i) => stores[i % stores.length].claim(held('k'), 60_000)));
      assert.equal(claims.filter((c) => c.state === 'claimed').length, 1);
      assert.equal(claims.filter((c) => c.state === 'running').length, 49);
    });
  });
}

describe('the redis store when Redis is down, hung or guarded', () => {
  it('writes nothing but the keys it is given, each with a time to live: a claim for claimMs, an answer for windowMs', async (t) => {
    const redis = await startRedis(t);
    const store = await redisStore(redis.url, checkout, createLogger('silent'));
    t.after(() => store.close());
    const raw = require('redis').createClient({ url: redis.url });
    raw.on('error', () => {}); // Redis stops before this client closes.
    await raw.connect();
    t.after(() => raw.close().catch(() => {}));
    await store.claim(held('running'), 60_000);
    const answered = held('answered');
    await store.claim(answered, 60_000);
    await store.complete(answered, answerOf(BYTES), 30_000);
    const released = held('released');
    await store.claim(released, 60_000);
    await store.release(released);
    assert.deepEqual((await raw.keys('*')).sort(), ['answered', 'running']);
    const claimTtl = await raw.pTTL('running');
    const answerTtl = await raw.pTTL('answered');
    assert.ok(claimTtl > 30_000 && claimTtl <= 60_000, `${claimTtl}`);
    assert.ok(answerTtl > 0 && answerTtl <= 30_000, `${answerTtl}`);
  });

  it('with Redis stopped, claim, complete and release reject within the bound, and problem() says so without the address', async (t) => {
    const redis = await startRedis(t);
    const store = await redisStore(redis.url, checkout, createLogger('silent'));
    t.after(() => store.close());
    const first = held('k');
    await store.claim(first, 60_000);
    await redis.stop();
    for (const call of [
      () => store.claim(held('k'), 60_000),
      () => store.extend(first, 60_000),
      () => store.complete(first, answerOf(Buffer.from('x')), 60_000),
      () => store.release(first),
    ]) {
      const { ms, error } = await rejection(call());
      assert.ok(ms < REJECTS_WITHIN_MS, `rejected after ${ms} ms`);
      assert.match(error.message, /^the idempotency store \(redis\)/);
      assert.doesNotMatch(error.message, new RegExp(`127\\.0\\.0\\.1|${redis.port}`));
    }
    const problem = store.problem();
    assert.equal(problem, 'the idempotency store (redis) is unreachable');
  });

  it('when Redis comes back on its address, problem() clears and claims work again', async (t) => {
    const redis = await startRedis(t);
    const store = await redisStore(redis.url, checkout, createLogger('silent'));
    t.after(() => store.close());
    await redis.stop();
    await until(() => store.problem() !== undefined, 'the outage seen');
    await redis.start();
    await until(() => store.problem() === undefined, 'the store back');
    assert.equal((await store.claim(held('k'), 60_000)).state, 'claimed');
  });

  it('a paused (hung) Redis cannot hang a claim: it rejects within the bound, and readiness says so until Redis answers again', async (t) => {
    const redis = await startRedis(t);
    const store = await redisStore(redis.url, checkout, createLogger('silent'));
    t.after(() => store.close());
    redis.process.kill('SIGSTOP');
    t.after(() => redis.process.kill('SIGCONT'));
    const { ms, error } = await rejection(store.claim(held('k'), 60_000));
    assert.ok(ms < REJECTS_WITHIN_MS, `rejected after ${ms} ms`);
    assert.equal(error.message, 'the idempotency store (redis) did not answer within 2 s');
    assert.equal(store.problem(), 'the idempotency store (redis) did not answer within 2 s');
    redis.process.kill('SIGCONT');
    await until(() => store.problem() === undefined, 'answering again');
    assert.equal((await store.claim(held('other'), 60_000)).state, 'claimed');
  });

  it('starts while Redis is down: problem() is set at once, and the store connects when Redis is there', async (t) => {
    const redis = await startRedis(t);
    await redis.stop();
    const started = Date.now();
    const store = await redisStore(redis.url, checkout, createLogger('silent'));
    t.after(() => store.close());
    assert.ok(Date.now() - started < REJECTS_WITHIN_MS);
    assert.equal(store.problem(), 'the idempotency store (redis) is unreachable');
    await assert.rejects(store.claim(held('k'), 60_000), /unreachable/);
    await redis.start();
    await until(() => store.problem() === undefined, 'the store connected');
    assert.equal((await store.claim(held('k'), 60_000)).state, 'claimed');
  });

  it("logs the outage once at warn and the return once at info, naming host:port and never the URL's username or password", async (t) => {
    const password = 'pa55-Secret/word';
    const redis = await startRedis(t, { password });
    const out = sink();
    const url = `redis://default:${encodeURIComponent(password)}@127.0.0.1:${redis.port}/0`;
    const store = await redisStore(url, checkout, createLogger('trace', out));
    t.after(() => store.close());
    const first = held('k');
    await store.claim(first, 60_000);
    await store.complete(first, answerOf(Buffer.from('answer')), 60_000);
    assert.equal((await store.claim(held('k'), 60_000)).state, 'done');
    await redis.stop();
    await until(() => store.problem() !== undefined, 'the outage seen');
    for (let i = 0; i < 3; i++) await store.claim(held('k'), 60_000).catch(() => {});
    await sleep(500); // a few reconnection attempts, each refused
    await redis.start();
    await until(() => store.problem() === undefined, 'the store back');
    await store.close();
    const warns = out.entries().filter((e) => e.level === 40);
    const infos = out.entries().filter((e) => e.level === 30);
    assert.equal(warns.length, 1, out.text());
    assert.equal(warns[0].redis, `127.0.0.1:${redis.port}`);
    assert.match(warns[0].msg, /^the idempotency store \(redis\) is unreachable/);
    assert.equal(typeof warns[0].reason, 'string');
    assert.equal(infos.length, 1, out.text());
    assert.match(infos[0].msg, /reachable again/);
    for (const secret of [password, encodeURIComponent(password), 'default:']) assert.ok(!out.text().includes(secret), `the log holds ${secret}`);
  });

  it('a wrong password is logged as refused, without the password; redis:// and rediss:// alike', async (t) => {
    const redis = await startRedis(t, { password: 'right-one' });
    const wrong = 'Wr0ng-Pa55';
    for (const scheme of ['redis', 'rediss']) {
      const out = sink();
      const store = await redisStore(`${scheme}://someone:${wrong}@127.0.0.1:${redis.port}`, checkout, createLogger('trace', out));
      t.after(() => store.close());
      assert.equal(store.problem(), 'the idempotency store (redis) is unreachable');
      await assert.rejects(store.claim(held('k'), 60_000), /unreachable/);
      await sleep(300);
      await store.close();
      assert.equal(out.entries().filter((e) => e.level === 40).length, 1, out.text());
      for (const secret of [wrong, 'someone']) assert.ok(!out.text().includes(secret), `${scheme}: the log holds ${secret}`);
    }
  });

  it('refuses a URL that is not a Redis URL, without quoting it', async () => {
    const log = createLogger('silent');
    for (const url of ['http://user:s3cret@127.0.0.1:6379', 'redis://user:s3cret@127.0.0.1:6379/not-a-number', 'redis://user:s3cret@', 'not a url s3cret']) {
      await assert.rejects(redisStore(url, checkout, log), (err) => {
        assert.match(err.message, /^the idempotency store's URL/);
        assert.ok(!err.message.includes('s3cret'), err.message);
        return true;
      });
    }
  });

  it('close() ends the store without throwing, also when Redis is gone; calls after it reject', async (t) => {
    const redis = await startRedis(t);
    const store = await redisStore(redis.url, checkout, createLogger('silent'));
    await redis.stop();
    await store.close();
    await store.close();
    await assert.rejects(store.claim(held('k'), 60_000), /unreachable/);
    assert.equal(store.problem(), 'the idempotency store (redis) is unreachable');
  });
});

describe('where the redis package comes from', () => {
  /** Runs redisStore in a node of its own, in `cwd`, with `folder` as the function's folder; prints the outcome. */
  function outcome(cwd, folder) {
    const script = `const { redisStore } = require(${JSON.stringify(path.join(checkout, 'lib', 'events', 'idempotency', 'redis-store.js'))});
const { createLogger } = require(${JSON.stringify(path.join(checkout, 'lib', 'log', 'log.js'))});
redisStore('redis://127.0.0.1:1', ${JSON.stringify(folder)}, createLogger('silent')).then(
  async (store) => { console.log('store: ' + store.problem()); await store.close(); },
  (err) => console.log('error: ' + err.message),
);`;
    return execFileSync(process.execPath, ['-e', script], { cwd, encoding: 'utf8', env: { ...process.env, NODE_PATH: '' } }).trim();
  }

  it("is found from the function's folder, and without it the error says to install it there", (t) => {
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-no-redis-'));
    t.after(() => fs.rmSync(elsewhere, { recursive: true, force: true }));
    assert.equal(outcome(elsewhere, checkout), 'store: the idempotency store (redis) is unreachable');
    const missing = outcome(elsewhere, elsewhere);
    assert.match(missing, /^error: .*'redis' is not installed: run `npm install redis` in the function's folder/);
    // Version 4's module has createClient but not the API of 5 and later.
    fs.mkdirSync(path.join(elsewhere, 'node_modules', 'redis'), { recursive: true });
    fs.writeFileSync(path.join(elsewhere, 'node_modules', 'redis', 'index.js'), 'exports.createClient = () => { throw new Error("not called"); };');
    assert.match(outcome(elsewhere, elsewhere), /^error: .*'redis' installed is older than version 5: run `npm install redis@latest`/);
  });

  it('is not loaded by funcrun unless a Redis store is made', () => {
    const script = `require(${JSON.stringify(path.join(checkout, 'lib', 'index.js'))});
console.log(Object.keys(require.cache).filter((file) => /node_modules[\\\\/](redis|@redis)[\\\\/]/.test(file)).length);`;
    assert.equal(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim(), '0');
  });
});

describe('the memory store', () => {
  const answer = (n) => Buffer.alloc(n, 1);

  async function answered(store, key, bytes = 1) {
    const claim = held(key);
    await store.claim(claim, 60_000);
    await store.complete(claim, { status: 200, headers: [], body: answer(bytes) }, 60_000);
  }
  const state = async (store, key) => (await store.claim(held(key), 60_000)).state;

  it('keeps at most `entries` keys: the least recently used answer leaves first, and a key read by claim() is recently used', async () => {
    const store = new MemoryStore({ entries: 3, bytes: 1_000_000 });
    for (const key of ['a', 'b', 'c']) await answered(store, key);
    assert.equal(await state(store, 'a'), 'done');
    await answered(store, 'd');
    assert.equal(store.size.entries, 3);
    assert.equal(await state(store, 'a'), 'done');
    assert.equal(await state(store, 'b'), 'claimed');
  });

  it('keeps at most `bytes` of keys and answers, oldest answers leaving first', async () => {
    // An answer of 100 bytes without headers counts 116 (its status and framing), its key 1.
    const store = new MemoryStore({ entries: 1000, bytes: 400 });
    for (const key of ['a', 'b', 'c']) await answered(store, key, 100);
    assert.equal(store.size.bytes, 351);
    await answered(store, 'd', 100);
    assert.ok(store.size.bytes <= 400);
    assert.equal(await state(store, 'a'), 'claimed');
    for (const key of ['c', 'd']) assert.equal(await state(store, key), 'done');
  });

  it("keeps an answer's bytes, not the larger buffer they were a view of, so the bound on bytes holds", async () => {
    const store = new MemoryStore({ entries: 1000, bytes: 1_000_000 });
    const big = Buffer.alloc(8 * 1024 * 1024, 7);
    const claim = held('k');
    store.claim(claim, 60_000);
    store.complete(claim, { status: 200, headers: [], body: big.subarray(0, 200) }, 60_000);
    const { answer } = store.claim(held('k'), 60_000);
    assert.deepEqual([answer.body.length, answer.body.buffer.byteLength], [200, 200]);
    assert.ok(answer.body.equals(Buffer.alloc(200, 7)));
  });

  it('takes the least recently used answer first, a just-completed claim and a read among the recent, whatever it evicted before', async () => {
    const store = new MemoryStore({ entries: 2, bytes: 1_000_000 });
    const a = held('a');
    store.claim(a, 60_000);
    await answered(store, 'b');
    // c's claim passes over a's (live) and takes b.
    const c = held('c');
    store.claim(c, 60_000);
    store.complete(c, { status: 200, headers: [], body: answer(1) }, 60_000);
    store.complete(a, { status: 200, headers: [], body: answer(1) }, 60_000);
    assert.equal(store.claim(held('c'), 60_000).state, 'done');
    // c was used after a: d takes a's place.
    await answered(store, 'd');
    assert.equal(store.claim(held('c'), 60_000).state, 'done');
    assert.equal(store.claim(held('a'), 60_000).state, 'claimed');
  });

  it("keeps a copy of an answer's Buffer: a function that writes into its own again does not change the kept answer", () => {
    const store = new MemoryStore({ entries: 10, bytes: 1_000_000 });
    // Its own memory, no view of node's pool (which the store copied before too).
    const reused = Buffer.alloc(12);
    reused.write('first answer');
    const claim = held('k');
    store.claim(claim, 60_000);
    store.complete(claim, { status: 200, headers: [['x-n', '1']], body: reused }, 60_000);
    reused.write('later answer');
    assert.equal(store.claim(held('k'), 60_000).answer.body.toString(), 'first answer');
  });

  it('keeps text cut from a larger string as text of its own: the bound on bytes holds for the memory, not only the count', () => {
    // In a process of its own, with gc: 40 answers (body and a header) of 40 characters, each cut from 5 MB.
    const store = path.join(__dirname, '..', 'lib', 'events', 'idempotency', 'memory-store.js');
    const script = `const { MemoryStore } = require(${JSON.stringify(store)});
const store = new MemoryStore({ entries: 1000, bytes: 64 * 1024 * 1024 });
global.gc();
const before = process.memoryUsage().heapUsed;
for (let i = 0; i < 40; i++) {
  const doc = 'x'.repeat(5e6) + i;
  const held = { key: 'k' + i, token: 't' + i, digest: '' };
  store.claim(held, 60000);
  store.complete(held, { status: 200, headers: [['x-part', doc.slice(100, 140)]], body: doc.slice(1000, 1040) }, 60000);
}
global.gc();
process.stdout.write(String(Math.round((process.memoryUsage().heapUsed - before) / 1e6)));`;
    const grown = Number(execFileSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' }));
    assert.ok(grown < 32, `the heap grew by ${grown} MB for 40 answers of 40 characters`);
  });

  it('never evicts a live claim, even past its bounds: a duplicate must not run', async () => {
    const store = new MemoryStore({ entries: 2, bytes: 1_000_000 });
    for (const key of ['a', 'b', 'c', 'd']) assert.equal(await state(store, key), 'claimed');
    assert.equal(store.size.entries, 4);
    for (const key of ['a', 'b', 'c', 'd']) assert.equal(await state(store, key), 'running');
  });
});
