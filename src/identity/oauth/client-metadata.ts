// Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document): the `client_id` is
// an https URL, and the JSON document served there describes the client (name, redirect URIs).
// The server fetches it with the webhook destination rules of docs/reference/contract.md §6.6, because the URL is
// chosen by whoever starts an authorization request (an SSRF vector otherwise):
//
//   1. The URL passes checkWebhookUrl (https, port 443, a public hostname, no userinfo, no IP
//      literal), plus the draft's own rules (a path, no dot segments, no fragment).
//   2. The host is resolved and EVERY address must be publicly routable (resolveDestination).
//   3. The request connects to exactly those checked addresses (pinned lookup, as in
//      webhooks/send.ts), follows no redirect, and is bounded by a timeout and a size cap.
//   4. The document must name the same client_id, and its redirect_uris bind the flow.
//
// With the development switch WEBHOOK_UNSAFE_ALLOW_LOCAL=1 (docs/reference/decisions.md), loopback hosts are
// allowed on any port, and also over plain http (http://localhost:PORT/...), so that a local MCP
// client or a test can serve its document without a certificate. Never in production (config.ts).
import type { LookupFunction } from 'node:net';
import { Client } from 'undici';
import { checkWebhookUrl, resolveDestination, type LookupFn, type ResolvedAddress } from '../../webhooks/destination.ts';
import { isAcceptableRedirectUri } from './redirect-uri.ts';

export interface ClientMetadata {
  clientId: string;
  /** `client_name`, or the client_id host when the document has none. */
  clientName: string;
  clientHost: string;
  redirectUris: string[];
  /** The `scope` the client declares it may ask for, if any (space-separated). */
  scope: string | null;
  /** The registration's id when the client registered here (RFC 7591): its name is then unverified. */
  registeredId: string | null;
}

export type ClientMetadataResult = { ok: true; metadata: ClientMetadata } | { ok: false; reason: string };

export interface FetchOptions {
  allowLocal: boolean;
  timeoutMs?: number;
  lookup?: LookupFn;
}

export const CLIENT_METADATA_TIMEOUT_MS = 5_000;
/** The draft suggests 5 KB; a little slack for generous client names and several redirect URIs. */
export const CLIENT_METADATA_MAX_BYTES = 8 * 1024;
const MAX_REDIRECT_URIS = 20;

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Step 1: syntax only. Returns the parsed URL or why it is refused. */
export function checkClientIdUrl(clientId: string, allowLocal: boolean): { ok: true; url: URL } | { ok: false; reason: string } {
  if (typeof clientId !== 'string' || clientId === '') return { ok: false, reason: 'client_id is missing' };
  let url: URL;
  if (allowLocal && /^http:\/\//i.test(clientId)) {
    try {
      url = new URL(clientId);
    } catch {
      return { ok: false, reason: 'client_id is not a URL' };
    }
    if (!LOOPBACK_NAMES.has(url.hostname) || url.username !== '' || url.password !== '') {
      return { ok: false, reason: 'a plain http client_id is allowed only on a loopback host in local development' };
    }
  } else {
    const checked = checkWebhookUrl(clientId, { allowLocal });
    if (!checked.ok) return { ok: false, reason: `client_id is not a permitted URL: ${checked.reason}` };
    url = checked.url;
  }
  if (url.hash !== '' || clientId.includes('#')) return { ok: false, reason: 'client_id must not carry a fragment' };
  if (url.pathname === '/' || url.pathname === '') return { ok: false, reason: 'client_id must have a path' };
  if (url.pathname.split('/').some((seg) => seg === '.' || seg === '..') || /\/\.\.?(\/|$)/.test(clientId)) {
    return { ok: false, reason: 'client_id must not contain dot segments' };
  }
  return { ok: true, url };
}

function pinnedLookup(expectedHost: string, addresses: ResolvedAddress[]): LookupFunction {
  return (hostname, options, callback) => {
    if (hostname.toLowerCase() !== expectedHost) {
      const err: NodeJS.ErrnoException = new Error(`refusing to resolve ${hostname}: not the checked host`);
      err.code = 'ENOTFOUND';
      callback(err, '', 0);
      return;
    }
    if (options.all) callback(null, addresses.map(({ address, family }) => ({ address, family })));
    else callback(null, addresses[0].address, addresses[0].family);
  };
}

export const cleanText = (s: string, max: number) => s.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g, '').trim().slice(0, max);

