// The people's dashboard under /dashboard (docs/internals/design.md §5): server-rendered pages over the same commands
// and queries as the API. Thin handlers: check the session, the role and the form, then call the
// command (answerApproval, submitPurchase, revokeConnectionIn, revokeApiKey) or a query.
import type Router from '@koa/router';
import { newRouter } from '../http/router.ts';
import type { Context, Next } from 'koa';
import type { AppDeps } from '../app-deps.ts';
import { ApiError, StorageFull, notFound } from '../http/errors.ts';
import { storeFailure } from '../http/store-failure.ts';
import { queryValue, uuidParam } from '../http/params.ts';
import { isUuid } from '../ids.ts';
import { isIsoCurrency } from '../engine/currency.ts';
import { readForm, type FormResult } from '../identity/oauth/form.ts';
import { randomToken } from '../identity/oauth/browser.ts';
import { answerApproval } from '../approvals/answer.ts';
import { submitPurchase } from '../purchases/submit.ts';
import { parsePurchase } from '../purchases/input.ts';
import { compile } from '../http/validate.ts';
import { PurchaseRequestBody } from '../../schemas/purchases.ts';
import { runCommand } from '../commands/run-command.ts';
import { connectionsCollection, listedConnections, type ConnectionDoc } from '../identity/connections/documents.ts';
import { stillListed } from '../identity/revoked-listing.ts';
import { grantableScopes } from '../identity/oauth/scopes.ts';
import { revokeConnectionIn } from '../identity/connections/revoke.ts';
import { revokeApiKey } from '../identity/credentials/revoke.ts';
import { simulateVersion } from '../simulations/simulate.ts';
import { changeWire, countInRange, replayRange } from '../simulations/replay-run.ts';
import type { ReplayedPurchase } from '../simulations/replay.ts';
import { setShadow, SHADOWS, type ShadowDoc } from '../policies/shadows.ts';
import { DateTime } from 'luxon';
import { periodOfDate } from '../engine/periods.ts';
import { hasRole, samePersonIds } from '../identity/people/roles.ts';
import { signIn } from '../identity/people/sign-in.ts';
import type { PersonRole } from '../store/collections.ts';
import { ASSETS } from './assets.ts';
import { money, parseMajor } from './html.ts';
import { MAX_STORED_MINOR } from '../money.ts';
import { currentSession, endSession, equalTokens, sameOrigin, signInToken, signInTokenMatches, startSession, type SignedIn } from '../identity/sessions/session.ts';
import { currentWindows, listPurchases, pendingApprovals, purchaseDetail, type PurchaseFilters } from './queries.ts';
import * as views from './views.ts';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/**
 * Where to go after signing in: a dashboard page of this site only (a path under /dashboard, with its
 * query), never another site or the sign-in page itself; anything else is null (the inbox).
 */
function returnPath(value: string | null): string | null {
  if (value === null || value.length > 512) return null;
  // No dots or escapes in the path: a browser would resolve `..` (or `%2e%2e`) to a page off the dashboard.
  if (!/^\/dashboard(?:\/[A-Za-z0-9_\-/]*)?(?:\?[A-Za-z0-9._~\-%=&+]*)?$/.test(value)) return null;
  if (value.includes('//') || value.startsWith('/dashboard/sign-in')) return null;
  return value;
}
const purchaseBody = compile(PurchaseRequestBody);
// A Map: a query value looked up on an object literal reaches its prototype (?answered=constructor).
const ANSWERED = new Map([
  ['APPROVED', 'Approved: the purchase can go ahead.'],
  ['REJECTED', 'Rejected: the purchase will not go ahead.'],
  ['PENDING_APPROVAL', 'Your approval is recorded: the purchase waits for more approvers.'],
]);

/**
 * A refused purchase's problems in the words of the form: the person wrote the amount in major units,
 * so the API's amount issues (named `amountMinor`, counted in minor units) are said in the currency.
 */
function formProblems(err: ApiError, currency: string): string {
  const said = (i: { code: string; message: string }) =>
    i.code === 'AMOUNT_NOT_POSITIVE' ? 'The amount must be more than zero.' : i.code === 'AMOUNT_TOO_LARGE' ? `The amount can be at most ${money(MAX_STORED_MINOR, currency)}.` : i.message;
  return err.issues?.map(said).join(' ') ?? err.message;
}

