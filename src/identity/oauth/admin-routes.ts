// Operator API for connections (docs/internals/design.md §5), mounted beside src/admin/routes.ts:
//   PUT    /admin/people/{personId}/password   body {password}: sets a person's sign-in password, ending
//                                               their sessions and connections (people/set-password.ts)
//   DELETE /admin/people/{personId}/password   takes it away (a person who left): the same endings, and
//                                               no sign-in until a password is set again
//   GET    /admin/connections?organizationId=  lists an organisation's connections, newest first (revoked ones
//                                               for 30 days after their revocation)
//   DELETE /admin/connections/{connectionId}   revokes one (connection.revoked), idempotent
//   GET    /admin/oauth-clients                 clients registered through RFC 7591, newest first
//   DELETE /admin/oauth-clients/{id}            revokes a registration and every connection made with it
import type Router from '@koa/router';
import { newRouter } from '../../http/router.ts';
import Type from 'typebox';
import type { AppDeps } from '../../app-deps.ts';
import { requireAdmin } from '../operator-token.ts';
import { LIMITS, jsonBody } from '../../http/body.ts';
import { invalidRequest, notFound } from '../../http/errors.ts';
import { queryValue, uuidParam } from '../../http/params.ts';
import { compile } from '../../http/validate.ts';
import { isUuid } from '../../ids.ts';
import { iso } from '../../timestamps.ts';
import { runCommand } from '../../commands/run-command.ts';
import { listedConnections, presentConnection, type ConnectionDoc } from '../connections/documents.ts';
import { revokeConnectionIn } from '../connections/revoke.ts';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../people/password.ts';
import { setPassword } from '../people/set-password.ts';
import type { PersonDoc } from '../../store/collections.ts';
import { oauthCollections, type RegisteredClientDoc } from './documents.ts';
import { registeredClientId, revokeRegisteredClient } from './registration.ts';

/** Enough for any operator's screen; unused registrations expire after a day anyway. */
const CLIENT_LIST_LIMIT = 500;

const PasswordBody = compile(
  Type.Object({ password: Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH }) }, { additionalProperties: false }),
);

export function connectionAdminRoutes(deps: AppDeps): Router {
  const router = newRouter({ prefix: '/admin' });
  router.use(requireAdmin(deps.config.adminTokenSha256));
  const c = deps.collections;

  async function present(list: ConnectionDoc[]) {
    const agentIds = [...new Set(list.map((x) => x.agentId))];
    const personIds = [...new Set(list.map((x) => x.personId))];
    const agents = new Map((await c.agents.find({ _id: { $in: agentIds } }).toArray()).map((a) => [a._id, { id: a._id, name: a.name }]));
    const people = new Map((await c.people.find({ _id: { $in: personIds } }).toArray()).map((p) => [p._id, { id: p._id, name: p.name }]));
    return list.map((x) => presentConnection(x, agents.get(x.agentId) ?? null, people.get(x.personId) ?? null));
  }

  const presentPerson = (p: PersonDoc) => ({ person: { id: p._id, organizationId: p.organizationId, name: p.name, email: p.email, passwordSet: p.passwordHash !== null } });

  router.put('/people/:personId/password', jsonBody(LIMITS.standard), async (ctx) => {
    const id = uuidParam(ctx, 'personId', 'person');
    const { password } = PasswordBody.parse(ctx.state.body);
    // Length is counted in characters (TypeBox); refuse passwords that are only whitespace.
    if (password.trim().length < MIN_PASSWORD_LENGTH) {
      throw invalidRequest([{ path: 'password', code: 'TOO_SHORT', message: `The password needs at least ${MIN_PASSWORD_LENGTH} characters that are not spaces.` }]);
    }
    const person = await setPassword(deps, id, await hashPassword(password, deps.config.passwordScryptN));
    if (!person) throw notFound('person');
    ctx.body = presentPerson(person);
  });

  router.delete('/people/:personId/password', async (ctx) => {
    const person = await setPassword(deps, uuidParam(ctx, 'personId', 'person'), null);
    if (!person) throw notFound('person');
    ctx.body = presentPerson(person);
  });

  router.get('/connections', async (ctx) => {
    const organizationId = queryValue(ctx, 'organizationId');
    if (!isUuid(organizationId)) {
      throw invalidRequest([{ path: 'organizationId', code: 'REQUIRED', message: 'organizationId (a UUID) is required.' }]);
    }
    const list = await listedConnections(deps.store.db, organizationId.toLowerCase(), deps.now());
    ctx.body = { connections: await present(list) };
  });

  router.delete('/connections/:connectionId', async (ctx) => {
    const id = uuidParam(ctx, 'connectionId', 'connection');
    const { connection } = await runCommand(deps.store, (session) => revokeConnectionIn(deps.store.db, session, id, 'OPERATOR', deps.now()));
    if (!connection) throw notFound('connection');
    ctx.body = { connection: (await present([connection]))[0] };
  });

  const presentClient = (x: RegisteredClientDoc) => ({
    id: x._id,
    clientId: registeredClientId(deps.config, x._id),
    clientName: x.clientName,
    redirectUris: x.redirectUris,
    scope: x.scope,
    createdAt: x.createdAt.toISOString(),
    expiresAt: iso(x.expiresAt),
    lastConnectedAt: iso(x.lastConnectedAt),
    revokedAt: iso(x.revokedAt),
  });

  router.get('/oauth-clients', async (ctx) => {
    const list = await oauthCollections(deps.store.db).clients.find({}).sort({ createdAt: -1, _id: -1 }).limit(CLIENT_LIST_LIMIT).toArray();
    ctx.body = { clients: list.map(presentClient) };
  });

  router.delete('/oauth-clients/:clientId', async (ctx) => {
    const id = uuidParam(ctx, 'clientId', 'client');
    const { client, connectionsRevoked } = await revokeRegisteredClient(deps.store, deps.config, id, deps.now());
    if (!client) throw notFound('client');
    ctx.body = { client: presentClient(client), connectionsRevoked };
  });

  return router;
}