/** Step 4: the document itself. Exported for unit tests. */
export function parseClientMetadata(clientId: string, url: URL, doc: unknown): ClientMetadataResult {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return { ok: false, reason: 'the client metadata document is not a JSON object' };
  const d = doc as Record<string, unknown>;
  if (d.client_id !== clientId) return { ok: false, reason: 'the document\'s client_id does not equal the URL it was fetched from' };
  if ('client_secret' in d || 'client_secret_expires_at' in d) return { ok: false, reason: 'a client metadata document must not carry a client secret' };
  const method = d.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') return { ok: false, reason: 'only token_endpoint_auth_method "none" (a public client with PKCE) is supported' };
  if (d.grant_types !== undefined && !(Array.isArray(d.grant_types) && d.grant_types.includes('authorization_code'))) {
    return { ok: false, reason: 'grant_types must include authorization_code' };
  }
  if (d.response_types !== undefined && !(Array.isArray(d.response_types) && d.response_types.includes('code'))) {
    return { ok: false, reason: 'response_types must include code' };
  }
  const uris = d.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS || !uris.every((u) => typeof u === 'string')) {
    return { ok: false, reason: 'redirect_uris must be a non-empty array of strings' };
  }
  const bad = (uris as string[]).find((u) => !isAcceptableRedirectUri(u));
  if (bad !== undefined) return { ok: false, reason: `redirect URI ${JSON.stringify(bad.slice(0, 200))} is not acceptable` };
  const host = url.host;
  const name = typeof d.client_name === 'string' ? cleanText(d.client_name, 100) : '';
  const scope = typeof d.scope === 'string' ? d.scope : null;
  return { ok: true, metadata: { clientId, clientName: name || host, clientHost: host, redirectUris: uris as string[], scope, registeredId: null } };
}

async function readCapped(body: AsyncIterable<Buffer | Uint8Array>, limit: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    total += buf.length;
    if (total > limit) return null;
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/** Fetches and validates a client ID metadata document. Never throws for what the network or the host does. */
export async function fetchClientMetadata(clientId: string, opts: FetchOptions): Promise<ClientMetadataResult> {
  const checked = checkClientIdUrl(clientId, opts.allowLocal);
  if (!checked.ok) return checked;
  const url = checked.url;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const timeoutMs = opts.timeoutMs ?? CLIENT_METADATA_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('timed out')), timeoutMs);
  const started = performance.now();
  const remaining = () => Math.max(1, Math.ceil(timeoutMs - (performance.now() - started)));

  let client: Client | null = null;
  try {
    // Step 2, bounded by the same deadline (resolveDestination gives up when the signal aborts).
    const resolved = await resolveDestination(url.hostname, { allowLocal: opts.allowLocal, lookup: opts.lookup, signal: controller.signal });
    if (!resolved.ok) return { ok: false, reason: `the client_id host is not permitted: ${resolved.reason}` };
    // Step 3.
    client = new Client(url.origin, {
      connect: { lookup: pinnedLookup(host, resolved.addresses), timeout: remaining(), maxCachedSessions: 0 },
      headersTimeout: remaining(),
      bodyTimeout: remaining(),
      pipelining: 1,
    });
    const response = await client.request({
      method: 'GET',
      path: `${url.pathname}${url.search}`,
      headers: { accept: 'application/json', 'user-agent': 'spend-control-oauth/1' },
      signal: controller.signal,
    });
    response.body.on('error', () => undefined);
    if (response.statusCode !== 200) {
      response.body.destroy();
      const redirect = response.statusCode >= 300 && response.statusCode <= 399;
      return { ok: false, reason: redirect ? 'the client_id URL redirects; redirects are not followed' : `the client_id URL answered HTTP ${response.statusCode}` };
    }
    const type = String(response.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (type !== 'application/json' && !(type.startsWith('application/') && type.endsWith('+json'))) {
      response.body.destroy();
      return { ok: false, reason: 'the client metadata document is not served as application/json' };
    }
    const bytes = await readCapped(response.body, CLIENT_METADATA_MAX_BYTES);
    if (bytes === null) {
      response.body.destroy();
      return { ok: false, reason: `the client metadata document is larger than ${CLIENT_METADATA_MAX_BYTES} bytes` };
    }
    let doc: unknown;
    try {
      doc = JSON.parse(bytes.toString('utf8'));
    } catch {
      return { ok: false, reason: 'the client metadata document is not valid JSON' };
    }
    return parseClientMetadata(clientId, url, doc);
  } catch (err) {
    if (controller.signal.aborted) return { ok: false, reason: `the client_id URL did not answer within ${timeoutMs} ms` };
    const code = (err as { code?: unknown }).code;
    return { ok: false, reason: `the client metadata document could not be fetched${typeof code === 'string' ? ` (${code})` : ''}` };
  } finally {
    clearTimeout(timer);
    await client?.destroy().catch(() => undefined);
  }
}
