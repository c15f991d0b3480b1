import test from 'ava';
import fc from 'fast-check';
import {
  addressProblem,
  checkWebhookDestination,
  checkWebhookUrl,
  dnsResolver,
  resolveDestination,
} from '../../src/webhooks/destination.ts';
import { startNameserver } from '../helpers/nameserver.ts';
import type { LookupFn, ResolvedAddress } from '../../src/webhooks/destination.ts';

// A deadline that never passes, for the checks that are not about deadlines.
const signal = new AbortController().signal;
const strict = { allowLocal: false, signal };
const local = { allowLocal: true, signal };

const answer = (...addresses: string[]): LookupFn => async () =>
  addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

// URLs refused by the syntax check alone (docs/reference/contract.md §6.6), whatever DNS would say.
const hostileUrls: Array<[string, string]> = [
  ['http://hooks.example.com/', 'http scheme'],
  ['ftp://hooks.example.com/', 'other scheme'],
  ['HTTP://hooks.example.com/', 'upper-case http'],
  ['https:hooks.example.com/x', 'special-scheme without slashes'],
  ['//hooks.example.com/', 'scheme-relative'],
  ['hooks.example.com', 'no scheme'],
  ['https://hooks.example.com:8443/', 'other port'],
  ['https://hooks.example.com:80/', 'port 80'],
  ['https://hooks.example.com:0/', 'port 0'],
  ['https://user:pass@hooks.example.com/', 'userinfo'],
  ['https://user@hooks.example.com/', 'username only'],
  ['https://@hooks.example.com/', 'empty userinfo'],
  ['https://hooks.example.com@evil.example.net/', 'userinfo that looks like a host'],
  ['https://hooks.example.com/#frag', 'fragment'],
  ['https://hooks.example.com/#', 'empty fragment'],
  ['https://127.0.0.1/', 'dotted IPv4'],
  ['https://2130706433/', 'decimal IPv4'],
  ['https://0177.0.0.1/', 'octal IPv4'],
  ['https://0x7f.0.0.1/', 'hex IPv4 first octet'],
  ['https://0x7f000001/', 'hex IPv4 whole'],
  ['https://0x7f.1/', 'hex short IPv4'],
  ['https://127.1/', 'short IPv4'],
  ['https://10.1/', 'short private IPv4'],
  ['https://017700000001/', 'octal whole IPv4'],
  ['https://169.254.169.254/latest/meta-data/', 'cloud metadata literal'],
  ['https://8.8.8.8/', 'public IPv4 literal (still a literal)'],
  ['https://%31%32%37.0.0.1/', 'percent-encoded IPv4'],
  ['https://１２７.０.０.１/', 'full-width digits'],
  ['https://127.0.0.1./', 'IPv4 with trailing dot'],
  ['https://[::1]/', 'IPv6 loopback literal'],
  ['https://[::]/', 'IPv6 unspecified literal'],
  ['https://[fe80::1%25eth0]/', 'IPv6 with zone id'],
  ['https://[fe80::1%eth0]/', 'IPv6 with raw zone id'],
  ['https://[::ffff:127.0.0.1]/', 'IPv4-mapped IPv6 literal'],
  ['https://[::ffff:7f00:1]/', 'IPv4-mapped IPv6 literal, hex'],
  ['https://[64:ff9b::7f00:1]/', 'NAT64 literal'],
  ['https://[2606:4700::1111]/', 'public IPv6 literal (still a literal)'],
  ['https://localhost/', 'localhost'],
  ['https://LOCALHOST/', 'upper-case localhost'],
  ['https://localhost./', 'localhost with trailing dot'],
  ['https://api.localhost/', '*.localhost'],
  ['https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/', 'localhost in enclosed letters (IDNA-mapped)'],
  ['https://printer.local/', '*.local (mDNS)'],
  ['https://metadata.google.internal/', '*.internal'],
  ['https://router.home.arpa/', 'home.arpa'],
  ['https://1.0.0.127.in-addr.arpa/', 'reverse-DNS name'],
  ['https://intranet/', 'single label'],
  ['https://hooks.example.com./', 'trailing dot'],
  ['https://exa mple.com/', 'space'],
  ['https://hooks.example.com\t/', 'tab (stripped by WHATWG)'],
  [' https://hooks.example.com/', 'leading space'],
  ['https://hooks.example.com\\@127.0.0.1/', 'backslash'],
  ['https://hooks$.example.com/', 'non-LDH character'],
  ['https://-bad.example.com/', 'label starting with hyphen'],
  ['https:///', 'no host'],
  ['', 'empty'],
  [`https://${'a'.repeat(64)}.example.com/`, 'label too long'],
  [`https://hooks.example.com/${'a'.repeat(2100)}`, 'URL too long'],
];