function send(ctx: Context, status: number, page: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page;
}

const viewerOf = (s: SignedIn): views.Viewer => ({ person: s.person, organization: s.organization, csrf: s.session.csrfToken });

export function dashboardRoutes(deps: AppDeps): Router {
  const router = newRouter({ prefix: '/dashboard' });

  // Headers of every page; expected failures rendered as pages, not JSON.
  router.use(async (ctx: Context, next: Next) => {
    ctx.set('Content-Security-Policy', CSP);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'same-origin');
    // Before the handler, so that error pages (which name the person and carry the CSRF token) get it too;
    // the assets replace it with their own.
    ctx.set('Cache-Control', 'no-store');
    try {
      await next();
    } catch (err) {
      const viewer = ctx.state.signedIn ? viewerOf(ctx.state.signedIn as SignedIn) : null;
      // A store busy, failing over or full: 503 and Retry-After, logged as on /v1 (src/http/store-failure.ts).
      const failure = storeFailure(deps, err, { method: ctx.method, path: ctx.path });
      if (failure) {
        ctx.set(failure.headers ?? {});
        const text =
          failure instanceof StorageFull
            ? 'The service cannot store new data right now. Nothing of this request was kept; try again later.'
            : 'The service is busy and could not complete this request in time. Try again in a moment.';
        return send(ctx, 503, views.messagePage(viewer, 'Try again later', text));
      }
      if (!(err instanceof ApiError)) {
        deps.log.error('unhandled error', { err: err instanceof Error ? err.stack : String(err), method: ctx.method, path: ctx.path });
        return send(ctx, 500, views.messagePage(viewer, 'Something went wrong', 'Something went wrong on our side. Try again in a moment.'));
      }
      const title = err.status === 404 ? 'Not found' : err.status === 403 ? 'Not allowed' : 'That did not work';
      const detail = err.issues?.map((i) => i.message).join(' ') ?? '';
      send(ctx, err.status, views.messagePage(viewer, title, `${err.message} ${detail}`.trim()));
    }
  });

  // Every request that changes something: from our own pages only (cross-site form posts are refused).
  router.use(async (ctx: Context, next: Next) => {
    if (!SAFE_METHODS.has(ctx.method) && !sameOrigin(ctx, deps.config)) {
      throw new ApiError(403, 'cross_site_request', 'This request came from another site, so it was refused; nothing was changed.');
    }
    return next();
  });

  for (const asset of Object.values(ASSETS)) {
    router.get(asset.path.slice('/dashboard'.length), (ctx) => {
      ctx.type = asset.type;
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
      ctx.body = asset.body;
    });
  }

  /** The signed-in person (else to the sign-in page), holding `role` when given. */
  async function signedIn(ctx: Context, role?: PersonRole, options?: { slide: boolean }): Promise<SignedIn | null> {
    const s = await currentSession(deps, ctx, options);
    if (!s) {
      if (!SAFE_METHODS.has(ctx.method)) throw new ApiError(403, 'session_ended', 'You are signed out (or your session ended), so nothing was changed. Sign in again.');
      ctx.status = 303;
      // Back to this page once signed in (an approval's link in an email, say).
      const next = returnPath(ctx.url);
      ctx.redirect(next === null || next === '/dashboard' ? '/dashboard/sign-in' : `/dashboard/sign-in?next=${encodeURIComponent(next)}`);
      return null;
    }
    ctx.state.signedIn = s;
    if (role && !hasRole(s.person, role)) throw new ApiError(403, 'role_required', `This needs the ${role} role, which you do not have.`);
    return s;
  }

  /**
   * The viewer of the inbox, with every record of their organisation that has their email: one person, who
   * is offered no Approve on what either record made or answered, as the answer command refuses it.
   */
  async function inboxViewer(s: SignedIn): Promise<views.Viewer> {
    return { ...viewerOf(s), selfIds: new Set([s.person._id, ...(await samePersonIds(deps.collections.people, s.organization._id, s.person.email))]) };
  }

  /** A form that changes something: parsed, and carrying this session's CSRF token. */
  async function changeForm(ctx: Context, s: SignedIn): Promise<FormResult & { ok: true }> {
    const form = await readForm(ctx);
    if (!form.ok) throw new ApiError(400, 'invalid_form', `This form could not be read: ${form.detail}.`);
    const csrf = form.get('csrf') ?? ctx.get('x-csrf-token');
    if (!csrf || !equalTokens(csrf, s.session.csrfToken)) {
      throw new ApiError(403, 'csrf_token_invalid', 'This form is out of date or did not come from the dashboard, so nothing was changed. Reload the page and try again.');
    }
    return form;
  }

  router.get('/sign-in', async (ctx) => {
    const next = returnPath(typeof ctx.query.next === 'string' ? ctx.query.next : null);
    if (await currentSession(deps, ctx)) return ctx.redirect(next ?? '/dashboard');
    send(ctx, 200, views.signInPage({ token: signInToken(ctx, deps.config), next }));
  });

  router.post('/sign-in', async (ctx) => {
    const form = await readForm(ctx);
    if (!form.ok) throw new ApiError(400, 'invalid_form', `This form could not be read: ${form.detail}.`);
    const email = form.get('email') ?? '';
    const next = returnPath(form.get('next') ?? null);
    const again = (status: number, error: string) => send(ctx, status, views.signInPage({ token: signInToken(ctx, deps.config), email, error, next }));
    if (!signInTokenMatches(ctx, deps.config, form.get('token'))) return again(403, 'This sign-in form expired or did not come from this site. Try again.');
    const result = await signIn(deps, email, form.get('password') ?? '', ctx.ip);
    if (!result.ok) {
      if (result.reason === 'throttled') {
        const minutes = Math.max(1, Math.ceil((result.until.getTime() - deps.now().getTime()) / 60000));
        return again(429, `Too many failed sign-ins. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`);
      }
      return again(401, 'That email and password do not match. Check them and try again.');
    }
    const org = await deps.collections.organizations.findOne({ _id: result.person.organizationId });
    if (!org || org.status !== 'ACTIVE') return again(403, 'Your organisation is suspended, so its dashboard is closed.');
    await startSession(deps, ctx, result.person);
    ctx.status = 303;
    ctx.redirect(next ?? '/dashboard');
  });

  router.post('/sign-out', async (ctx) => {
    const s = await currentSession(deps, ctx);
    if (s) {
      await changeForm(ctx, s);
      await endSession(deps, ctx, s.session);
    }
    ctx.status = 303;
    ctx.redirect('/dashboard/sign-in');
  });

  router.get('/', async (ctx) => {
    const s = await signedIn(ctx);
    if (!s) return;
    const now = deps.now();
    const items = await pendingApprovals(deps, s.organization._id, now);
    const done = ANSWERED.get(queryValue(ctx, 'answered') ?? '');
    send(ctx, 200, views.inboxPage(await inboxViewer(s), items, now, hasRole(s.person, 'approver'), { notice: done, emailOff: deps.config.smtp === null }));
  });

  router.get('/inbox/live', async (ctx) => {
    // The page's own polling: an inbox left open still signs out after the idle timeout.
    const s = await signedIn(ctx, undefined, { slide: false });
    if (!s) return;
    const now = deps.now();
    send(ctx, 200, views.inboxFragment(await pendingApprovals(deps, s.organization._id, now), await inboxViewer(s), now, hasRole(s.person, 'approver')));
  });

  router.post('/approvals/:purchaseId/answer', async (ctx) => {
    const s = await signedIn(ctx, 'approver');
    if (!s) return;
    const form = await changeForm(ctx, s);
    const purchaseId = uuidParam(ctx, 'purchaseId', 'purchase request');
    const answer = form.get('answer');
    if (answer !== 'APPROVE' && answer !== 'REJECT') throw new ApiError(400, 'invalid_form', 'Choose Approve or Reject.');
    const comment = form.get('comment')?.trim() || null;
    if (comment !== null && comment.length > 2000) throw new ApiError(400, 'invalid_form', 'A comment is at most 2000 characters.');
    try {
      const result = await answerApproval(deps, { purchaseId, answer, personHandle: s.person.handle, comment, organizationId: s.organization._id });
      ctx.status = 303;
      ctx.redirect(`/dashboard?answered=${result.purchase.status}`);
    } catch (err) {
      // A second answer, one after expiry, or an approval of one's own purchase: the command's own
      // refusal, on the inbox as it is now.
      if (!(err instanceof ApiError) || (err.status !== 409 && err.code !== 'self_approval_not_permitted')) throw err;
      const now = deps.now();
      send(ctx, err.status, views.inboxPage(await inboxViewer(s), await pendingApprovals(deps, s.organization._id, now), now, true, { error: err.message, code: err.code, emailOff: deps.config.smtp === null }));
    }
  });

  router.get('/purchases', async (ctx) => {
    const s = await signedIn(ctx);
    if (!s) return;
    const q = (name: string) => queryValue(ctx, name)?.trim() || undefined;
    const filters: PurchaseFilters = { agentId: q('agent'), status: q('status'), outcome: q('outcome'), from: q('from'), to: q('to'), merchant: q('merchant'), cursor: q('cursor') };
    const agents = await deps.collections.agents.find({ organizationId: s.organization._id }).sort({ name: 1 }).toArray();
    try {
      const page = await listPurchases(deps, s.organization, filters);
      send(ctx, 200, views.purchasesPage(viewerOf(s), { filters, agents, ...page }));
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 400) throw err;
      send(ctx, 400, views.purchasesPage(viewerOf(s), { filters, agents, purchases: [], nextCursor: null, error: err.issues?.map((i) => i.message).join(' ') }));
    }
  });

  const purchasableAgents = (organizationId: string) =>
    deps.collections.agents.find({ organizationId, status: { $ne: 'ARCHIVED' } }).sort({ name: 1 }).toArray();

  router.get('/purchases/new', async (ctx) => {
    const s = await signedIn(ctx, 'approver');
    if (!s) return;
    send(ctx, 200, views.newPurchasePage(viewerOf(s), { agents: await purchasableAgents(s.organization._id), token: randomToken() }));
  });

  router.post('/purchases', async (ctx) => {
    const s = await signedIn(ctx, 'approver');
    if (!s) return;
    const form = await changeForm(ctx, s);
    const org = s.organization;
    const values: views.PurchaseFormValues = {
      agentId: form.get('agent'),
      merchant: form.get('merchant'),
      amount: form.get('amount'),
      currency: (form.get('currency') ?? org.currency).trim().toUpperCase(),
      reason: form.get('reason'),
      category: form.get('category'),
    };
    const token = form.get('token') ?? '';
    const agents = await purchasableAgents(org._id);
    const refuse = (error: string) => send(ctx, 400, views.newPurchasePage(viewerOf(s), { agents, token: /^[A-Za-z0-9_-]{43}$/.test(token) ? token : randomToken(), values, error }));
    const agent = agents.find((a) => a._id === values.agentId?.toLowerCase());
    if (!agent) return refuse('Choose one of your organisation\'s agents.');
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return refuse('This form is out of date; check the details and submit again.');
    const currency = values.currency!;
    if (!isIsoCurrency(currency)) return refuse(`${currency} is not an ISO 4217 currency code.`);
    const amount = parseMajor(values.amount ?? '', currency);
    if (amount === null) return refuse(`Write the amount in ${currency} with a dot and at most as many decimals as ${currency} has, for example 125.50.`);
    const body = { merchant: values.merchant ?? '', amountMinor: amount.toString(), reason: values.reason ?? '', currency, category: values.category ?? null };
    let input;
    try {
      input = parsePurchase(purchaseBody, body, org.currency).purchase;
    } catch (err) {
      if (err instanceof ApiError) return refuse(formProblems(err, currency));
      throw err;
    }
    let result;
    try {
      result = await submitPurchase(deps, {
        organization: org,
        principal: { kind: 'PERSON', organizationId: org._id, agentId: agent._id, personId: s.person._id, name: s.person.name },
        purchase: input,
        body,
        rawBody: JSON.stringify(body),
        // The form's one-time token: submitting the same form twice records one purchase.
        idempotencyKey: token,
        origin: 'DASHBOARD',
      });
    } catch (err) {
      // The same form sent back with other details (the browser's Back button): a new form for them.
      if (err instanceof ApiError && err.code === 'idempotency_key_reuse') {
        return send(ctx, 409, views.newPurchasePage(viewerOf(s), { agents, token: randomToken(), values, error: 'This form was already sent with other details. Check them and submit again.' }));
      }
      throw err;
    }
    ctx.status = 303;
    ctx.redirect(`/dashboard/purchases/${(result.body.purchaseRequest as { id: string }).id}`);
  });

  router.get('/purchases/:purchaseId', async (ctx) => {
    const s = await signedIn(ctx);
    if (!s) return;
    const detail = await purchaseDetail(deps, s.organization._id, ctx.params.purchaseId);
    if (!detail) throw notFound('purchase');
    // Still waiting: answered here too, where an approver's email leads (the inbox lists the newest 200).
    const now = deps.now();
    const [waiting] = detail.approval?.state === 'PENDING' ? await pendingApprovals(deps, s.organization._id, now, detail.purchase.id) : [];
    const viewer = waiting ? await inboxViewer(s) : viewerOf(s);
    send(ctx, 200, views.purchaseDetailPage(viewer, detail, waiting && { item: waiting, now, canAnswer: hasRole(s.person, 'approver') }));
  });

  router.get('/budgets', async (ctx) => {
    const s = await signedIn(ctx);
    if (!s) return;
    send(ctx, 200, views.budgetsPage(viewerOf(s), await currentWindows(deps, s.organization, deps.now())));
  });

  router.get('/policies', async (ctx) => {
    const s = await signedIn(ctx);
    if (!s) return;
    send(ctx, 200, views.policiesPage(viewerOf(s), await policyRows(deps, s, ctx)));
  });

  // Admins put the draft in shadow, or stop it (docs/operate/shadow.md).
  router.post('/policies/:policyId/versions/:versionId/shadow', async (ctx) => {
    const s = await signedIn(ctx, 'admin');
    if (!s) return;
    const form = await changeForm(ctx, s);
    const policyId = uuidParam(ctx, 'policyId', 'policy');
    const versionId = uuidParam(ctx, 'versionId', 'policy version');
    const version = await deps.collections.policyVersions.findOne({ _id: versionId, policyId, organizationId: s.organization._id });
    if (!version) throw notFound('policy version');
    await setShadow(deps, versionId, form.get('shadow') === 'on');
    ctx.status = 303;
    ctx.redirect(`/dashboard/policies#policy-${policyId}`);
  });

  router.get('/connections', async (ctx) => {
    const s = await signedIn(ctx, 'admin');
    if (!s) return;
    send(ctx, 200, views.connectionsPage(viewerOf(s), await connectionRows(deps, s.organization._id), ctx.query.revoked ? 'The connection was revoked; its tokens stop working at their next use.' : undefined));
  });

  router.post('/connections/:connectionId/revoke', async (ctx) => {
    const s = await signedIn(ctx, 'admin');
    if (!s) return;
    await changeForm(ctx, s);
    const id = uuidParam(ctx, 'connectionId', 'connection');
    const mine = await connectionsCollection(deps.store.db).findOne({ _id: id, organizationId: s.organization._id });
    if (!mine) throw notFound('connection');
    await runCommand(deps.store, (session) => revokeConnectionIn(deps.store.db, session, id, 'OPERATOR', deps.now()));
    ctx.status = 303;
    ctx.redirect('/dashboard/connections?revoked=1');
  });

  router.get('/keys', async (ctx) => {
    const s = await signedIn(ctx, 'admin');
    if (!s) return;
    const keys = await deps.collections.apiKeys.find({ organizationId: s.organization._id, ...stillListed(deps.now()) }).sort({ createdAt: -1, _id: 1 }).toArray();
    const agents = new Map((await deps.collections.agents.find({ organizationId: s.organization._id }).toArray()).map((a) => [a._id, a.name]));
    const rows = keys.map((k) => ({ id: k._id, prefix: k.prefix, agentName: k.agentId ? (agents.get(k.agentId) ?? null) : null, lastUsedAt: k.lastUsedAt ?? null, revokedAt: k.revokedAt, expiresAt: k.expiresAt, createdAt: k.createdAt }));
    send(ctx, 200, views.keysPage(viewerOf(s), rows, ctx.query.revoked ? 'The key was revoked; it is refused from its next use.' : undefined));
  });

  router.post('/keys/:apiKeyId/revoke', async (ctx) => {
    const s = await signedIn(ctx, 'admin');
    if (!s) return;
    await changeForm(ctx, s);
    const key = await revokeApiKey(deps.collections, uuidParam(ctx, 'apiKeyId', 'API key'), deps.now(), s.organization._id);
    if (!key) throw notFound('API key');
    ctx.status = 303;
    ctx.redirect('/dashboard/keys?revoked=1');
  });

  // Any other address under /dashboard: a page, not the API's JSON error body.
  router.get('/{*rest}', () => {
    throw notFound('page');
  });

  return router;
}

