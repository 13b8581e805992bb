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
  // IPv4 carried in IPv6 by a translator or relay: translated (SIIT), 6to4, NAT64's local-use prefix at /96 and /48.
  'https://[::ffff:0:169.254.169.254]': /169\.254\.169\.254 is a link-local address/,
  'https://[2002:a9fe:a9fe::1]': /169\.254\.169\.254 is a link-local address/,
  'https://[64:ff9b:1::a9fe:a9fe]': /169\.254\.169\.254 is a link-local address/,
  'https://[64:ff9b:1:a9fe:a9:fe00::]': /169\.254\.169\.254 is a link-local address/,
  'https://[64:ff9b:1:0:c0:0:c000::]': /Oracle/,
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

describe('the address policy, read from IPv6 forms that carry an IPv4 address (pure)', () => {
  const { refusedAddress } = require('../build/lib/endpoint.js');

  it('reads the IPv4 address where each form puts it', () => {
    const refused = {
      '::ffff:0:127.0.0.1': '127.0.0.1 is a loopback address',
      '::ffff:0:a9fe:a9fe': '169.254.169.254 is a link-local address (cloud metadata)',
      '2002:7f00:1::': '127.0.0.1 is a loopback address',
      '2002:a9fe:a9fe:1:2:3:4:5': '169.254.169.254 is a link-local address (cloud metadata)',
      '64:ff9b:1::7f00:1': '127.0.0.1 is a loopback address',
      '64:ff9b:1:ffff::a9fe:a9fe': '169.254.169.254 is a link-local address (cloud metadata)',
      '64:ff9b:1:a9fe:a9:fe00::': '169.254.169.254 is a link-local address (cloud metadata)',
      '64:ff9b:1:a9:fe:a900::': '169.254.169.0 is a link-local address (cloud metadata)',
      '64:ff9b:1:0:a9:fea9:fe00:0': '169.254.169.254 is a link-local address (cloud metadata)',
    };
    for (const [address, why] of Object.entries(refused)) assert.equal(refusedAddress(address), why, address);
  });

  it('a refusal no setting lifts wins over one it does, where a NAT64 address fits more than one form', () => {
    // As /48 and /56: 0.0.169.254 and 0.169.254.0 (unspecified, which the switch lifts); as /64: 169.254.0.0 (link-local).
    assert.equal(refusedAddress('64:ff9b:1:0:a9:fe00::', true), '169.254.0.0 is a link-local address (cloud metadata)');
  });

  it('public IPv4 addresses in those forms are not refused', () => {
    for (const address of ['::ffff:0:8.8.8.8', '2002:808:808::1', '64:ff9b:1::808:808', '64:ff9b:1:808:8:800::', '64:ff9b:1:0:808:808::']) {
      assert.equal(refusedAddress(address), undefined, address);
    }
  });
});