for (const [url, why] of hostileUrls) {
  test(`refuses ${why}: ${JSON.stringify(url.slice(0, 60))}`, (t) => {
    const result = checkWebhookUrl(url, strict);
    t.false(result.ok);
    if (!result.ok) t.true(result.reason.length > 0);
  });
}

// Hostnames that pass the syntax check but resolve somewhere that is not publicly routable.
const hostileAnswers: Array<[string[], string]> = [
  [['127.0.0.1'], 'loopback'],
  [['127.255.0.9'], 'loopback /8'],
  [['10.0.0.5'], 'private 10/8'],
  [['172.16.3.4'], 'private 172.16/12'],
  [['192.168.1.1'], 'private 192.168/16'],
  [['100.64.0.1'], 'CGNAT 100.64/10'],
  [['100.127.255.254'], 'CGNAT upper end'],
  [['169.254.169.254'], 'link-local (cloud metadata)'],
  [['0.0.0.0'], 'unspecified'],
  [['0.1.2.3'], '0/8'],
  [['255.255.255.255'], 'broadcast'],
  [['224.0.0.251'], 'multicast'],
  [['239.255.255.250'], 'multicast (SSDP)'],
  [['240.0.0.1'], 'reserved 240/4'],
  [['192.0.2.10'], 'TEST-NET-1'],
  [['198.18.0.1'], 'benchmarking 198.18/15'],
  [['192.0.0.8'], 'IETF protocol assignments'],
  [['::1'], 'IPv6 loopback'],
  [['::'], 'IPv6 unspecified'],
  [['fc00::1'], 'unique local fc00::/7'],
  [['fd12:3456::1'], 'unique local fd00::/8'],
  [['fe80::1'], 'IPv6 link-local'],
  [['fe80::1%eth0'], 'IPv6 link-local with zone id'],
  [['fec0::1'], 'deprecated site-local'],
  [['ff02::1'], 'IPv6 multicast'],
  [['::ffff:127.0.0.1'], 'IPv4-mapped loopback'],
  [['::ffff:8.8.8.8'], 'IPv4-mapped, even public'],
  [['64:ff9b::a9fe:a9fe'], 'NAT64 of 169.254.169.254'],
  [['64:ff9b:1::a00:1'], 'local-use NAT64 64:ff9b:1::/48'],
  [['::ffff:0:a00:1'], 'RFC 6145 translated'],
  [['2002:7f00:1::1'], '6to4 of 127.0.0.1'],
  [['2001:0:4136:e378:8000:63bf:3fff:fdd2'], 'Teredo'],
  [['2001:db8::1'], 'documentation 2001:db8::/32'],
  [['::7f00:1'], 'deprecated IPv4-compatible'],
  [['100::1'], 'discard-only 100::/64'],
  [['93.184.215.14', '10.0.0.1'], 'public and private mixed (private second)'],
  [['10.0.0.1', '93.184.215.14'], 'public and private mixed (private first)'],
  [['2606:4700::1111', '::1'], 'public IPv6 with IPv6 loopback'],
  [['93.184.215.14', 'fd00::1'], 'public IPv4 with unique local IPv6'],
];