async function connectionRows(deps: AppDeps, organizationId: string) {
  const list = await listedConnections(deps.store.db, organizationId, deps.now());
  const agents = new Map((await deps.collections.agents.find({ organizationId }).toArray()).map((a) => [a._id, a.name]));
  const people = new Map((await deps.collections.people.find({ organizationId }).toArray()).map((p) => [p._id, p]));
  // The scopes a connection can use now: no more than the person who granted it may grant today (resolve-token.ts).
  const usable = (c: ConnectionDoc) => grantableScopes(people.get(c.personId) ?? { roles: [] }, c.scopes);
  return list.map((connection) => ({ connection: { ...connection, scopes: usable(connection) }, agentName: agents.get(connection.agentId) ?? 'a removed agent' }));
}

/** An id in the query, lower-case as the service writes ids: UUIDs are case-insensitive, and paths and /v1 read them so. */
const idQuery = (ctx: Context, name: string): string | undefined => queryValue(ctx, name)?.toLowerCase();

async function policyRows(deps: AppDeps, s: SignedIn, ctx: Context): Promise<views.PolicyRow[]> {
  const org = s.organization;
  const policies = await deps.collections.policies.find({ organizationId: org._id }).sort({ name: 1, _id: 1 }).toArray();
  const versionIds = policies.flatMap((p) => [p.activeVersionId, p.draftVersionId]).filter((id): id is string => id !== null);
  const versions = new Map((await deps.collections.policyVersions.find({ _id: { $in: versionIds }, organizationId: org._id }).toArray()).map((v) => [v._id, v]));
  const asked = idQuery(ctx, 'policy');
  const rows: views.PolicyRow[] = [];
  for (const p of policies) {
    const active = p.activeVersionId ? (versions.get(p.activeVersionId) ?? null) : null;
    const draft = p.draftVersionId ? (versions.get(p.draftVersionId) ?? null) : null;
    const row: views.PolicyRow = {
      id: p._id,
      name: p.name,
      status: p.status,
      scopeType: p.scopeType,
      description: p.description,
      versions: [
        ...(active ? [{ label: 'Active' as const, ...active }] : []),
        ...(draft ? [{ label: 'Draft' as const, ...draft }] : []),
      ],
      replayable: [...(draft ? [{ id: draft._id, label: `Draft version ${draft.versionNumber}` }] : []), ...(active ? [{ id: active._id, label: `Active version ${active.versionNumber}` }] : [])],
    };
    if (draft) {
      const shadow = await deps.store.db.collection<ShadowDoc>(SHADOWS).findOne({ _id: draft._id });
      row.draft = { id: draft._id, shadow: shadow?.status === 'RUNNING', canShadow: hasRole(s.person, 'admin') };
    }
    if (idQuery(ctx, 'replay') === p._id) row.replay = await dashboardReplay(deps, s, row, ctx);
    if (draft && asked === p._id && isUuid(asked)) {
      const form = { merchant: queryValue(ctx, 'merchant') ?? '', amount: queryValue(ctx, 'amount') ?? '', currency: (queryValue(ctx, 'currency') ?? org.currency).trim().toUpperCase() };
      row.form = form;
      row.simulation = await compareDraft(deps, s, draft._id, active?._id ?? null, form);
    }
    rows.push(row);
  }
  return rows;
}

