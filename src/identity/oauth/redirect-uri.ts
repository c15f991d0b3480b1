// Redirect URI matching. A registered URI binds the flow by exact string comparison
// (RFC 9700 2.1, OAuth 2.1 4.1.1), with one exception: native apps on loopback (RFC 8252 7.3)
// pick a port at run time, so for http://127.0.0.1, http://[::1] and http://localhost the port is
// ignored and everything else must still match exactly.
import { isLoopbackAddress } from '../../loopback.ts';

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

function parse(uri: string): URL | null {
  try {
    return new URL(uri);
  } catch {
    return null;
  }
}

/**
 * Why a redirect URI would not be read as written, or null. The URL parser (a browser's, and the one
 * that builds the authorization response) strips leading and trailing controls and spaces, drops tabs
 * and newlines anywhere, reads `\` as `/` and percent-decodes an http(s) host, so a URI holding them
 * sends the browser somewhere else than the string registered, which is the string an authorization
 * request is compared with. Other controls (C0, DEL, C1), white space, invisible format characters and
 * lone surrogates are no URI characters at all (RFC 3986 2). Refused at registration and in client
 * metadata documents: RFC 7591 3.2.2 `invalid_redirect_uri` (docs/reference/decisions.md).
 */
export function redirectUriCharacterProblem(uri: string): string | null {
  if (/\p{Cs}/u.test(uri)) return 'holds a lone surrogate, which is not text';
  if (/[\p{Cc}\p{Cf}\p{Z}\s]/u.test(uri)) return 'holds a control, white space or invisible character';
  if (uri.includes('\\')) return 'holds a backslash, which browsers read as a slash';
  // http and https hosts are percent-decoded (`app.example%2eevil.example` is app.example.evil.example).
  const host = /^https?:[/]*([^/?#]*)/i.exec(uri)?.[1] ?? '';
  if (host.includes('%')) return 'has a percent-encoded host, which browsers decode';
  return null;
}

export function isLoopbackRedirect(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * Whether an authorization error may be sent to this redirect URI without the person seeing it first.
 * Anyone can register an https redirect URI (RFC 7591 here, or a metadata document on a host of their
 * own), so sending every request made wrong on purpose straight there would make this service an open
 * redirector to any web page (RFC 9700 4.11.2). A loopback URI reaches only the person's own machine,
 * and a private-use scheme only an app.
 */
export const isWebRedirect = (uri: string): boolean => parse(uri)?.protocol === 'https:';

/** A redirect URI a client metadata document may register: absolute, no fragment, https or loopback http, or a private-use scheme. */
export function isAcceptableRedirectUri(uri: string): boolean {
  if (redirectUriCharacterProblem(uri) !== null) return false;
  const url = parse(uri);
  if (!url || url.hash !== '' || uri.includes('#')) return false;
  if (url.username !== '' || url.password !== '') return false;
  if (url.protocol === 'https:') return true;
  if (url.protocol === 'http:') return isLoopbackRedirect(url);
  // Private-use URI schemes of native apps (RFC 8252 7.1) are reverse domain names: `com.example.app:/cb`.
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol)) return true;
  return false;
}

/**
 * Whether a redirect URI leads to the person's own machine: http or https to `localhost` (or a name
 * under it, RFC 6761 6.3), 127.0.0.0/8 or ::1 (IPv4-mapped included). The URL parser has already
 * turned other spellings of an IPv4 address (`2130706433`, `0x7f.1`) into dotted form.
 */
export function isLocalRedirect(uri: string): boolean {
  const url = parse(uri);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return false;
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  return host === 'localhost' || host.endsWith('.localhost') || isLoopbackAddress(host.replace(/^\[(.*)\]$/, '$1'));
}

/**
 * Whether a client ID metadata document's redirect URIs all lead to the person's own machine: then
 * any program running there can take the code, so the document's host vouches for nothing and the
 * consent page warns (MCP authorization 2025-11-25, client ID metadata documents: SHOULD warn).
 */
export const onlyLocalRedirects = (uris: readonly string[]): boolean => uris.length > 0 && uris.every(isLocalRedirect);

/** Whether the redirect_uri of a request matches one registered URI. */
export function redirectUriMatches(requested: string, registered: string): boolean {
  if (requested === registered) return true;
  const a = parse(requested);
  const b = parse(registered);
  if (!a || !b || !isLoopbackRedirect(a) || !isLoopbackRedirect(b)) return false;
  if (a.hash !== '' || requested.includes('#') || a.username !== '' || a.password !== '') return false;
  // Same everything but the port. Compare the raw strings with the port removed, so that no
  // normalisation of the URL parser widens the match.
  const withoutPort = (raw: string, u: URL) => (u.port === '' ? raw : raw.replace(`${u.hostname}:${u.port}`, u.hostname));
  return a.hostname === b.hostname && withoutPort(requested, a) === withoutPort(registered, b);
}

export function findRegisteredRedirect(requested: string, registered: readonly string[]): string | null {
  return registered.find((r) => redirectUriMatches(requested, r)) ?? null;
}
