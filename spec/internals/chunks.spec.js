'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { Chunks } = require('../../lib/body/chunks.js');

describe('Chunks', () => {
  it('holds chunks of any sizes, mixed, in order: bytes() is every byte, take() hands them over', () => {
    const source = crypto.randomBytes(300_000);
    const sizes = [1, 1, 3, 1023, 1024, 5000, 1, 70_000, 2, 16_384, 16_385];
    for (const [i, take] of [
      [0, false],
      [1, true],
    ]) {
      const chunks = new Chunks();
      let at = i;
      for (let n = 0; at < source.length; n++) {
        const size = Math.min(sizes[n % sizes.length], source.length - at);
        chunks.add(source.subarray(at, at + size));
        at += size;
      }
      assert.equal(chunks.size, source.length - i);
      const bytes = take ? Buffer.concat(chunks.take()) : chunks.bytes();
      assert.ok(bytes.equals(source.subarray(i)));
      if (take) assert.deepEqual([chunks.size, chunks.take()], [0, []]);
    }
  });

  it('a million one-byte chunks are a few dozen buffers, not a million', () => {
    const chunks = new Chunks();
    const byte = Buffer.from('x');
    for (let i = 0; i < 1_000_000; i++) chunks.add(byte);
    const held = chunks.take();
    assert.ok(held.length < 100, `${held.length} buffers`);
    assert.equal(
      held.reduce((sum, b) => sum + b.length, 0),
      1_000_000,
    );
  });

  it('a body in one chunk is kept as it came; past it, a view of a much larger buffer is copied out, one that is most of its buffer kept as it is', () => {
    const big = Buffer.alloc(256 * 1024, 7);
    const chunks = new Chunks();
    const only = big.subarray(0, 100);
    chunks.add(only);
    assert.equal(chunks.bytes(), only);
    chunks.add(big.subarray(100, 20_000));
    chunks.add(big.subarray(20_000, 60_000));
    const whole = Buffer.alloc(4096, 1);
    chunks.add(whole);
    const held = chunks.take();
    for (const buffer of held.slice(0, -1)) assert.ok(buffer.buffer.byteLength <= 64 * 1024, `held ${buffer.buffer.byteLength} bytes for ${buffer.length}`);
    assert.equal(held.at(-1), whole);
    assert.ok(Buffer.concat(held).equals(Buffer.concat([big.subarray(0, 60_000), whole])));
  });
});