/** The dashboard shows a replay of at most this many changes; the API pages through all of them. */
const DASHBOARD_CHANGES = 100;

/** A replay from the policy page: whole days in the organisation's zone, in the request only. */
async function dashboardReplay(deps: AppDeps, s: SignedIn, row: views.PolicyRow, ctx: Context): Promise<views.PolicyRow['replay']> {
  const versionId = idQuery(ctx, 'version') ?? '';
  const fromText = queryValue(ctx, 'from') ?? '';
  const toText = queryValue(ctx, 'to') ?? '';
  const asked = { versionId, from: fromText, to: toText };
  const version = row.replayable.find((v) => v.id === versionId);
  const zone = s.organization.timezone;
  const from = DateTime.fromISO(fromText, { zone });
  const to = DateTime.fromISO(toText, { zone });
  if (!version) return { ...asked, result: { error: 'Choose a version of this policy to replay.' } };
  if (!/^\d{4}-\d{2}-\d{2}$/.test(fromText) || !/^\d{4}-\d{2}-\d{2}$/.test(toText) || !from.isValid || !to.isValid) return { ...asked, result: { error: 'Give the first and the last day to replay.' } };
  const start = new Date(periodOfDate(fromText, zone).periodStart);
  const end = new Date(periodOfDate(toText, zone).periodEnd);
  if (end <= start) return { ...asked, result: { error: 'The last day comes before the first.' } };
  // Days of the organisation's calendar: one of them is 23 or 25 hours long where the clocks change.
  if (to.startOf('day').diff(from.startOf('day'), 'days').days + 1 > 92) return { ...asked, result: { error: 'A replay covers at most 92 days.' } };
  if ((await countInRange(deps, s.organization._id, start, end)) > deps.config.replayInlineLimit) {
    return { ...asked, result: { error: `More than ${deps.config.replayInlineLimit} purchases in that range: replay it through the API (POST /v1/simulations/replay), which runs it as a job.` } };
  }
  const doc = await deps.collections.policyVersions.findOne({ _id: version.id, organizationId: s.organization._id });
  if (!doc) return { ...asked, result: { error: 'That version no longer exists.' } };
  const changes: ReplayedPurchase[] = [];
  const summary = await replayRange(deps, s.organization, { version: doc, from: start, to: end, agentId: null }, (r) => void (changes.length < DASHBOARD_CHANGES && changes.push(r)));
  return { ...asked, result: { summary, changes: changes.map(changeWire) } };
}

