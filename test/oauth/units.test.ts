// The pure parts of the connections capability.
import test from 'ava';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { findRegisteredRedirect, isAcceptableRedirectUri, isLocalRedirect, onlyLocalRedirects, redirectUriMatches } from '../../src/identity/oauth/redirect-uri.ts';
import { parseScopes } from '../../src/identity/oauth/scopes.ts';
import { ACCESS_TOKEN_PREFIX, CODE_PREFIX, REFRESH_TOKEN_PREFIX, credentialDigest, hasShape, newCredential } from '../../src/identity/oauth/credentials.ts';
import { verifierMatches } from '../../src/identity/oauth/token.ts';
import { hashPassword, verifyPassword } from '../../src/identity/people/password.ts';
import { decodeCursor, encodeCursor } from '../../src/mcp/list-purchases.ts';
import { checkClientIdUrl, parseClientMetadata, fetchClientMetadata } from '../../src/identity/oauth/client-metadata.ts';
import { parseForm } from '../../src/identity/oauth/form.ts';
import { authorizationResponseUrl } from '../../src/identity/oauth/authorize.ts';
import { escapeHtml } from '../../src/identity/oauth/pages.ts';
import { sdkIssues } from '../../src/mcp/tools.ts';
import { validateRegistration } from '../../src/identity/oauth/registration.ts';
import { addressBucket } from '../../src/http/client-address.ts';

test('credentials: prefix, 32 random bytes, digest lookup', (t) => {
  for (const prefix of [ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX, CODE_PREFIX] as const) {
    const a = newCredential(prefix);
    t.true(a.startsWith(prefix));
    t.is(Buffer.from(a.slice(prefix.length), 'base64url').length, 32);
    t.true(hasShape(a, prefix));
    t.not(a, newCredential(prefix));
    t.is(credentialDigest(a), createHash('sha256').update(a).digest('hex'));
  }
  t.false(hasShape(newCredential(ACCESS_TOKEN_PREFIX), REFRESH_TOKEN_PREFIX));
  t.false(hasShape('cmp_oat_short', ACCESS_TOKEN_PREFIX));
});

test('redirect URIs: exact match, loopback port-agnostic only on http loopback', (t) => {
  t.true(redirectUriMatches('https://app.example/cb', 'https://app.example/cb'));
  t.false(redirectUriMatches('https://app.example/cb/', 'https://app.example/cb'));
  t.false(redirectUriMatches('https://app.example:8443/cb', 'https://app.example/cb'));
  t.false(redirectUriMatches('https://app.example/cb?x=1', 'https://app.example/cb'));
  t.true(redirectUriMatches('http://127.0.0.1:5555/cb', 'http://127.0.0.1/cb'));
  t.true(redirectUriMatches('http://[::1]:5555/cb', 'http://[::1]:1/cb'));
  t.true(redirectUriMatches('http://localhost:3/cb', 'http://localhost/cb'));
  t.false(redirectUriMatches('http://127.0.0.1:5555/other', 'http://127.0.0.1/cb'));
  t.false(redirectUriMatches('http://localhost:5555/cb', 'http://127.0.0.1/cb'), 'host names are not interchangeable');
  t.false(redirectUriMatches('http://127.0.0.1:5555/cb#x', 'http://127.0.0.1/cb'));
  t.false(redirectUriMatches('http://user@127.0.0.1:5555/cb', 'http://127.0.0.1/cb'));
  t.is(findRegisteredRedirect('http://127.0.0.1:9/cb', ['https://a.example/cb', 'http://127.0.0.1/cb']), 'http://127.0.0.1/cb');
  t.true(isAcceptableRedirectUri('com.example.app:/oauth'));
  t.false(isAcceptableRedirectUri('http://app.example/cb'));
  t.false(isAcceptableRedirectUri('javascript:alert(1)'));
  t.false(isAcceptableRedirectUri('https://app.example/cb#frag'));
});