for (const [addresses, why] of hostileAnswers) {
  test(`refuses a name resolving to ${why}: ${addresses.join(', ')}`, async (t) => {
    const result = await resolveDestination('hooks.example.com', { ...strict, lookup: answer(...addresses) });
    t.false(result.ok);
    if (!result.ok) t.is(result.kind, 'NOT_PERMITTED');
  });
}

test('the hostile tables together hold at least 40 cases', (t) => {
  t.true(hostileUrls.length + hostileAnswers.length >= 40);
});

test('NAT64 and mapped refusals name the embedded IPv4 address', (t) => {
  t.regex(addressProblem('64:ff9b::a9fe:a9fe', false) ?? '', /169\.254\.169\.254/);
  t.regex(addressProblem('::ffff:10.1.2.3', false) ?? '', /10\.1\.2\.3/);
});

const goodUrls = [
  'https://hooks.example.com/webhooks',
  'https://hooks.example.com:443/webhooks?account=1',
  'https://HOOKS.Example.COM/Path/With/Case',
  'https://bücher.de/hook',
  'https://a.b.c.d.example.org/',
  'https://my_service.example.com/',
];

for (const url of goodUrls) {
  test(`accepts ${url}`, (t) => {
    const result = checkWebhookUrl(url, strict);
    t.true(result.ok);
    if (result.ok) {
      t.is(result.url.protocol, 'https:');
      t.is(result.url.port, '');
    }
  });
}

test('explicit :443 is normalised away and accepted', (t) => {
  const result = checkWebhookUrl('https://hooks.example.com:443/x', strict);
  t.true(result.ok);
  if (result.ok) t.is(result.url.href, 'https://hooks.example.com/x');
});

test('accepts a name whose every address is public (IPv4 and IPv6)', async (t) => {
  const result = await resolveDestination('hooks.example.com', {
    ...strict,
    lookup: answer('93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'),
  });
  t.deepEqual(result, {
    ok: true,
    addresses: [
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ],
  });
});

test('asks the resolver for the lower-cased name, with the caller\'s deadline', async (t) => {
  const calls: Array<[string, unknown]> = [];
  const lookup: LookupFn = async (host, options) => {
    calls.push([host, options.signal]);
    return [{ address: '93.184.215.14', family: 4 }];
  };
  await resolveDestination('Hooks.Example.com', { ...strict, lookup });
  t.deepEqual(calls, [['hooks.example.com', signal]]);
});

test('DNS failure and empty answers are kind DNS', async (t) => {
  const failing: LookupFn = async () => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
  };
  const r1 = await resolveDestination('nope.example.com', { ...strict, lookup: failing });
  t.like(r1, { ok: false, kind: 'DNS' });
  const r2 = await resolveDestination('empty.example.com', { ...strict, lookup: async () => [] as ResolvedAddress[] });
  t.like(r2, { ok: false, kind: 'DNS' });
});

test('resolveDestination refuses special names without asking DNS', async (t) => {
  let asked = false;
  const lookup: LookupFn = async () => {
    asked = true;
    return [{ address: '93.184.215.14', family: 4 }];
  };
  for (const name of ['localhost', 'a.localhost', 'x.local', 'metadata.google.internal', 'intranet', '127.0.0.1', '[::1]']) {
    const result = await resolveDestination(name, { ...strict, lookup });
    t.like(result, { ok: false, kind: 'NOT_PERMITTED' }, name);
  }
  t.false(asked);
});

test('checkWebhookDestination combines both steps', async (t) => {
  t.like(await checkWebhookDestination('http://hooks.example.com/', { ...strict, timeoutMs: 1000, lookup: answer('93.184.215.14') }), {
    ok: false,
    kind: 'SYNTAX',
  });
  t.like(await checkWebhookDestination('https://hooks.example.com/', { ...strict, timeoutMs: 1000, lookup: answer('10.0.0.1') }), {
    ok: false,
    kind: 'NOT_PERMITTED',
  });
  const ok = await checkWebhookDestination('https://hooks.example.com/', { ...strict, timeoutMs: 1000, lookup: answer('93.184.215.14') });
  t.true(ok.ok);
});

