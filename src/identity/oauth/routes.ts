// The authorization server's HTTP surface (docs/reference/contract.md §5.2):
//   GET  /.well-known/oauth-authorization-server   RFC 8414 metadata
//   GET  /oauth/authorize                           checks the request, shows the sign-in page
//   POST /oauth/sign-in                             email + password of a person from a manifest
//   GET  /oauth/consent                             application, redirect host, scopes, agent choice
//   POST /oauth/consent                             approve (connection + code) or deny (access_denied)
//   POST /oauth/token                               authorization_code and refresh_token grants
//   POST /oauth/revoke                              RFC 7009
// (POST /oauth/register and the registered clients' documents: registration-routes.ts.)
// Protocol errors use RFC 6749's bodies, not docs/reference/contract.md §7's (docs/reference/contract.md §5.2: 'not shown').
import type Router from '@koa/router';
import { newRouter } from '../../http/router.ts';
import type { Context } from 'koa';
import type { AppDeps } from '../../app-deps.ts';
import { connectableAgents, approveAuthorization, authorizationResponseUrl, checkAuthorizationRequest, errorDescription } from './authorize.ts';
import { bindBrowser, randomToken, requestBelongsHere, REQUEST_TTL_MS } from './browser.ts';
import { credentialDigest } from './credentials.ts';
import { oauthCollections, type AuthorizationRequestDoc } from './documents.ts';
import { queryParams, readForm } from './form.ts';
import { isWebRedirect, onlyLocalRedirects } from './redirect-uri.ts';
import { authorizationEndpointOf, issuerOf, mcpResourceOf, registrationEndpointOf, revocationEndpointOf, tokenEndpointOf } from './issuer.ts';
import { consentPage, errorPage, sendPage, signInPage } from './pages.ts';
import { SCOPES, grantableScopes } from './scopes.ts';
import { revocationRequest, tokenRequest } from './token.ts';
import { corsPreflight, openCors } from './cors.ts';
import { clientResolver, countAttempt } from './registration.ts';
import { runCommand } from '../../commands/run-command.ts';
import { signIn } from '../people/sign-in.ts';

const MAX_FAILED_SIGN_INS = 5;

export function authorizationServerMetadata(deps: Pick<AppDeps, 'config'>) {
  const c = deps.config;
  return {
    issuer: issuerOf(c),
    authorization_endpoint: authorizationEndpointOf(c),
    token_endpoint: tokenEndpointOf(c),
    revocation_endpoint: revocationEndpointOf(c),
    registration_endpoint: registrationEndpointOf(c),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...SCOPES],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  };
}

function tokenHeaders(ctx: Context): void {
  openCors(ctx);
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
}

