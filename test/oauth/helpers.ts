// Helpers for the connections tests: an app whose BASE_URL is its real address, a client metadata
// document server, and a person-in-a-browser who signs in and consents by posting the HTML forms.
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.ts';
import { applyManifest, acmeManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { Client, field } from '../helpers/dashboard.ts';
import type { Store } from '../../src/store/store.ts';
import type { Logger } from '../../src/log.ts';

/** fetch whose json() is `any`, for tests that read protocol bodies. */
export type JsonResponse = Omit<Response, 'json'> & { json(): Promise<any> };
export const fetchJson = fetch as (input: string | URL, init?: RequestInit) => Promise<JsonResponse>;

export const PASSWORD = 'correct horse battery staple';
export const REDIRECT_URI = 'http://127.0.0.1/callback';

export interface Clock {
  now: () => Date;
  advance(ms: number): void;
}

export function clock(): Clock {
  let offset = 0;
  return { now: () => new Date(Date.now() + offset), advance: (ms) => void (offset += ms) };
}

/**
 * The app on a port, with BASE_URL (and so the issuer and the MCP resource) equal to its real
 * address, and the development switch that lets a loopback client_id be fetched over http.
 * `behindProxy` (default true) sets TRUST_PROXY=1, as the Procfile does, so that tests can play the
 * proxy and send from many addresses with X-Forwarded-For; false leaves TRUST_PROXY at its default.
 */
export async function startConnectionsApp(
  options: { now?: () => Date; jobs?: { sweepEvery?: string }; behindProxy?: boolean; store?: Store; env?: Record<string, string>; log?: Logger } = {},
): Promise<TestApp> {
  const env: Record<string, string> = { WEBHOOK_UNSAFE_ALLOW_LOCAL: '1', ...(options.behindProxy === false ? {} : { TRUST_PROXY: '1' }), ...options.env };
  const app = await startApp({ env, now: options.now, jobs: options.jobs, store: options.store, log: options.log });
  // BASE_URL can only be known once the port is: the routes read the configuration per request.
  app.deps.config.baseUrl = app.url;
  app.deps.config.authUrl = app.url;
  return app;
}

export interface MetadataServer {
  origin: string;
  /** client_id of a well-formed document registering REDIRECT_URI. */
  clientId: string;
  /** Serve a document (or status) at a path. */
  serve(path: string, doc: unknown, status?: number, headers?: Record<string, string>): string;
  hits: string[];
  close(): Promise<void>;
}

export async function startMetadataServer(clientName = 'Test Assistant'): Promise<MetadataServer> {
  const routes = new Map<string, { status: number; body: string; headers: Record<string, string> }>();
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? '');
    const route = routes.get(req.url ?? '');
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(route.status, { 'content-type': 'application/json', ...route.headers }).end(route.body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const serve = (path: string, doc: unknown, status = 200, headers: Record<string, string> = {}) => {
    routes.set(path, { status, body: typeof doc === 'string' ? doc : JSON.stringify(doc), headers });
    return origin + path;
  };
  const clientId = `${origin}/client.json`;
  serve('/client.json', { client_id: clientId, client_name: clientName, redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' });
  return {
    origin,
    clientId,
    serve,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Org extends AppliedOrg {
  personId: string;
  email: string;
}

export async function setUpOrg(app: TestApp, handle = 'acme', approvalTtl = 'PT24H'): Promise<Org> {
  const manifest = acmeManifest(handle);
  const org = await applyManifest(app, { ...manifest, organization: { ...manifest.organization, approvalTtl } });
  const personId = (org.result.people as Record<string, { id: string }>).ana.id;
  const res = await app.admin(`/admin/people/${personId}/password`, { method: 'PUT', body: { password: PASSWORD } });
  if (res.status !== 200) throw new Error(`password refused: ${res.status} ${res.text}`);
  return { ...org, personId, email: `ana@${handle}.example` };
}

// ---- a browser that fills in the forms ------------------------------------------------------

export class Browser {
  cookies = new Map<string, string>();

  async fetch(url: string, init: RequestInit = {}): Promise<JsonResponse> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return res;
  }

  post(url: string, fields: Record<string, string>): Promise<JsonResponse> {
    return this.fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
  }
}

export const hiddenField = (html: string, name: string): string => {
  const m = new RegExp(`<input type="hidden" name="${name}" value="([^"]*)">`).exec(html);
  if (!m) throw new Error(`no hidden field ${name} in page:\n${html.slice(0, 2000)}`);
  return m[1];
};

export const agentChoices = (html: string): string[] => [...html.matchAll(/<input type="radio" id="agent-\d+" name="agent" value="([^"]+)"/g)].map((m) => m[1]);

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function pkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function authorizeUrl(app: TestApp, clientId: string, p: Pkce, extra: Record<string, string | null> = {}): string {
  const url = new URL(`${app.url}/oauth/authorize`);
  const params: Record<string, string | null> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    code_challenge: p.challenge,
    code_challenge_method: 'S256',
    state: 'st-' + randomBytes(4).toString('hex'),
    scope: 'purchase:check purchase:read purchase:request',
    resource: `${app.url}/mcp`,
    ...extra,
  };
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
  return url.href;
}

/**
 * Runs fn when fewer than `size` others are running. The service counts a sign-in against its email's
 * limit while the password is being checked (src/identity/people/sign-in.ts), so more than five sign-ins of one
 * person at once are refused like a sixth guess; tests running side by side take turns instead, as
 * people do.
 */
function turns(size: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    while (running >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await fn();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}
const signingIn = turns(2);

/** Signs in and reaches the consent page; returns the page and the browser. */
export async function signInToConsent(app: TestApp, org: Org, url: string, browser = new Browser()) {
  return signingIn(() => signInToConsentNow(app, org, url, browser));
}

async function signInToConsentNow(app: TestApp, org: Org, url: string, browser: Browser) {
  const start = await browser.fetch(url);
  if (start.status !== 200) throw new Error(`authorize answered ${start.status}: ${(await start.text()).slice(0, 500)}`);
  const signIn = await start.text();
  const signedIn = await browser.post(`${app.url}/oauth/sign-in`, {
    request: hiddenField(signIn, 'request'),
    csrf: hiddenField(signIn, 'csrf'),
    email: org.email,
    password: PASSWORD,
  });
  if (signedIn.status !== 303) throw new Error(`sign-in answered ${signedIn.status}: ${(await signedIn.text()).slice(0, 500)}`);
  const consent = await browser.fetch(new URL(signedIn.headers.get('location')!, app.url).href);
  return { browser, consentResponse: consent, consentHtml: await consent.text() };
}

/**
 * A new authorization request's sign-in form, opened in a new browser; `submit` answers it (from
 * `address`, as the proxy's X-Forwarded-For, when given). Opening and submitting are apart so that a
 * test can open many forms and then submit them all at once.
 */
export async function openSignIn(app: TestApp, clientId: string) {
  const browser = new Browser();
  const start = await browser.fetch(authorizeUrl(app, clientId, pkce()));
  if (start.status !== 200) throw new Error(`authorize answered ${start.status}: ${(await start.text()).slice(0, 500)}`);
  const html = await start.text();
  const form = { request: hiddenField(html, 'request'), csrf: hiddenField(html, 'csrf') };
  return {
    browser,
    async submit(email: string, password: string, address?: string) {
      const res = await browser.fetch(`${app.url}/oauth/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(address ? { 'x-forwarded-for': address } : {}) },
        body: new URLSearchParams({ ...form, email, password }).toString(),
      });
      return { status: res.status, location: res.headers.get('location'), text: await res.text() };
    },
  };
}

/** Signs in on a fresh authorization request's form: 303 to consent when the password is right. */
export const oauthSignIn = async (app: TestApp, clientId: string, email: string, password: string, address?: string) =>
  (await openSignIn(app, clientId)).submit(email, password, address);

/** The dashboard's sign-in form in a new browser, for tests of the throttle both sign-in pages share. */
export async function openDashboardSignIn(app: TestApp) {
  const client = new Client(app.url);
  const token = field((await client.get('/dashboard/sign-in')).text, 'token');
  return {
    submit: (email: string, password: string, address: string) =>
      client.post('/dashboard/sign-in', { token, email, password }, { origin: app.url, 'x-forwarded-for': address }),
  };
}

/** How many answers had each status, e.g. `{ 401: 5, 429: 10 }`. */
export const tally = (answers: { status: number }[]): Record<number, number> => {
  const out: Record<number, number> = {};
  for (const a of answers) out[a.status] = (out[a.status] ?? 0) + 1;
  return out;
};

/** The whole flow by plain HTTP: returns the tokens of a new connection to `agentId`. */
export async function connect(app: TestApp, org: Org, clientId: string, options: { scope?: string; agentId?: string } = {}) {
  const p = pkce();
  const url = authorizeUrl(app, clientId, p, options.scope ? { scope: options.scope } : {});
  const { browser, consentHtml } = await signInToConsent(app, org, url);
  const approved = await browser.post(`${app.url}/oauth/consent`, {
    request: hiddenField(consentHtml, 'request'),
    csrf: hiddenField(consentHtml, 'csrf'),
    agent: options.agentId ?? org.agents.buyer.id,
    decision: 'approve',
  });
  const location = new URL(approved.headers.get('location')!);
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code: ${location.href}`);
  const res = await fetchJson(`${app.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: p.verifier, client_id: clientId, resource: `${app.url}/mcp` }),
  });
  const tokens = (await res.json()) as { access_token: string; refresh_token: string; scope: string };
  if (!tokens.access_token) throw new Error(`token request failed: ${JSON.stringify(tokens)}`);
  const stored = await app.store.db.collection<{ _id: string; connectionId: string }>('oauth_access_tokens').findOne({ _id: createHash('sha256').update(tokens.access_token).digest('hex') });
  return { ...tokens, connectionId: stored!.connectionId as string };
}

export function tokenForm(app: TestApp, fields: Record<string, string>) {
  return fetchJson(`${app.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  });
}

export async function eventsOf(app: TestApp, type: string) {
  return app.store.db.collection<{ _id: string; type: string; data: Record<string, any> }>('events').find({ type }).toArray();
}