// allowLocal (WEBHOOK_UNSAFE_ALLOW_LOCAL=1): loopback and any port, still HTTPS, nothing else private.
test('allowLocal accepts localhost and loopback literals on any port', (t) => {
  for (const url of ['https://localhost:8443/hook', 'https://localhost/', 'https://api.localhost:3000/', 'https://127.0.0.1:9000/', 'https://[::1]:9000/']) {
    t.true(checkWebhookUrl(url, local).ok, url);
  }
  t.true(checkWebhookUrl('https://hooks.example.com:8443/', local).ok);
});

test('allowLocal still refuses http, userinfo, odd IPv4 notations, private literals and private names', (t) => {
  for (const url of [
    'http://localhost:8080/',
    'https://user@localhost:8443/',
    'https://2130706433:8443/',
    'https://0x7f.1:8443/',
    'https://127.1:8443/',
    'https://10.0.0.1:8443/',
    'https://192.168.1.10/',
    'https://[::ffff:127.0.0.1]:8443/',
    'https://[fe80::1%25lo]:8443/',
    'https://printer.local/',
    'https://metadata.google.internal/',
    'https://intranet/',
  ]) {
    t.false(checkWebhookUrl(url, local).ok, url);
  }
});

test('allowLocal permits loopback answers and nothing else private', async (t) => {
  t.true((await resolveDestination('localhost', { ...local, lookup: answer('127.0.0.1', '::1') })).ok);
  t.true((await resolveDestination('hooks.example.com', { ...local, lookup: answer('127.0.0.1') })).ok);
  for (const bad of ['10.0.0.1', '192.168.0.1', '169.254.169.254', '100.64.0.1', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '0.0.0.0', '::']) {
    t.false((await resolveDestination('localhost', { ...local, lookup: answer('127.0.0.1', bad) })).ok, bad);
  }
  t.false((await resolveDestination('localhost', { ...strict, lookup: answer('127.0.0.1') })).ok);
});

test('property: every IPv4 in a non-public block is refused', (t) => {
  const blocks: Array<[number, number]> = [
    [0x0a000000, 8], [0xac100000, 12], [0xc0a80000, 16], [0x7f000000, 8], [0xa9fe0000, 16],
    [0x64400000, 10], [0x00000000, 8], [0xe0000000, 4], [0xf0000000, 4],
  ];
  fc.assert(
    fc.property(fc.constantFrom(...blocks), fc.integer({ min: 0, max: 0xffffffff }), ([base, bits], noise) => {
      const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
      const n = ((base & mask) | (noise & ~mask)) >>> 0;
      const ip = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
      return addressProblem(ip, false) !== null;
    }),
  );
  t.pass();
});

test('property: any IPv4 address, mapped into ::ffff:0:0/96 or 64:ff9b::/96, is refused', (t) => {
  fc.assert(
    fc.property(fc.ipV4(), (ip) => {
      const [a, b, c, d] = ip.split('.').map(Number);
      const tail = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
      return addressProblem(`::ffff:${ip}`, false) !== null && addressProblem(`64:ff9b::${tail}`, false) !== null;
    }),
  );
  t.pass();
});

// The production resolver (c-ares through node:dns's Resolver, never the thread pool's getaddrinfo),
// against a nameserver of the test's own.

const PUBLIC_V6 = '2606:2800:21f:cb07:6820:80da:af6b:8b2c';

