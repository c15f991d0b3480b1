// Webhook destination rules (docs/reference/contract.md §6.6): HTTPS only, port 443 only, a hostname (IP literals
// refused), no userinfo, and every resolved address publicly routable, checked at creation and
// again before every delivery (send.ts connects to exactly the addresses checked here).
//
// Two layers:
//   checkWebhookUrl      syntax only, no I/O; checks the WHATWG-parsed URL AND the raw input,
//                        because the WHATWG parser silently rewrites `http://2130706433`,
//                        `0x7f.1`, `127.1`, `%31%32%37.0.0.1`, full-width digits... to dotted IPv4.
//   resolveDestination   DNS (A and AAAA) and address classification with ipaddr.js.
//
// `allowLocal` is the WEBHOOK_UNSAFE_ALLOW_LOCAL=1 development switch (docs/reference/decisions.md): it permits
// loopback addresses (and the `localhost` names that lead to them) on any port, still over HTTPS,
// and nothing else that is not public.
import { isIP } from 'node:net';
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

export interface DestinationOptions {
  allowLocal: boolean;
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

export interface ResolvedAddress {
  address: string;
  family: number;
}

export type LookupFn = (
  hostname: string,
  options: { all: true; verbatim: true },
) => Promise<ResolvedAddress[]>;

// `kind` lets callers tell a name that does not resolve (DNS, worth retrying at delivery time)
// from one that resolves somewhere forbidden (NOT_PERMITTED).
export type ResolveResult =
  | { ok: true; addresses: ResolvedAddress[] }
  | { ok: false; kind: 'DNS' | 'NOT_PERMITTED'; reason: string };

const MAX_URL_LENGTH = 2048;

// Special-use and private-use names (RFC 6761, RFC 6762, RFC 8375, ICANN's `.internal`, and
// widespread private conventions). Matched as the whole name or as its last labels.
const PRIVATE_SUFFIXES = [
  'localhost',
  'local',
  'internal',
  'localdomain',
  'home.arpa',
  'arpa',
  'lan',
  'intranet',
  'corp',
  'home',
  'private',
  'test',
  'invalid',
  'onion',
  'alt',
  'example',
];

// LDH labels (underscore tolerated: it appears in real DNS names), 1..63 characters, at least two
// labels, total at most 253. The WHATWG parser has already lower-cased and punycoded the host.
const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

const isLocalhostName = (name: string): boolean => name === 'localhost' || name.endsWith('.localhost');

/** Why a (lower-case, bracket-free) hostname is not acceptable as a name, or null. */
function hostnameProblem(name: string, allowLocal: boolean): string | null {
  if (name.length === 0) return 'the URL has no host';
  if (name.endsWith('.')) return 'the hostname must not end with a dot';
  if (name.length > 253) return 'the hostname is too long';
  const labels = name.split('.');
  if (!labels.every((l) => LABEL.test(l))) return 'the hostname contains characters not allowed in a DNS name';
  if (allowLocal && isLocalhostName(name)) return null;
  for (const suffix of PRIVATE_SUFFIXES) {
    if (name === suffix || name.endsWith(`.${suffix}`)) return `${name} is a special-use or private name (.${suffix})`;
  }
  if (labels.length < 2) return 'a single-label hostname is not publicly resolvable';
  // A last label that is numeric (or 0x-hex) is parsed as IPv4 by WHATWG; reaching here with one
  // would mean a parser disagreement, so refuse.
  if (/^(0x[0-9a-f]*|[0-9]+)$/.test(labels[labels.length - 1])) return 'IP address literals are not permitted';
  return null;
}

const stripBrackets = (host: string): string =>
  host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;

// The authority of the raw input, as a browser-independent reader would see it. Only used for
// refusals: anything odd here is refused, never "fixed".
function rawProblem(raw: string, allowLocal: boolean): string | null {
  // WHATWG strips leading/trailing C0 controls and spaces and removes tabs and newlines anywhere.
  if (/[\u0000-\u0020\u007f]/.test(raw)) return 'the URL contains whitespace or control characters';
  if (raw.includes('\\')) return 'the URL contains a backslash';
  if (!/^https:\/\//i.test(raw)) return 'only https:// URLs are permitted';
  const rest = raw.slice('https://'.length);
  const end = rest.search(/[/?#]/);
  const authority = end === -1 ? rest : rest.slice(0, end);
  if (authority.includes('@')) return 'credentials (userinfo) in the URL are not permitted';
  if (authority.includes('%')) return 'percent-encoding in the host is not permitted';
  if (authority.startsWith('[')) {
    // Only [::1] survives, and only in local development mode.
    const close = authority.indexOf(']');
    const literal = close === -1 ? authority : authority.slice(1, close);
    if (allowLocal && literal.toLowerCase() === '::1') return null;
    return 'IP address literals are not permitted';
  }
  const colon = authority.lastIndexOf(':');
  const host = (colon === -1 ? authority : authority.slice(0, colon)).toLowerCase();
  // Any IPv4 notation: dotted, decimal (2130706433), octal (0177.0.0.1), hex (0x7f.1), short (127.1).
  const labels = host.replace(/\.$/, '').split('.');
  const last = labels[labels.length - 1];
  if (/^(0x[0-9a-f]*|[0-9]+)$/.test(last)) {
    if (allowLocal && /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return null;
    return 'IP address literals are not permitted';
  }
  return null;
}

/**
 * Syntax-level check of a webhook URL (docs/reference/contract.md §6.6). No I/O. On success the parsed URL is
 * returned; use it (not the input string) from then on.
 */
export function checkWebhookUrl(raw: string, opts: DestinationOptions): UrlCheck {
  if (typeof raw !== 'string' || raw.length === 0) return { ok: false, reason: 'the URL is empty' };
  if (raw.length > MAX_URL_LENGTH) return { ok: false, reason: `the URL is longer than ${MAX_URL_LENGTH} characters` };
  const rawReason = rawProblem(raw, opts.allowLocal);
  if (rawReason) return { ok: false, reason: rawReason };

  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'the URL cannot be parsed' };
  }
  if (url.protocol !== 'https:') return { ok: false, reason: 'only https:// URLs are permitted' };
  if (url.username !== '' || url.password !== '') {
    return { ok: false, reason: 'credentials (userinfo) in the URL are not permitted' };
  }
  if (url.hash !== '' || raw.includes('#')) return { ok: false, reason: 'a URL fragment is not permitted' };
  // WHATWG drops the default port, so an empty port means 443 (explicit `:443` included).
  if (url.port !== '' && !opts.allowLocal) return { ok: false, reason: 'only port 443 is permitted' };

  const host = stripBrackets(url.hostname);
  if (isIP(host) !== 0) {
    if (opts.allowLocal && isLoopbackLiteral(host)) return { ok: true, url };
    return { ok: false, reason: 'IP address literals are not permitted' };
  }
  const nameReason = hostnameProblem(host, opts.allowLocal);
  if (nameReason) return { ok: false, reason: nameReason };
  return { ok: true, url };
}

function isLoopbackLiteral(host: string): boolean {
  if (!ipaddr.isValid(host)) return false;
  const addr = ipaddr.parse(host);
  return addr.range() === 'loopback';
}

// IANA allocates global unicast IPv6 only from 2000::/3. ipaddr.js calls everything outside its
// special list `unicast`, including the deprecated IPv4-compatible ::a.b.c.d forms, so the
// prefix is checked too.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

// IPv6 forms that carry an IPv4 address inside them: refused outright (the embedded address is
// named in the reason), since a translator or tunnel would deliver to that IPv4 host.
const EMBEDDED_V4_RANGES = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo']);

function embeddedIpv4(addr: ipaddr.IPv6, range: string): string | null {
  const p = addr.parts;
  const fromWords = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  if (range === 'ipv4Mapped' || range === 'rfc6145' || range === 'rfc6052') return fromWords(p[6], p[7]);
  if (range === '6to4') return fromWords(p[1], p[2]);
  // Teredo: the client's IPv4 is the last 32 bits, bit-inverted (RFC 4380 section 4).
  if (range === 'teredo') return fromWords(~p[6] & 0xffff, ~p[7] & 0xffff);
  return null;
}

/** Why a resolved address may not be connected to, or null when it may. */
export function addressProblem(address: string, allowLocal: boolean): string | null {
  if (isIP(address) === 0) return `"${address}" is not an IP address`;
  if (address.includes('%')) return `${address} carries an IPv6 zone id`;
  const addr = ipaddr.parse(address);
  if (addr.kind() === 'ipv4') {
    const range = (addr as ipaddr.IPv4).range();
    if (range === 'unicast') return null;
    if (allowLocal && range === 'loopback') return null;
    return `${address} is not publicly routable (${range})`;
  }
  const v6 = addr as ipaddr.IPv6;
  const range = v6.range();
  if (EMBEDDED_V4_RANGES.has(range)) {
    return `${address} embeds the IPv4 address ${embeddedIpv4(v6, range)} (${range}); refused`;
  }
  if (allowLocal && range === 'loopback') return null;
  if (range !== 'unicast') return `${address} is not publicly routable (${range})`;
  if (!v6.match(GLOBAL_UNICAST_V6)) return `${address} is outside global unicast space (2000::/3)`;
  return null;
}

const defaultLookup: LookupFn = (hostname, options) => dnsLookup(hostname, options);

/**
 * Resolves A and AAAA for `hostname` (as found in `URL.hostname`) and accepts only if EVERY
 * address is publicly routable (docs/reference/contract.md §6.6 "resolution"). The returned addresses are the only
 * ones a delivery may connect to.
 */
export async function resolveDestination(
  hostname: string,
  opts: DestinationOptions & { lookup?: LookupFn },
): Promise<ResolveResult> {
  const host = stripBrackets(hostname.toLowerCase());
  if (isIP(host) !== 0) {
    // Only reachable for the loopback literals that allowLocal lets through checkWebhookUrl.
    if (!opts.allowLocal) return { ok: false, kind: 'NOT_PERMITTED', reason: 'IP address literals are not permitted' };
    const problem = addressProblem(host, true);
    if (problem) return { ok: false, kind: 'NOT_PERMITTED', reason: problem };
    return { ok: true, addresses: [{ address: host, family: isIP(host) }] };
  }
  const nameReason = hostnameProblem(host, opts.allowLocal);
  if (nameReason) return { ok: false, kind: 'NOT_PERMITTED', reason: nameReason };

  let addresses: ResolvedAddress[];
  try {
    addresses = await (opts.lookup ?? defaultLookup)(host, { all: true, verbatim: true });
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return { ok: false, kind: 'DNS', reason: `${host} could not be resolved${typeof code === 'string' ? ` (${code})` : ''}` };
  }
  if (!Array.isArray(addresses) || addresses.length === 0) {
    return { ok: false, kind: 'DNS', reason: `${host} has no addresses` };
  }
  for (const { address } of addresses) {
    const problem = addressProblem(address, opts.allowLocal);
    if (problem) return { ok: false, kind: 'NOT_PERMITTED', reason: `${host} resolves to a refused address: ${problem}` };
  }
  return { ok: true, addresses: addresses.map(({ address, family }) => ({ address, family })) };
}

/**
 * Both checks in one, for creating or changing an endpoint (docs/reference/contract.md §4.12, §4.14): a failure of
 * either is 400 `webhook_url_not_permitted`. `kind` says whether the name failed to resolve.
 */
export async function checkWebhookDestination(
  raw: string,
  opts: DestinationOptions & { lookup?: LookupFn },
): Promise<{ ok: true; url: URL; addresses: ResolvedAddress[] } | { ok: false; kind: 'SYNTAX' | 'DNS' | 'NOT_PERMITTED'; reason: string }> {
  const checked = checkWebhookUrl(raw, opts);
  if (!checked.ok) return { ok: false, kind: 'SYNTAX', reason: checked.reason };
  const resolved = await resolveDestination(checked.url.hostname, opts);
  if (!resolved.ok) return resolved;
  return { ok: true, url: checked.url, addresses: resolved.addresses };
}
