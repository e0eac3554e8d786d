import { describe, expect, it } from 'vitest';
import { forbiddenAddressReason } from './address-policy.js';
import { checkedAddresses, ForbiddenDestinationError, guardedLookup, type ResolveAll } from './guarded-lookup.js';
import { webhookUrlProblem } from './url-policy.js';

const STRICT = { allowHttpLoopback: false };
const TESTING = { allowHttpLoopback: true };

describe('forbiddenAddressReason', () => {
  it.each([
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '100.64.0.1',
    '100.127.255.254',
    '169.254.169.254',
    '127.0.0.1',
    '127.8.9.10',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'ff02::1',
    '2001:db8::1',
    // IPv4-mapped and NAT64 forms of private and loopback IPv4 addresses, in the spellings people write.
    '::ffff:10.0.0.1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '0:0:0:0:0:ffff:a9fe:a9fe',
    '64:ff9b::192.168.0.1',
    // IPv4-compatible (deprecated) form.
    '::127.0.0.1',
  ])('refuses %s', (address) => {
    expect(forbiddenAddressReason(address, { allowLoopback: false })).not.toBeNull();
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])(
    'allows the public address %s',
    (address) => {
      expect(forbiddenAddressReason(address, { allowLoopback: false })).toBeNull();
    },
  );

  it('allows loopback only when asked, and nothing else private with it', () => {
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1'])
      expect(forbiddenAddressReason(address, { allowLoopback: true })).toBeNull();
    for (const address of ['10.0.0.1', '::ffff:192.168.0.1', 'fd00::1', '169.254.169.254'])
      expect(forbiddenAddressReason(address, { allowLoopback: true })).not.toBeNull();
  });

  it('refuses what is not an address', () => {
    expect(forbiddenAddressReason('example.com', { allowLoopback: true })).toMatch(/not an IP address/);
  });
});

describe('webhookUrlProblem', () => {
  it('accepts https to a name or a public address', () => {
    expect(webhookUrlProblem('https://hooks.example.com/usage', STRICT)).toBeNull();
    expect(webhookUrlProblem('https://93.184.215.14:8443/x', STRICT)).toBeNull();
    expect(webhookUrlProblem('https://[2606:4700::1111]/x', STRICT)).toBeNull();
  });

  it('refuses http, other schemes and credentials', () => {
    expect(webhookUrlProblem('http://hooks.example.com/usage', STRICT)).toMatch(/must be https/);
    expect(webhookUrlProblem('http://127.0.0.1:9000/', STRICT)).toMatch(/must be https/);
    expect(webhookUrlProblem('ftp://hooks.example.com/', STRICT)).toMatch(/https/);
    expect(webhookUrlProblem('not a url', STRICT)).toMatch(/absolute https/);
    expect(webhookUrlProblem('https://user:pw@hooks.example.com/', STRICT)).toMatch(/credentials/);
  });

  it('allows http only to loopback when testing is allowed', () => {
    for (const url of ['http://127.0.0.1:9000/hook', 'http://[::1]:9000/', 'http://localhost:9000/'])
      expect(webhookUrlProblem(url, TESTING)).toBeNull();
    expect(webhookUrlProblem('http://hooks.example.com/', TESTING)).toMatch(/only to a loopback/);
    expect(webhookUrlProblem('http://10.0.0.5/', TESTING)).toMatch(/only to a loopback/);
  });

  it('refuses literal private addresses, IPv4-mapped ones included', () => {
    for (const url of [
      'https://10.0.0.5/',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:192.168.1.10]/',
      'https://[::ffff:7f00:1]/',
      'https://[fd00::5]/',
      'https://127.0.0.1/',
      'https://localhost/',
      'https://[::1]/',
    ])
      expect(webhookUrlProblem(url, STRICT), url).toMatch(/must not point at/);
    expect(webhookUrlProblem('https://[::ffff:10.0.0.1]/', TESTING)).toMatch(/must not point at/);
  });
});

describe('guarded lookup', () => {
  const zone: Record<string, { address: string; family: 4 | 6 }[]> = {
    'public.test': [{ address: '93.184.215.14', family: 4 }],
    'internal.test': [{ address: '10.0.0.7', family: 4 }],
    'mixed.test': [
      { address: '93.184.215.14', family: 4 },
      { address: 'fd00::7', family: 6 },
    ],
    'mapped.test': [{ address: '::ffff:169.254.169.254', family: 6 }],
    'loopback.test': [{ address: '127.0.0.1', family: 4 }],
  };
  const resolveAll: ResolveAll = async (hostname) => zone[hostname] ?? [];

  it('passes a name whose every address is public', async () => {
    await expect(checkedAddresses('public.test', { allowLoopback: false }, resolveAll)).resolves.toHaveLength(1);
  });

  it.each(['internal.test', 'mixed.test', 'mapped.test', 'loopback.test', 'nothing.test'])(
    'refuses %s',
    async (hostname) => {
      await expect(checkedAddresses(hostname, { allowLoopback: false }, resolveAll)).rejects.toBeInstanceOf(
        ForbiddenDestinationError,
      );
    },
  );

  it('answers net with the checked address, one or all', async () => {
    const lookup = guardedLookup({ allowLoopback: true }, resolveAll);
    const one = await new Promise((resolve, reject) =>
      lookup('loopback.test', {}, (error, address, family) => (error ? reject(error) : resolve({ address, family }))),
    );
    expect(one).toEqual({ address: '127.0.0.1', family: 4 });
    const all = await new Promise((resolve, reject) =>
      lookup('public.test', { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
    );
    expect(all).toEqual([{ address: '93.184.215.14', family: 4 }]);
    const refused = await new Promise((resolve) => lookup('internal.test', {}, (error) => resolve(error)));
    expect(refused).toBeInstanceOf(ForbiddenDestinationError);
  });
});
