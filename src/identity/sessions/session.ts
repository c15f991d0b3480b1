// Signed-in people: a server-side session in the store behind an opaque cookie (HttpOnly,
// SameSite=Lax, Secure and `__Host-` when BASE_URL is https), a CSRF token per session, and the
// same-origin check on every request that changes something (OWASP CSRF cheat sheet: synchronizer
// token plus Origin verification). Sessions end on sign-out, after 30 idle minutes and after 12 hours.
import { timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import type { AppDeps } from '../../app-deps.ts';
import type { Config } from '../../config.ts';
import type { OrganizationDoc, PersonDoc } from '../../store/collections.ts';
import { credentialDigest } from '../oauth/credentials.ts';
import { randomToken } from '../oauth/browser.ts';
import { dashboardCollections, type DashboardSessionDoc } from './documents.ts';

export const IDLE_MS = 30 * 60 * 1000;
export const ABSOLUTE_MS = 12 * 60 * 60 * 1000;
/** A session's expiry slides at most once a minute: not one write per request. */
const SLIDE_RESOLUTION_MS = 60 * 1000;
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

const secure = (config: Config) => config.baseUrl.startsWith('https:');
const sessionCookie = (config: Config) => (secure(config) ? '__Host-cmp_dashboard' : 'cmp_dashboard');
/** Before sign-in: binds the sign-in form to this browser (no login CSRF). */
const signInCookie = (config: Config) => (secure(config) ? '__Host-cmp_dashboard_signin' : 'cmp_dashboard_signin');

function setCookie(ctx: Context, config: Config, name: string, value: string, maxAgeSeconds: number): void {
  ctx.append('Set-Cookie', `${name}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure(config) ? '; Secure' : ''}`);
}

function readCookie(ctx: Context, name: string): string | null {
  const value = ctx.cookies.get(name);
  return value && TOKEN.test(value) ? value : null;
}

export const equalTokens = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export interface SignedIn {
  session: DashboardSessionDoc;
  person: PersonDoc;
  organization: OrganizationDoc;
}

export async function startSession(deps: AppDeps, ctx: Context, person: PersonDoc): Promise<void> {
  const now = deps.now();
  const token = randomToken();
  await dashboardCollections(deps.store.db).sessions.insertOne({
    _id: credentialDigest(token),
    personId: person._id,
    organizationId: person.organizationId,
    csrfToken: randomToken(),
    createdAt: now,
    lastSeenAt: now,
    expiresAt: new Date(now.getTime() + IDLE_MS),
    absoluteExpiresAt: new Date(now.getTime() + ABSOLUTE_MS),
  });
  setCookie(ctx, deps.config, sessionCookie(deps.config), token, ABSOLUTE_MS / 1000);
  setCookie(ctx, deps.config, signInCookie(deps.config), '', 0);
}

/**
 * The signed-in person, or null (no cookie, unknown, expired, person gone, organisation suspended).
 * `slide: false` for what a page asks by itself (the inbox's polling): it is not the person's activity,
 * so it does not push the idle timeout back.
 */
export async function currentSession(deps: AppDeps, ctx: Context, { slide = true } = {}): Promise<SignedIn | null> {
  const token = readCookie(ctx, sessionCookie(deps.config));
  if (!token) return null;
  const sessions = dashboardCollections(deps.store.db).sessions;
  const session = await sessions.findOne({ _id: credentialDigest(token) });
  const now = deps.now();
  if (!session) return null;
  if (session.expiresAt.getTime() <= now.getTime()) {
    await sessions.deleteOne({ _id: session._id });
    return null;
  }
  const person = await deps.collections.people.findOne({ _id: session.personId, organizationId: session.organizationId });
  const organization = await deps.collections.organizations.findOne({ _id: session.organizationId });
  if (!person || !organization || organization.status !== 'ACTIVE' || person.passwordHash === null) {
    await sessions.deleteOne({ _id: session._id });
    return null;
  }
  if (slide && now.getTime() - session.lastSeenAt.getTime() >= SLIDE_RESOLUTION_MS) {
    const expiresAt = new Date(Math.min(now.getTime() + IDLE_MS, session.absoluteExpiresAt.getTime()));
    await sessions.updateOne({ _id: session._id }, { $set: { lastSeenAt: now, expiresAt } });
    session.lastSeenAt = now;
    session.expiresAt = expiresAt;
  }
  return { session, person, organization };
}

export async function endSession(deps: AppDeps, ctx: Context, session: DashboardSessionDoc): Promise<void> {
  await dashboardCollections(deps.store.db).sessions.deleteOne({ _id: session._id });
  setCookie(ctx, deps.config, sessionCookie(deps.config), '', 0);
}

/** The sign-in form's token: the browser's existing one when well-formed, else a new one. Sets the cookie. */
export function signInToken(ctx: Context, config: Config): string {
  const token = readCookie(ctx, signInCookie(config)) ?? randomToken();
  setCookie(ctx, config, signInCookie(config), token, 60 * 60);
  return token;
}

export function signInTokenMatches(ctx: Context, config: Config, presented: string | undefined): boolean {
  const token = readCookie(ctx, signInCookie(config));
  return token !== null && presented !== undefined && equalTokens(token, presented);
}

/**
 * A request that changes something must come from a dashboard page: its Origin (sent by browsers on
 * every POST) is this service's, or, from a browser that sends none, Sec-Fetch-Site is not cross-site.
 */
export function sameOrigin(ctx: Context, config: Config): boolean {
  const origin = ctx.get('origin');
  if (origin !== '') return origin === new URL(config.baseUrl).origin || origin === `${ctx.protocol}://${ctx.host}`;
  const site = ctx.get('sec-fetch-site');
  return site === '' || site === 'same-origin' || site === 'none';
}
