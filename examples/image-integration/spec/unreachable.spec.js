'use strict';
// Addresses the kernel refuses to connect to at once (ENETUNREACH: a multicast address, which the
// endpoint policy allows; EADDRNOTAVAIL: an IPv6 address on a host without IPv6) used to throw out
// of the request and end the process. Each case runs the service in a network namespace holding
// only loopback (`unshare --net`, as root; the IPv4-only cases turn IPv6 off in it), reached by a
// name its DNS server (on 127.0.0.1 there) resolves, and asks a second request of it afterwards.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const CHILD = path.join(__dirname, 'unreachable-child.js');

function inIsolation(scenario, { ipv4Only = false, served = 'in-process' } = {}) {
  const isolate = process.getuid?.() === 0 ? ['--net'] : ['--net', '--map-root-user'];
  const noIpv6 = ipv4Only ? ' && sysctl -qw net.ipv6.conf.all.disable_ipv6=1 && sysctl -qw net.ipv6.conf.lo.disable_ipv6=1' : '';
  const run = spawnSync('unshare', [...isolate, 'sh', '-c', `ip link set lo up${noIpv6} && exec "$0" "$1"`, process.execPath, CHILD], {
    env: { ...process.env, SCENARIO: scenario, SERVED: served },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(run.status, 0, `the isolated run failed (unshare needs root): ${run.error ?? ''} ${run.stderr}`);
  const result = JSON.parse(run.stdout);
  assert.equal(result.isolation, 'ENETUNREACH', 'the namespace reaches nothing but loopback');
  return result;
}

/** The first answer is a 400 matching `message`; the second (a healthy registry) passes: the service still serves. */
function assertFailedThenServed(result, message) {
  const [first, second] = result.answers;
  assert.equal(first.status, 400, JSON.stringify(result));
  assert.match(first.message, message);
  assert.equal(second.status, 200, `the service answers the next request: ${JSON.stringify(result)}`);
}

describe('an address that connect() refuses at once is a 400 naming the endpoint, and the service goes on serving', () => {
  it('https: a name that resolves to a multicast IPv4 address (224.0.0.1)', () => {
    assertFailedThenServed(inIsolation('https-multicast-v4'), /^connect: multi\.spec\.test:443 is unreachable \(ENETUNREACH\)$/);
  });

  it('https: a name that resolves to a multicast IPv6 address (ff02::1)', () => {
    assertFailedThenServed(inIsolation('https-multicast-v6'), /^connect: multi\.spec\.test:443 is unreachable \(ENETUNREACH\)$/);
  });

  it('http: a name that resolves to a multicast address', () => {
    assertFailedThenServed(inIsolation('http-multicast-v4'), /^connect: multi\.spec\.test:80 is unreachable \(ENETUNREACH\)$/);
  });

  it('an IPv6-only name on a host without IPv6', () => {
    assertFailedThenServed(inIsolation('ipv6-only-name', { ipv4Only: true }), /^connect: six\.spec\.test:443 is unreachable from this host \(EADDRNOTAVAIL\)$/);
  });

  it('a dual-stack name whose IPv4 port is closed, on a host without IPv6: both addresses tried, the refusal heads the failure, which names each outcome', () => {
    const result = inIsolation('dual-stack-v4-refused', { ipv4Only: true });
    assertFailedThenServed(
      result,
      /^connect: dual\.spec\.test:\d+ refused the connection \(nothing listens there\) \(tried 127\.0\.0\.1: refused; 2001:db8::10: unreachable from this host \(EADDRNOTAVAIL\)\)$/,
    );
  });

  it('a token realm the registry names that resolves to a multicast address', () => {
    const result = inIsolation('token-realm-multicast');
    assertFailedThenServed(result, /^connect: realm\.spec\.test:443 is unreachable \(ENETUNREACH\)$/);
    assert.ok(result.queried.includes('realm.spec.test'), 'the realm was looked up');
  });

  it("gRPC: clairify's grpcEndpoint naming a multicast address", () => {
    assertFailedThenServed(inIsolation('grpc-multicast'), /^node scanner: connect: scanner\.spec\.test:8443 is unreachable \(ENETUNREACH\)$/);
  });

  it("gRPC: clairify's grpcEndpoint naming an IPv6-only host, on a host without IPv6", () => {
    assertFailedThenServed(
      inIsolation('grpc-ipv6-only-name', { ipv4Only: true }),
      /^node scanner: connect: scanner\.spec\.test:8443 is unreachable from this host \(EADDRNOTAVAIL\)$/,
    );
  });

  it('served by funcrun serve (as deployed): the process answers the next request and logs no uncaught exception', () => {
    const result = inIsolation('https-multicast-v4', { served: 'process' });
    assertFailedThenServed(result, /^connect: multi\.spec\.test:443 is unreachable \(ENETUNREACH\)$/);
    assert.equal(result.exit, null, 'the process was still running');
  });
});
