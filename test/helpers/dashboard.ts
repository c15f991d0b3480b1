// Organisations with dashboard people (roles, passwords), and a cookie-keeping HTTP client that signs
// in through the real sign-in form: for the dashboard tests below the browser ones.
import { acmeManifest, applyManifest, type AppliedOrg } from './fixtures.ts';
import { startApp, type TestApp } from './app.ts';

export const PASSWORD = 'correct horse battery staple';

export interface Person {
  handle: string;
  name: string;
  email: string;
  roles?: string[];
}

export function dashboardManifest(handle: string, people: Person[], approvalTtl = 'PT24H') {
  const m = acmeManifest(handle);
  return { ...m, organization: { ...m.organization, approvalTtl }, people };
}

export interface DashboardOrg extends AppliedOrg {
  people: Record<string, { id: string; email: string; name: string }>;
}

/** Applies the manifest (changed by `customise`, if given) through the operator API and sets every person's password. */
export async function setUpDashboardOrg(
  app: TestApp,
  handle: string,
  people: Person[],
  approvalTtl?: string,
  customise: (manifest: ReturnType<typeof dashboardManifest>) => void = () => {},
): Promise<DashboardOrg> {
  const manifest = dashboardManifest(handle, people, approvalTtl);
  customise(manifest);
  const org = await applyManifest(app, manifest);
  const ids = org.result.people as Record<string, { id: string }>;
  const out: DashboardOrg['people'] = {};
  for (const p of people) {
    const res = await app.admin(`/admin/people/${ids[p.handle].id}/password`, { method: 'PUT', body: { password: PASSWORD } });
    if (res.status !== 200) throw new Error(`password refused: ${res.status} ${res.text}`);
    out[p.handle] = { id: ids[p.handle].id, email: p.email, name: p.name };
  }
  return { ...org, people: out };
}

/** The app with BASE_URL equal to its real address (the routes read the configuration per request). */
export async function startDashboardApp(options: Parameters<typeof startApp>[0] = {}): Promise<TestApp> {
  const app = await startApp(options);
  app.deps.config.baseUrl = app.url;
  app.deps.config.authUrl = app.url;
  return app;
}

export const field = (html: string, name: string): string => {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!m) throw new Error(`no field ${name} in ${html.slice(0, 300)}`);
  return m[1];
};

/** A cookie jar over fetch that sends the Origin a browser sends, unless told otherwise. */
export class Client {
  cookies = new Map<string, string>();
  readonly base: string;
  constructor(base: string) {
    this.base = base;
  }

  private keep(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      if (value === '' || /Max-Age=0/.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private cookieHeader() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(path: string) {
    const res = await fetch(this.base + path, { redirect: 'manual', headers: { cookie: this.cookieHeader() } });
    this.keep(res);
    return { status: res.status, location: res.headers.get('location'), headers: res.headers, text: await res.text() };
  }

  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = { origin: this.base }) {
    const res = await fetch(this.base + path, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields),
    });
    this.keep(res);
    return { status: res.status, location: res.headers.get('location'), headers: res.headers, text: await res.text() };
  }

  async signIn(email: string, password = PASSWORD) {
    const page = await this.get('/dashboard/sign-in');
    return this.post('/dashboard/sign-in', { token: field(page.text, 'token'), email, password });
  }

  /** The CSRF token of the signed-in session, as the pages embed it. */
  async csrf() {
    return field((await this.get('/dashboard')).text, 'csrf');
  }
}

/** A purchase made through the signed-in person's dashboard form (origin DASHBOARD); its id. */
export async function dashboardPurchase(client: Client, agentId: string, details: { merchant: string; amount: string; currency?: string; reason?: string }) {
  const form = await client.get('/dashboard/purchases/new');
  const res = await client.post('/dashboard/purchases', {
    csrf: field(form.text, 'csrf'),
    token: field(form.text, 'token'),
    agent: agentId,
    merchant: details.merchant,
    amount: details.amount,
    currency: details.currency ?? 'EUR',
    reason: details.reason ?? 'Bought from the dashboard',
  });
  if (res.status !== 303 || !res.location) throw new Error(`dashboard purchase refused: ${res.status} ${res.text.slice(0, 300)}`);
  return res.location.split('/').pop()!;
}