test('the resolver asks A and AAAA: both families, one family only, or no such name', async (t) => {
  const ns = await startNameserver({
    'both.resolver-test.com': { a: ['93.184.215.14'], aaaa: [PUBLIC_V6] },
    'v4only.resolver-test.com': { a: ['93.184.215.14'] },
    'v6only.resolver-test.com': { aaaa: [PUBLIC_V6] },
    'nodata.resolver-test.com': {},
  });
  t.teardown(() => ns.close());
  const lookup = dnsResolver({ servers: [ns.address] });
  t.deepEqual(await resolveDestination('both.resolver-test.com', { ...strict, lookup }), {
    ok: true,
    addresses: [
      { address: '93.184.215.14', family: 4 },
      { address: PUBLIC_V6, family: 6 },
    ],
  });
  t.deepEqual(await resolveDestination('v4only.resolver-test.com', { ...strict, lookup }), { ok: true, addresses: [{ address: '93.184.215.14', family: 4 }] });
  t.deepEqual(await resolveDestination('v6only.resolver-test.com', { ...strict, lookup }), { ok: true, addresses: [{ address: PUBLIC_V6, family: 6 }] });
  t.like(await resolveDestination('nodata.resolver-test.com', { ...strict, lookup }), { ok: false, kind: 'DNS' });
  const nx = await resolveDestination('nxdomain.resolver-test.com', { ...strict, lookup });
  t.like(nx, { ok: false, kind: 'DNS' });
  if (!nx.ok) t.regex(nx.reason, /ENOTFOUND/);
  t.true(ns.queries['both.resolver-test.com'] >= 2, 'both families were asked');
});

test('the resolver\'s answers are checked like any other: a private address in either family refuses the name', async (t) => {
  const ns = await startNameserver({
    'v6private.resolver-test.com': { a: ['93.184.215.14'], aaaa: ['fd00:ec2::254'] },
    'v4private.resolver-test.com': { a: ['169.254.169.254'], aaaa: [PUBLIC_V6] },
  });
  t.teardown(() => ns.close());
  const lookup = dnsResolver({ servers: [ns.address] });
  for (const name of ['v6private.resolver-test.com', 'v4private.resolver-test.com']) {
    t.like(await resolveDestination(name, { ...strict, lookup }), { ok: false, kind: 'NOT_PERMITTED' }, name);
  }
});

test('a nameserver that never answers: the resolver gives up on its own (kind DNS), or at once when the caller\'s deadline passes', async (t) => {
  const ns = await startNameserver({ 'silent.resolver-test.com': 'silent' });
  t.teardown(() => ns.close());
  const lookup = dnsResolver({ servers: [ns.address] });
  const own = await resolveDestination('silent.resolver-test.com', { ...strict, lookup });
  t.like(own, { ok: false, kind: 'DNS' });
  if (!own.ok) t.regex(own.reason, /ETIMEOUT/);

  const deadline = new AbortController();
  const pending = resolveDestination('silent.resolver-test.com', { ...strict, lookup, signal: deadline.signal });
  const reason = new Error('the attempt\'s deadline');
  deadline.abort(reason);
  t.is(await pending.catch((err: unknown) => err), reason);
  // The resolver itself was cancelled too, not just abandoned: it answers the aborted call at once.
  const again = new AbortController();
  const call = lookup('silent.resolver-test.com', { signal: again.signal });
  again.abort();
  t.like(await call.catch((err: unknown) => err), { code: 'ECANCELLED' });
});

test('localhost and *.localhost are loopback without asking any nameserver (RFC 6761), in local mode only', async (t) => {
  const ns = await startNameserver({});
  t.teardown(() => ns.close());
  const lookup = dnsResolver({ servers: [ns.address] });
  const loopback = { ok: true, addresses: [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }] };
  t.deepEqual(await resolveDestination('localhost', { ...local, lookup }), loopback);
  t.deepEqual(await resolveDestination('hooks.localhost', { ...local, lookup }), loopback);
  t.like(await resolveDestination('localhost', { ...strict, lookup }), { ok: false, kind: 'NOT_PERMITTED' });
  t.deepEqual(ns.queries, {});
});
