// Dynamic Client Registration's HTTP surface (src/identity/oauth/registration.ts has the rules):
//   POST /oauth/register        RFC 7591 3: JSON client metadata in, 201 with the registered metadata
//   GET  /oauth/clients/{id}    the registered metadata as a client ID metadata document
// Errors use RFC 7591 3.2.2's body `{error, error_description}`, like the other OAuth endpoints.
import type Router from '@koa/router';
import { newRouter } from '../../http/router.ts';
import type { Context } from 'koa';
import type { AppDeps } from '../../app-deps.ts';
import { notFound } from '../../http/errors.ts';
import { corsPreflight, openCors } from './cors.ts';
import { readBody } from './form.ts';
import { countAttempt, findLiveClient, registerClient, registeredMetadata, REGISTRATION_MAX_BYTES, validateRegistration } from './registration.ts';

export function registrationRoutes(deps: AppDeps): Router {
  const router = newRouter();
  corsPreflight(router, ['/oauth/register', '/oauth/clients/:id']);

  router.post('/oauth/register', async (ctx) => {
    openCors(ctx);
    ctx.set('Cache-Control', 'no-store');
    const fail = (status: number, error: string, description: string) => {
      ctx.status = status;
      ctx.body = { error, error_description: description };
    };
    const allowed = await countAttempt(deps.store.db, 'register', ctx.ip, deps.now());
    if (!allowed.ok) {
      ctx.set('Retry-After', String(allowed.retryAfterSeconds));
      return fail(429, 'too_many_requests', `too many registrations from this address; try again in ${allowed.retryAfterSeconds} seconds`);
    }
    if (!ctx.is('application/json')) return fail(415, 'invalid_client_metadata', 'send the client metadata as Content-Type: application/json');
    const body = await readBody(ctx, REGISTRATION_MAX_BYTES);
    if (!body.ok) return fail(413, 'invalid_client_metadata', body.detail);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.text);
    } catch {
      return fail(400, 'invalid_client_metadata', 'the body is not valid JSON');
    }
    const checked = validateRegistration(parsed);
    if (!checked.ok) return fail(400, checked.error, checked.description);
    const client = await registerClient(deps.store.db, checked.input, deps.now());
    deps.log.info('oauth client registered', { clientId: client._id, redirectUris: client.redirectUris.length });
    ctx.status = 201;
    ctx.body = registeredMetadata(deps.config, client);
  });

  router.get('/oauth/clients/:id', async (ctx: Context) => {
    openCors(ctx);
    const client = await findLiveClient(deps.store.db, ctx.params.id, deps.now());
    if (!client) throw notFound('client');
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = registeredMetadata(deps.config, client);
  });

  return router;
}