export function oauthRoutes(deps: AppDeps): Router {
  const router = newRouter();
  const o = oauthCollections(deps.store.db);
  const page = (ctx: Context, status: number, view: { title: string; body: string }) => sendPage(ctx, status, view.title, view.body);
  const expired = (ctx: Context) =>
    page(ctx, 400, errorPage('This connection request has expired', 'It was started too long ago, in another browser, or it was already answered.'));

  /** Loads the authorization request a form or URL names, if this browser may continue it. */
  async function continuing(ctx: Context, requestId: string | undefined, csrf: string | null): Promise<AuthorizationRequestDoc | null> {
    if (!requestId || requestId.length > 64) return null;
    const found = await o.requests.findOne({ _id: requestId });
    if (!found || !requestBelongsHere(ctx, deps.config, found, csrf, deps.now())) return null;
    return found;
  }

  router.get('/.well-known/oauth-authorization-server', (ctx) => {
    openCors(ctx);
    ctx.body = authorizationServerMetadata(deps);
  });
  corsPreflight(router, ['/.well-known/oauth-authorization-server', '/oauth/token', '/oauth/revoke']);
  const resolveClient = clientResolver(deps.store.db, deps.config, deps.now);

  router.get('/oauth/authorize', async (ctx) => {
    const allowed = await countAttempt(deps.store.db, 'authorize', ctx.ip, deps.now());
    if (!allowed.ok) {
      ctx.set('Retry-After', String(allowed.retryAfterSeconds));
      return page(ctx, 429, errorPage('Too many connection requests', `Too many connection requests came from this address. Try again in ${Math.ceil(allowed.retryAfterSeconds / 60)} minutes.`));
    }
    const check = await checkAuthorizationRequest(queryParams(ctx), mcpResourceOf(deps.config), { allowLocal: deps.config.webhookUnsafeAllowLocal }, resolveClient);
    if (check.kind === 'page') return page(ctx, 400, errorPage(check.heading, check.message));
    if (check.kind === 'redirect') {
      const back = authorizationResponseUrl(check.redirectUri, { error: check.error, error_description: errorDescription(check.description), state: check.state }, issuerOf(deps.config));
      if (isWebRedirect(check.redirectUri)) {
        return page(ctx, 400, errorPage('This connection request is not valid', `The application sent a request this service cannot accept: ${check.description}.`, { href: back, host: redirectHostOf(check.redirectUri) }));
      }
      ctx.set('Cache-Control', 'no-store');
      ctx.status = 303;
      ctx.redirect(back);
      return;
    }
    const r = check.request;
    const now = deps.now();
    const browser = bindBrowser(ctx, deps.config);
    const doc: AuthorizationRequestDoc = {
      _id: randomToken(),
      browserDigest: credentialDigest(browser),
      csrfToken: randomToken(),
      clientId: r.client.clientId,
      clientName: r.client.clientName,
      clientHost: r.client.clientHost,
      registeredClientId: r.client.registeredId,
      localRedirectsOnly: r.client.registeredId === null && onlyLocalRedirects(r.client.redirectUris),
      redirectUri: r.redirectUri,
      state: r.state,
      codeChallenge: r.codeChallenge,
      resource: r.resource,
      scopes: r.scopes,
      personId: null,
      failedSignIns: 0,
      createdAt: now,
      expiresAt: new Date(now.getTime() + REQUEST_TTL_MS),
    };
    await o.requests.insertOne(doc);
    page(ctx, 200, signInPage({ requestId: doc._id, csrf: doc.csrfToken, clientName: doc.clientName, clientHost: doc.clientHost, registered: doc.registeredClientId !== null }));
  });

  router.post('/oauth/sign-in', async (ctx) => {
    const form = await readForm(ctx);
    if (!form.ok) return page(ctx, 400, errorPage('This form could not be read', form.detail));
    const request = await continuing(ctx, form.get('request'), form.get('csrf') ?? '');
    if (!request) return expired(ctx);
    const email = (form.get('email') ?? '').trim();
    const password = form.get('password') ?? '';
    const again = (status: number, message: string) =>
      page(ctx, status, signInPage({ requestId: request._id, csrf: request.csrfToken, clientName: request.clientName, clientHost: request.clientHost, registered: request.registeredClientId !== null, email, error: message }));

    // The dashboard's throttle (per email and per address) applies here too: one count for both pages.
    const result = await signIn(deps, email, password, ctx.ip);
    if (!result.ok && result.reason === 'throttled') {
      const minutes = Math.max(1, Math.ceil((result.until.getTime() - deps.now().getTime()) / 60000));
      return again(429, `Too many failed sign-ins. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`);
    }
    if (!result.ok) {
      // And this request's own limit: its fifth wrong password ends it.
      const counted = await o.requests.findOneAndUpdate({ _id: request._id }, { $inc: { failedSignIns: 1 } }, { returnDocument: 'after' });
      if (!counted || counted.failedSignIns >= MAX_FAILED_SIGN_INS) {
        await o.requests.deleteOne({ _id: request._id });
        return page(ctx, 401, errorPage('Too many attempts', 'Sign-in failed too many times. Return to the application and start connecting again.'));
      }
      return again(401, 'That email and password do not match. Check them and try again.');
    }
    const person = result.person;
    const org = await deps.collections.organizations.findOne({ _id: person.organizationId });
    if (!org || org.status !== 'ACTIVE') return page(ctx, 403, errorPage('Your organisation is suspended', 'No application can be connected while your organisation is suspended.'));
    await o.requests.updateOne({ _id: request._id }, { $set: { personId: person._id } });
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 303;
    ctx.redirect(`/oauth/consent?request=${encodeURIComponent(request._id)}`);
  });

  async function consentView(request: AuthorizationRequestDoc, error?: string) {
    const person = request.personId ? await deps.collections.people.findOne({ _id: request.personId }) : null;
    if (!person) return null;
    const org = await deps.collections.organizations.findOne({ _id: person.organizationId });
    if (!org || org.status !== 'ACTIVE') return null;
    const agents = await connectableAgents(deps.collections, org._id);
    const scopes = grantableScopes(person, request.scopes);
    const view = consentPage({
      requestId: request._id,
      csrf: request.csrfToken,
      personName: person.name,
      organizationName: org.name,
      clientName: request.clientName,
      clientId: request.clientId,
      clientHost: request.clientHost,
      registered: request.registeredClientId !== null,
      localRedirectsOnly: request.localRedirectsOnly === true,
      redirectHost: redirectHostOf(request.redirectUri),
      scopes,
      withheld: request.scopes.filter((s) => !scopes.includes(s)),
      agents: agents.map((a) => ({ id: a._id, name: a.name, description: a.description })),
      error,
    });
    return { person, org, agents, scopes, view };
  }

  router.get('/oauth/consent', async (ctx) => {
    const request = await continuing(ctx, queryParams(ctx).ok ? ctx.query.request?.toString() : undefined, null);
    if (!request || !request.personId) return expired(ctx);
    const shown = await consentView(request);
    if (!shown) return expired(ctx);
    page(ctx, 200, shown.view);
  });

  router.post('/oauth/consent', async (ctx) => {
    const form = await readForm(ctx);
    if (!form.ok) return page(ctx, 400, errorPage('This form could not be read', form.detail));
    const request = await continuing(ctx, form.get('request'), form.get('csrf') ?? '');
    if (!request) return expired(ctx);
    const issuer = issuerOf(deps.config);
    const decision = form.get('decision');
    // Denying needs no sign-in (the sign-in page's Cancel), only this browser and its CSRF token.
    if (decision === 'deny') {
      await o.requests.deleteOne({ _id: request._id });
      const back = authorizationResponseUrl(request.redirectUri, { error: 'access_denied', error_description: 'the person denied the request', state: request.state }, issuer);
      // The sign-in page does not show where its Cancel leads (the consent page does): an https
      // redirect URI, anyone's, is a link to follow (RFC 9700 4.11.2), as in GET /oauth/authorize.
      if (!request.personId && isWebRedirect(request.redirectUri)) {
        return page(ctx, 200, errorPage('You cancelled', 'Nothing was shared with the application.', { href: back, host: redirectHostOf(request.redirectUri) }));
      }
      ctx.set('Cache-Control', 'no-store');
      ctx.status = 303;
      ctx.redirect(back);
      return;
    }
    if (!request.personId) return expired(ctx);
    const shown = await consentView(request);
    if (!shown) return expired(ctx);
    if (decision !== 'approve') return page(ctx, 400, (await consentView(request, 'Choose Allow or Deny.'))!.view);
    const agent = shown.agents.find((a) => a._id === form.get('agent'));
    if (!agent) return page(ctx, 400, (await consentView(request, 'Choose which agent the application may act as.'))!.view);
    if (shown.scopes.length === 0) return page(ctx, 403, (await consentView(request, 'Nothing this application asks for is yours to grant.'))!.view);
    const now = deps.now();
    const approved = await runCommand(deps.store, (session) =>
      approveAuthorization(deps.store.db, session, { request, person: shown.person, agent, scopes: shown.scopes, now }),
    );
    if (!approved) return expired(ctx);
    deps.log.info('connection created', { connectionId: approved.connection._id, organizationId: approved.connection.organizationId, agentId: agent._id, clientId: request.clientId });
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 303;
    ctx.redirect(authorizationResponseUrl(request.redirectUri, { code: approved.code, state: request.state }, issuer));
  });

  router.post('/oauth/token', async (ctx) => {
    tokenHeaders(ctx);
    const outcome = await tokenRequest(deps, await readForm(ctx));
    if (outcome.ok) {
      ctx.body = outcome.body;
      return;
    }
    ctx.status = outcome.status;
    ctx.body = { error: outcome.error, error_description: errorDescription(outcome.description) };
  });

  router.post('/oauth/revoke', async (ctx) => {
    tokenHeaders(ctx);
    const outcome = await revocationRequest(deps, await readForm(ctx));
    if (outcome.ok) {
      ctx.status = 200;
      ctx.body = '';
      return;
    }
    ctx.status = outcome.status;
    ctx.body = { error: outcome.error, error_description: errorDescription(outcome.description) };
  });

  return router;
}

function redirectHostOf(uri: string): string {
  const url = new URL(uri);
  return url.host || `${url.protocol}${url.pathname}`;
}