/** The existing version simulations, draft and active side by side, for one purchase. */
async function compareDraft(deps: AppDeps, s: SignedIn, draftId: string, activeId: string | null, form: { merchant: string; amount: string; currency: string }): Promise<views.PolicyRow['simulation']> {
  if (!isIsoCurrency(form.currency)) return { error: `${form.currency} is not an ISO 4217 currency code.` };
  const amount = parseMajor(form.amount, form.currency);
  if (amount === null) return { error: `Write the amount in ${form.currency} with a dot, for example 125.50.` };
  try {
    const input = parsePurchase(purchaseBody, { merchant: form.merchant, amountMinor: amount.toString(), reason: 'Dashboard comparison of a draft with its active version', currency: form.currency }, s.organization.currency).purchase;
    const view = (r: Awaited<ReturnType<typeof simulateVersion>>): views.SimulationView => ({ ...r.simulatedDecision, budgets: r.budgets });
    const draft = view(await simulateVersion(deps, s.organization, 'DRAFT_POLICY', draftId, input));
    const active = activeId ? view(await simulateVersion(deps, s.organization, 'POLICY_VERSION', activeId, input)) : null;
    return { draft, active };
  } catch (err) {
    if (err instanceof ApiError && err.status === 400) return { error: formProblems(err, form.currency) };
    throw err;
  }
}
