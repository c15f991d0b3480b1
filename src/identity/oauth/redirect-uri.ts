// Redirect URI matching. A registered URI binds the flow by exact string comparison
// (RFC 9700 2.1, OAuth 2.1 4.1.1), with one exception: native apps on loopback (RFC 8252 7.3)
// pick a port at run time, so for http://127.0.0.1, http://[::1] and http://localhost the port is
// ignored and everything else must still match exactly.

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

function parse(uri: string): URL | null {
  try {
    return new URL(uri);
  } catch {
    return null;
  }
}

export function isLoopbackRedirect(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/** A redirect URI a client metadata document may register: absolute, no fragment, https or loopback http, or a private-use scheme. */
export function isAcceptableRedirectUri(uri: string): boolean {
  const url = parse(uri);
  if (!url || url.hash !== '' || uri.includes('#')) return false;
  if (url.username !== '' || url.password !== '') return false;
  if (url.protocol === 'https:') return true;
  if (url.protocol === 'http:') return isLoopbackRedirect(url);
  // Private-use URI schemes of native apps (RFC 8252 7.1) are reverse domain names: `com.example.app:/cb`.
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol)) return true;
  return false;
}

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
