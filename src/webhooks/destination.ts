// Webhook destination rules (docs/reference/contract.md §6.6): HTTPS only, port 443 only, a hostname (IP literals
// refused), no userinfo, and every resolved address publicly routable, checked at creation and
// again before every delivery (send.ts connects to exactly the addresses checked here).
//
// Two layers:
//   checkWebhookUrl      syntax only, no I/O; checks the WHATWG-parsed URL AND the raw input,
//                        because the WHATWG parser silently rewrites `http://2130706433`,
//                        `0x7f.1`, `127.1`, `%31%32%37.0.0.1`, full-width digits... to dotted IPv4.
//   resolveDestination   DNS (A and AAAA) and address classification with ipaddr.js, bounded by the
//                        caller's deadline (an AbortSignal).
//
// DNS goes through c-ares (node:dns Resolver: its own sockets, its own timeouts, cancellable), never
// through dns.lookup: getaddrinfo runs on libuv's 4-thread pool and cannot be stopped, so names whose
// nameservers never answer would hold those threads long after an attempt's deadline and make every
// other organisation's check (and any fs or crypto work) wait behind them
// (docs/integrate/webhooks.md#destinations). The hosts file is therefore not read; `localhost` and
// `*.localhost` are loopback without asking anyone (RFC 6761 section 6.3).
//
// `allowLocal` is the WEBHOOK_UNSAFE_ALLOW_LOCAL=1 development switch (docs/reference/decisions.md): it permits
// loopback addresses (and the `localhost` names that lead to them) on any port, still over HTTPS,
// and nothing else that is not public.
import { isIP } from 'node:net';
import { Resolver } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

export interface DestinationOptions {
  allowLocal: boolean;
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

export interface ResolvedAddress {
  address: string;
  family: number;
}

/**
 * Resolves a name to its A and AAAA addresses. `signal` aborts when the caller's deadline passes: a
 * resolver should stop then (the default one cancels its queries); resolveDestination gives up at
 * that moment whether it does or not. Rejects (with a `code`, as node:dns errors have) when the name
 * does not resolve. Tests inject their own (runtime.ts `configureWebhooks`).
 */
export type LookupFn = (hostname: string, options: { signal: AbortSignal }) => Promise<ResolvedAddress[]>;

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

// c-ares' own retry policy: a first try of 2 s and a second (c-ares lengthens it), so a nameserver
// that never answers is given up on after about 6 s, inside the 10 s attempt timeout; with several
// nameservers the caller's deadline cancels what is left. A Resolver reads /etc/resolv.conf when made.
const RESOLVER_TRY_TIMEOUT_MS = 2_000;
const RESOLVER_TRIES = 2;

// Failures that say the name has no such record, as opposed to a resolver that did not answer.
const NO_RECORD_CODES = new Set(['ENODATA', 'ENOTFOUND']);

/**
 * The production resolver: A and AAAA asked in parallel through a c-ares Resolver of its own (so
 * cancelling it at the deadline stops only this resolution's queries). A name with addresses in one
 * family only is fine; when one family's query fails (a timeout, a server failure) the other's
 * addresses are used, since only addresses that were checked are ever connected to. `servers`
 * (host or host:port) replaces the system's nameservers (/etc/resolv.conf); tests aim it at a
 * local nameserver.
 */
export function dnsResolver(config: { servers?: string[] } = {}): LookupFn {
  return async (hostname, { signal }) => {
    if (isLocalhostName(hostname)) {
      return [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ];
    }
    signal.throwIfAborted();
    const resolver = new Resolver({ timeout: RESOLVER_TRY_TIMEOUT_MS, tries: RESOLVER_TRIES });
    if (config.servers) resolver.setServers(config.servers);
    const cancel = () => resolver.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const [a, aaaa] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
      const addresses: ResolvedAddress[] = [
        ...(a.status === 'fulfilled' ? a.value.map((address) => ({ address, family: 4 })) : []),
        ...(aaaa.status === 'fulfilled' ? aaaa.value.map((address) => ({ address, family: 6 })) : []),
      ];
      if (addresses.length > 0) return addresses;
      const errors = [a, aaaa].flatMap((r) => (r.status === 'rejected' ? [r.reason as { code?: unknown }] : []));
      // Both failed: report the more telling failure (a timeout or server failure over "no record").
      const telling = errors.find((e) => !NO_RECORD_CODES.has(String(e.code))) ?? errors.find((e) => e.code === 'ENOTFOUND') ?? errors[0];
      if (telling) throw telling;
      return [];
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  };
}

const defaultLookup = dnsResolver();

export interface ResolveOptions extends DestinationOptions {
  /** The resolver; the c-ares one (dnsResolver) when absent. */
  lookup?: LookupFn;
  /** The caller's deadline: when it aborts, resolveDestination rejects with its reason at once. */
  signal: AbortSignal;
}

/**
 * Resolves A and AAAA for `hostname` (as found in `URL.hostname`) and accepts only if EVERY
 * address is publicly routable (docs/reference/contract.md §6.6 "resolution"). The returned addresses are the only
 * ones a delivery may connect to. DNS trouble is a value (kind DNS); only the caller's own deadline
 * (`signal`) makes it reject.
 */
export async function resolveDestination(hostname: string, opts: ResolveOptions): Promise<ResolveResult> {
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

  const { signal } = opts;
  signal.throwIfAborted();
  let addresses: ResolvedAddress[];
  let onAbort: (() => void) | undefined;
  try {
    // Raced with the deadline too, so that a resolver which ignores the signal cannot hold us.
    addresses = await Promise.race([
      (opts.lookup ?? defaultLookup)(host, { signal }),
      new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    const code = (err as { code?: unknown }).code;
    return { ok: false, kind: 'DNS', reason: `${host} could not be resolved${typeof code === 'string' ? ` (${code})` : ''}` };
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
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
 * either is 400 `webhook_url_not_permitted`. `kind` says whether the name failed to resolve; a name
 * not resolved within `timeoutMs` is kind DNS too.
 */
export async function checkWebhookDestination(
  raw: string,
  opts: DestinationOptions & { lookup?: LookupFn; timeoutMs: number },
): Promise<{ ok: true; url: URL; addresses: ResolvedAddress[] } | { ok: false; kind: 'SYNTAX' | 'DNS' | 'NOT_PERMITTED'; reason: string }> {
  const checked = checkWebhookUrl(raw, opts);
  if (!checked.ok) return { ok: false, kind: 'SYNTAX', reason: checked.reason };
  const signal = AbortSignal.timeout(opts.timeoutMs);
  let resolved: ResolveResult;
  try {
    resolved = await resolveDestination(checked.url.hostname, { ...opts, signal });
  } catch (err) {
    if (!signal.aborted) throw err;
    return { ok: false, kind: 'DNS', reason: `${checked.url.hostname} could not be resolved within ${opts.timeoutMs} ms` };
  }
  if (!resolved.ok) return resolved;
  return { ok: true, url: checked.url, addresses: resolved.addresses };
}
