'use strict';
// The endpoint policy for addresses outside loopback. These specs name real non-loopback
// addresses (cloud metadata services), so the service runs inside a network namespace that holds
// only loopback (`unshare --net`, root): a policy bug then fails the spec with an unreachable
// network instead of sending a packet anywhere.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const CHILD = path.join(__dirname, 'policy-child.js');

function inIsolation(endpoints, allowPrivate, kind = 'registry') {
  // As root (CI) a plain network namespace; otherwise a user namespace maps the caller to root in it.
  const isolate = process.getuid?.() === 0 ? ['--net'] : ['--net', '--map-root-user'];
  const run = spawnSync('unshare', [...isolate, 'sh', '-c', 'ip link set lo up && exec "$0" "$1"', process.execPath, CHILD], {
    env: { ...process.env, ENDPOINTS: JSON.stringify(endpoints), ALLOW_PRIVATE: String(allowPrivate), KIND: kind },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(run.status, 0, `the isolated run failed (unshare needs root): ${run.error ?? ''} ${run.stderr}`);
  const result = JSON.parse(run.stdout);
  assert.equal(result.isolation, 'ENETUNREACH', 'the namespace reaches nothing but loopback');
  return result.answers;
}

const METADATA = {
  'https://169.254.169.254': /169\.254\.169\.254 is a link-local address/,
  'https://169.254.0.23': /link-local/,
  'https://100.100.100.200': /100\.100\.100\.200 is a cloud metadata service \(Alibaba Cloud\)/,
  'https://192.0.0.192': /192\.0\.0\.192 is a cloud metadata service \(Oracle/,
  'https://[fd00:ec2::254]': /cloud metadata service \(AWS/,
  'https://[fd00:0ec2:0000::0254]': /cloud metadata service \(AWS/,
  'https://[fd20:ce::254]': /cloud metadata service \(Google/,
  'https://[::ffff:100.100.100.200]': /Alibaba/,
  'https://[64:ff9b::c000:c0]': /Oracle/,
  'https://[fe80::1]': /link-local/,
  'https://metadata.google.internal': /metadata\.google\.internal is a cloud metadata service/,
  'https://metadata.tencentyun.com': /cloud metadata service/,
};

describe('endpoint policy, in a network namespace with only loopback', () => {
  for (const allowPrivate of [false, true]) {
    it(`cloud metadata services are refused${allowPrivate ? ', even with private endpoints allowed' : ''}`, () => {
      const answers = inIsolation(Object.keys(METADATA), allowPrivate);
      for (const [endpoint, pattern] of Object.entries(METADATA)) {
        assert.equal(answers[endpoint].status, 400, endpoint);
        assert.match(answers[endpoint].message, /^endpoint refused: /, endpoint);
        assert.match(answers[endpoint].message, pattern, endpoint);
        // No setting allows them, and the answer names none.
        if (!/ is a cloud metadata service$/.test(answers[endpoint].message)) {
          assert.match(answers[endpoint].message, /; link-local and metadata addresses are never contacted$/, endpoint);
        }
      }
    });
  }

  it("the node scanner's gRPC Ping (clairify grpcEndpoint) obeys the same policy", () => {
    const answers = inIsolation(Object.keys(METADATA), true, 'node-scanner');
    for (const [endpoint, pattern] of Object.entries(METADATA)) {
      assert.equal(answers[endpoint].status, 400, endpoint);
      assert.match(answers[endpoint].message, /^node scanner: endpoint refused: /, endpoint);
      assert.match(answers[endpoint].message, pattern, endpoint);
    }
  });

  it('an ordinary outside address is not refused by the policy: it fails on the network (here, unreachable)', () => {
    const answers = inIsolation(['https://192.0.2.10'], false);
    assert.equal(answers['https://192.0.2.10'].status, 400);
    assert.doesNotMatch(answers['https://192.0.2.10'].message, /endpoint refused/);
  });
});
