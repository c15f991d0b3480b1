// /v1/webhooks (docs/reference/contract.md §4.11-4.18): organization-scoped keys only (5.3). Thin: parse and check,
// then hand over to manage.ts. Bodies are JSON up to 16 KB (docs/reference/contract.md §8); validation issues about
// the whole body use the empty path (docs/reference/contract.md §7, "webhooks use an empty string").
import type Router from '@koa/router';
import { newRouter } from '../http/router.ts';
import type { Context } from 'koa';
import type { AppDeps } from '../app-deps.ts';
import { requireOrganizationKey } from '../identity/auth.ts';
import { LIMITS, jsonBody } from '../http/body.ts';
import { invalidRequest, type ErrorIssue } from '../http/errors.ts';
import { limitParam, queryValue, uuidParam, queryParams } from '../http/params.ts';
import { compile, type Validator } from '../http/validate.ts';
import type { TSchema, Static } from 'typebox';
import { CreateWebhookBody, RotateSecretBody, TestWebhookBody, UpdateWebhookBody } from '../../schemas/webhooks.ts';
import {
  DELIVERIES_LIMIT,
  createEndpoint,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  queueTestEvent,
  revokeEndpoint,
  rotateSecret,
  updateEndpoint,
} from './manage.ts';
import { warnIfUnsafe } from './runtime.ts';

const createBody = compile(CreateWebhookBody);
const updateBody = compile(UpdateWebhookBody);
const rotateBody = compile(RotateSecretBody);
// The body of the operations that take none (an empty object is tolerated): test and DELETE.
const noFields = compile(TestWebhookBody);

function parseBody<T extends TSchema>(validator: Validator<T>, value: unknown): Static<T> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidRequest([{ path: '', code: 'INVALID_TYPE', message: 'The body must be a JSON object.' }]);
  }
  return validator.parse(value);
}

function deliveriesLimit(ctx: Context): number {
  const issues: ErrorIssue[] = [];
  const limit = limitParam(queryValue(ctx, 'limit'), DELIVERIES_LIMIT, issues);
  if (issues.length > 0) throw invalidRequest(issues);
  return limit;
}

const orgOf = (ctx: Context): string => ctx.state.organization._id;
const webhookId = (ctx: Context): string => uuidParam(ctx, 'webhookId', 'webhook endpoint');

export function webhookRoutes(deps: AppDeps): Router {
  warnIfUnsafe(deps);
  const router = newRouter();
  const body = jsonBody(LIMITS.webhooks, { wholeBody: '' });
  const optionalBody = jsonBody(LIMITS.webhooks, { optional: true, wholeBody: '' });

  router.get('/v1/webhooks', requireOrganizationKey, queryParams(), async (ctx) => {
    ctx.body = await listEndpoints(deps, orgOf(ctx));
  });

  router.post('/v1/webhooks', requireOrganizationKey, body, queryParams(), async (ctx) => {
    const parsed = parseBody(createBody, ctx.state.body);
    ctx.status = 201;
    ctx.body = await createEndpoint(deps, orgOf(ctx), parsed);
  });

  router.get('/v1/webhooks/:webhookId', requireOrganizationKey, queryParams(), async (ctx) => {
    ctx.body = await getEndpoint(deps, orgOf(ctx), webhookId(ctx));
  });

  router.patch('/v1/webhooks/:webhookId', requireOrganizationKey, body, queryParams(), async (ctx) => {
    const id = webhookId(ctx);
    // Before the schema's own minProperties, so that an empty body says what to send.
    const given = ctx.state.body as unknown;
    if (given !== null && typeof given === 'object' && !Array.isArray(given) && Object.keys(given).length === 0) {
      throw invalidRequest([{ path: '', code: 'NO_FIELDS', message: 'Send at least one of url, description, subscribedTypes, status, apiVersion.' }]);
    }
    const parsed = parseBody(updateBody, given);
    ctx.body = await updateEndpoint(deps, orgOf(ctx), id, parsed);
  });

  router.delete('/v1/webhooks/:webhookId', requireOrganizationKey, optionalBody, queryParams(), async (ctx) => {
    const id = webhookId(ctx);
    // Takes no fields: one sent ({"force": true}) is refused, not ignored (docs/reference/contract.md §1).
    if (ctx.state.body !== undefined) parseBody(noFields, ctx.state.body);
    ctx.body = await revokeEndpoint(deps, orgOf(ctx), id);
  });

  router.get('/v1/webhooks/:webhookId/deliveries', requireOrganizationKey, queryParams('limit'), async (ctx) => {
    const id = webhookId(ctx);
    ctx.body = await listDeliveries(deps, orgOf(ctx), id, deliveriesLimit(ctx));
  });

  router.post('/v1/webhooks/:webhookId/rotate-secret', requireOrganizationKey, optionalBody, queryParams(), async (ctx) => {
    const id = webhookId(ctx);
    const parsed = ctx.state.body === undefined ? {} : parseBody(rotateBody, ctx.state.body);
    ctx.body = await rotateSecret(deps, orgOf(ctx), id, parsed.retireImmediately === true);
  });

  router.post('/v1/webhooks/:webhookId/test', requireOrganizationKey, optionalBody, queryParams(), async (ctx) => {
    const id = webhookId(ctx);
    if (ctx.state.body !== undefined) parseBody(noFields, ctx.state.body);
    ctx.status = 202;
    ctx.body = await queueTestEvent(deps, orgOf(ctx), id);
  });

  return router;
}