test('redirect URIs on the person\'s machine: localhost and names under it, 127.0.0.0/8 in any spelling, ::1', (t) => {
  for (const uri of ['http://localhost/cb', 'https://localhost./cb', 'https://dev.LOCALHOST/cb', 'http://127.0.0.1:9/cb', 'https://127.255.0.1/cb', 'http://2130706433/cb', 'http://0x7f.1/cb', 'http://[::1]/cb', 'http://[0:0:0:0:0:0:0:1]/cb', 'http://[::ffff:127.0.0.1]/cb']) {
    t.true(isLocalRedirect(uri), uri);
  }
  for (const uri of ['https://app.example/cb', 'https://localhost.example.com/cb', 'http://127.0.0.1.nip.io/cb', 'https://[::ffff:10.0.0.1]/cb', 'com.example.app:/cb', 'not a url']) {
    t.false(isLocalRedirect(uri), uri);
  }
  t.true(onlyLocalRedirects(['http://127.0.0.1/cb', 'http://localhost/cb']));
  t.false(onlyLocalRedirects(['http://127.0.0.1/cb', 'https://app.example/cb']));
  t.false(onlyLocalRedirects([]));
});

test('redirect URIs: a non-loopback URI matches only itself (property)', (t) => {
  // The requested URI is the registered one or a near miss of it: two unrelated URLs never match
  // under any rule, so they would not test which differences the match tolerates.
  const nearMisses: ((u: string) => string)[] = [
    (u) => u,
    (u) => (u.endsWith('/') ? u.slice(0, -1) : `${u}/`),
    (u) => u.toUpperCase(),
    (u) => u.replace('https://', 'HTTPS://'),
    (u) => u.replace('https://', 'http://'),
    (u) => `${u}${u.includes('?') ? '&' : '?'}x=1`,
    (u) => `${u}#f`,
    (u) => u.replace('https://', 'https://user@'),
    (u) => u.replace(/^(https:\/\/[^/?#]+)/, '$1:443'),
    (u) => u.replace(/^(https:\/\/[^/?#]+)/, '$1.'),
    (u) => u.replace(/^(https:\/\/[^/?#]+)/, '$1/.'),
  ];
  const registered = fc.webUrl({ validSchemes: ['https'], withQueryParameters: true }).filter((u) => !isLocalRedirect(u));
  fc.assert(
    fc.property(registered, fc.constantFrom(...nearMisses), (a, miss) => {
      const b = miss(a);
      return redirectUriMatches(b, a) === (a === b);
    }),
    { numRuns: 500 },
  );
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 1, max: 65535 }), fc.webPath(), (p1, p2, path) => {
      const p = path.startsWith('/') ? path : `/${path}`;
      return redirectUriMatches(`http://127.0.0.1:${p1}${p}`, `http://127.0.0.1:${p2}${p}`);
    }),
  );
  t.pass();
});

test('scopes: known ones in canonical order; unknown or none refused', (t) => {
  t.deepEqual(parseScopes('purchase:request  purchase:check'), { ok: true, scopes: ['purchase:check', 'purchase:request'] });
  t.false(parseScopes('purchase:read admin').ok);
  t.false(parseScopes('').ok);
});

test('PKCE S256: the verifier must hash to the challenge (RFC 7636 appendix B)', (t) => {
  t.true(verifierMatches('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'));
  t.false(verifierMatches('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXj', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'));
  t.false(verifierMatches('short', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'));
});

test('passwords: scrypt, salted, verified in constant time, malformed hashes never match', async (t) => {
  const h1 = await hashPassword('a long enough password');
  const h2 = await hashPassword('a long enough password');
  t.not(h1, h2);
  t.regex(h1, /^scrypt\$131072\$8\$1\$/);
  t.true(await verifyPassword('a long enough password', h1));
  t.false(await verifyPassword('a long enough passwore', h1));
  t.false(await verifyPassword('a long enough password', 'plain'));
  t.false(await verifyPassword('a long enough password', 'scrypt$99999999$8$1$AAAA$BBBB'));
  // Hashed at another cost (PASSWORD_SCRYPT_N), a hash records it and is checked at it.
  const cheap = await hashPassword('a long enough password', 1024);
  t.regex(cheap, /^scrypt\$1024\$8\$1\$/);
  t.true(await verifyPassword('a long enough password', cheap));
  t.false(await verifyPassword('a long enough passwore', cheap));
});

test('list cursor: opaque, round-trips, refuses tampering', (t) => {
  const pos = { requestedAt: new Date('2026-03-01T10:00:00.123Z'), id: '01900000-0000-7000-8000-000000000001' };
  const c = encodeCursor(pos);
  t.regex(c, /^[A-Za-z0-9_-]+$/);
  t.deepEqual(decodeCursor(c), pos);
  t.is(decodeCursor('not a cursor'), null);
  t.is(decodeCursor(Buffer.from('{"v":1,"t":"yesterday","id":"x"}').toString('base64url')), null);
});

test('client_id URLs: the webhook destination rules plus the draft\'s', (t) => {
  t.true(checkClientIdUrl('https://claude.ai/oauth/client.json', false).ok);
  for (const bad of [
    'http://claude.ai/client.json',
    'https://claude.ai/',
    'https://claude.ai',
    'https://claude.ai:8443/client.json',
    'https://user@claude.ai/client.json',
    'https://127.0.0.1/client.json',
    'https://localhost/client.json',
    'https://claude.ai/a/../client.json',
    'https://claude.ai/client.json#x',
    'http://127.0.0.1:8080/client.json',
  ]) t.false(checkClientIdUrl(bad, false).ok, bad);
  // Local development only: loopback, any port, http allowed.
  t.true(checkClientIdUrl('http://127.0.0.1:8080/client.json', true).ok);
  t.true(checkClientIdUrl('https://localhost:8443/client.json', true).ok);
  t.false(checkClientIdUrl('http://10.0.0.1:8080/client.json', true).ok);
});

test('client metadata documents: must name themselves, register acceptable redirect URIs, be public clients', (t) => {
  const id = 'https://app.example/client.json';
  const url = new URL(id);
  const ok = parseClientMetadata(id, url, { client_id: id, client_name: 'App\u202e evil', redirect_uris: ['https://app.example/cb'] });
  t.true(ok.ok);
  if (ok.ok) t.is(ok.metadata.clientName, 'App evil', 'bidi and control characters removed');
  const nameless = parseClientMetadata(id, url, { client_id: id, redirect_uris: ['https://app.example/cb'] });
  t.true(nameless.ok && nameless.metadata.clientName === 'app.example');
  t.false(parseClientMetadata(id, url, { client_id: 'https://other.example/client.json', redirect_uris: ['https://app.example/cb'] }).ok);
  t.false(parseClientMetadata(id, url, { client_id: id, redirect_uris: [] }).ok);
  t.false(parseClientMetadata(id, url, { client_id: id, redirect_uris: ['http://app.example/cb'] }).ok);
  t.false(parseClientMetadata(id, url, { client_id: id, redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'client_secret_basic' }).ok);
  t.false(parseClientMetadata(id, url, { client_id: id, redirect_uris: ['https://app.example/cb'], client_secret: 's' }).ok);
  t.false(parseClientMetadata(id, url, [id]).ok);
});

test('client metadata fetch refuses a name resolving to a private address before connecting', async (t) => {
  const result = await fetchClientMetadata('https://client.example.com/client.json', {
    allowLocal: false,
    lookup: async () => [{ address: '10.1.2.3', family: 4 }],
  });
  t.false(result.ok);
  if (!result.ok) t.regex(result.reason, /not publicly routable/);
});

test('forms: duplicate parameters are refused, empty ones are absent', (t) => {
  const f = parseForm('a=1&b=&c=3');
  t.true(f.ok);
  if (f.ok) {
    t.is(f.get('a'), '1');
    t.is(f.get('b'), undefined);
  }
  t.false(parseForm('a=1&a=2').ok);
});

test('authorization responses always carry iss, keep the redirect URI\'s own query, and escape', (t) => {
  const url = new URL(authorizationResponseUrl('https://app.example/cb?tenant=1', { code: 'c&d', state: null }, 'https://svc.example'));
  t.is(url.searchParams.get('tenant'), '1');
  t.is(url.searchParams.get('code'), 'c&d');
  t.false(url.searchParams.has('state'));
  t.is(url.searchParams.get('iss'), 'https://svc.example');
  t.is(escapeHtml(`<script>"'&`), '&lt;script&gt;&quot;&#39;&amp;');
});

test('SDK schema failures become docs/reference/contract.md issues', (t) => {
  const issues = sdkIssues('MCP error -32602: Input validation error: Invalid arguments for tool check_purchase: Invalid string at amountMinor\nUnrecognized keys: "a", "b"');
  t.deepEqual(issues.map((i) => [i.path, i.code]), [['amountMinor', 'INVALID_ARGUMENT'], ['a', 'UNKNOWN_FIELD'], ['b', 'UNKNOWN_FIELD']]);
});

test('registration redirect URIs: https or loopback http only, whatever the spelling', (t) => {
  const verdict = (uri: string) => {
    const r = validateRegistration({ redirect_uris: [uri] });
    return r.ok ? 'ok' : r.error;
  };
  for (const ok of ['https://app.example/cb', 'https://app.example:8443/cb?x=1', 'http://127.0.0.1/cb', 'http://127.0.0.1:53682/callback', 'http://[::1]:8080/cb', 'http://localhost/cb', 'HTTP://LOCALHOST:9/cb']) {
    t.is(verdict(ok), 'ok', ok);
  }
  for (const bad of [
    'http://localhost.evil.example/cb', 'http://127.0.0.1.nip.io/cb', 'http://10.0.0.1/cb', 'http://app.example/cb', 'https://user:pw@app.example/cb',
    'https://app.example/cb#frag', 'javascript:alert(1)', 'data:text/html,hi', 'com.example.app:/cb', 'file:///etc/passwd', '/relative/cb', '',
  ]) {
    t.is(verdict(bad), 'invalid_redirect_uri', bad);
  }
  t.is(verdict('https://app.example/' + 'x'.repeat(2000)), 'invalid_redirect_uri', 'length is bounded');
  const many = validateRegistration({ redirect_uris: Array.from({ length: 21 }, (_, i) => `https://app.example/${i}`) });
  t.false(many.ok);
  // Property: whatever is accepted is an https URL or an http URL on a loopback host.
  fc.assert(
    fc.property(fc.webUrl({ validSchemes: ['http', 'https'] }), (uri) => {
      const r = validateRegistration({ redirect_uris: [uri] });
      if (!r.ok) return true;
      const u = new URL(r.input.redirectUris[0]);
      return u.protocol === 'https:' || ['127.0.0.1', '[::1]', 'localhost'].includes(u.hostname);
    }),
  );
});

test('registration metadata: public clients, code flow grants, names cleaned, unknown scopes dropped', (t) => {
  const base = { redirect_uris: ['https://app.example/cb'] };
  const ok = validateRegistration({ ...base, client_name: ' Desk\u202eAssistant\u0000 ', scope: 'purchase:read openid purchase:read', extra: { ignored: true } });
  t.true(ok.ok);
  if (ok.ok) t.deepEqual(ok.input, { clientName: 'DeskAssistant', redirectUris: ['https://app.example/cb'], scope: 'purchase:read' });
  for (const bad of [
    { ...base, token_endpoint_auth_method: 'client_secret_post' },
    { ...base, grant_types: ['refresh_token'] },
    { ...base, grant_types: ['implicit'] },
    { ...base, grant_types: 'authorization_code' },
    { ...base, response_types: ['code', 'token'] },
    { ...base, response_types: [] },
    { ...base, client_name: 42 },
    { ...base, scope: ['purchase:read'] },
    null,
    'text',
  ]) {
    const r = validateRegistration(bad);
    t.false(r.ok, JSON.stringify(bad));
    if (!r.ok) t.is(r.error, 'invalid_client_metadata', JSON.stringify(bad));
  }
});

test('per-address limits count an IPv4 address (mapped or not) as itself and an IPv6 address by its /64', (t) => {
  t.is(addressBucket('203.0.113.7'), '203.0.113.7');
  t.is(addressBucket('::ffff:203.0.113.7'), '203.0.113.7', 'IPv4-mapped: the IPv4 address, not the /64 every mapped address shares');
  t.not(addressBucket('::ffff:203.0.113.7'), addressBucket('::ffff:203.0.113.8'));
  t.is(addressBucket('2001:db8::1'), '2001:db8::/64');
  t.is(addressBucket('2001:0DB8:0000:0000:ffff:1:2:3'), '2001:db8::/64', 'any spelling, any address of the network');
  t.not(addressBucket('2001:db8:0:1::1'), addressBucket('2001:db8::1'));
  t.is(addressBucket('not an address'), 'not an address');
});
