'use strict';
// The SigV4 signer against AWS's published test vectors.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { signV4 } = require('../build/lib/sigv4.js');

const suite = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const suiteNow = new Date('2015-08-30T12:36:00Z');
const signature = (headers) => /Signature=([0-9a-f]{64})$/.exec(headers.authorization)[1];

describe('AWS Signature Version 4', () => {
  it('get-vanilla (aws-sig-v4-test-suite)', () => {
    const headers = signV4({
      method: 'GET',
      url: new URL('https://example.amazonaws.com/'),
      region: 'us-east-1',
      service: 'service',
      credentials: suite,
      now: suiteNow,
    });
    assert.equal(headers['x-amz-date'], '20150830T123600Z');
    assert.equal(
      headers.authorization,
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
  });

  it('get-vanilla-query-order-key-case: query parameters are sorted', () => {
    const headers = signV4({
      method: 'GET',
      url: new URL('https://example.amazonaws.com/?Param2=value2&Param1=value1'),
      region: 'us-east-1',
      service: 'service',
      credentials: suite,
      now: suiteNow,
    });
    assert.equal(signature(headers), 'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500');
  });

  it('post-vanilla', () => {
    const headers = signV4({
      method: 'POST',
      url: new URL('https://example.amazonaws.com/'),
      region: 'us-east-1',
      service: 'service',
      credentials: suite,
      now: suiteNow,
    });
    assert.equal(signature(headers), '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b');
  });

  it("S3's documented GET Object example (extra signed headers)", () => {
    const headers = signV4({
      method: 'GET',
      url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'),
      headers: { Range: 'bytes=0-9', 'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
      region: 'us-east-1',
      service: 's3',
      credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
      now: new Date('2013-05-24T00:00:00Z'),
    });
    assert.match(headers.authorization, /SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,/);
    assert.equal(signature(headers), 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
  });

  it('a session token is sent and signed', () => {
    const headers = signV4({
      method: 'GET',
      url: new URL('https://example.amazonaws.com/'),
      region: 'us-east-1',
      service: 'service',
      credentials: { ...suite, sessionToken: 'tok' },
      now: suiteNow,
    });
    assert.equal(headers['x-amz-security-token'], 'tok');
    assert.match(headers.authorization, /SignedHeaders=host;x-amz-date;x-amz-security-token,/);
  });
});
