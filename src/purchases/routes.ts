// POST /v1/purchase-requests and GET /v1/purchase-requests/{id} (docs/reference/contract.md §4.1, §4.2), and a
// purchase's decision receipts (docs/integrate/receipts.md). Thin: parse, check the credential, hand over
// to the command or the query.
import type Router from '@koa/router';
import { newRouter } from '../http/router.ts';
import type { Context } from 'koa';
import { requireAgentIdentity, principalOf } from '../identity/auth.ts';
import { LIMITS, jsonBody } from '../http/body.ts';
import { invalidRequest } from '../http/errors.ts';
import { uuidParam, queryParams } from '../http/params.ts';
import { compile } from '../http/validate.ts';
import { IDEMPOTENCY_KEY, PurchaseRequestBody } from '../../schemas/purchases.ts';
import { parsePurchase } from './input.ts';
import { submitPurchase, type SubmitDeps } from './submit.ts';
import { getPurchase } from './read.ts';
import { serverTiming } from '../metrics/timing.ts';
import { receiptsOfPurchase } from '../receipts/read.ts';
import { setReceiptHeader } from '../receipts/header.ts';

const body = compile(PurchaseRequestBody);

function idempotencyKey(ctx: Context): string | null {
  const raw = ctx.get('idempotency-key');
  if (raw === '' && ctx.headers['idempotency-key'] === undefined) return null;
  // Two header lines reach us joined ("a, b"), a key neither named: a retry sending one of them would
  // be another purchase. Refused, as a query parameter given twice is (docs/reference/decisions.md).
  if ((ctx.req.headersDistinct['idempotency-key']?.length ?? 0) > 1) {
    throw invalidRequest([{ path: 'Idempotency-Key', code: 'INVALID_IDEMPOTENCY_KEY', message: 'Idempotency-Key is sent more than once; send it once.' }]);
  }
  if (!IDEMPOTENCY_KEY.test(raw)) {
    throw invalidRequest([{ path: 'Idempotency-Key', code: 'INVALID_IDEMPOTENCY_KEY', message: 'Idempotency-Key is 1 to 255 printable ASCII characters.' }]);
  }
  return raw;
}

export function purchaseRoutes(deps: SubmitDeps): Router {
  const router = newRouter();
  router.post('/v1/purchase-requests', requireAgentIdentity('purchase:request'), jsonBody(LIMITS.standard), queryParams(), serverTiming, async (ctx) => {
    const key = idempotencyKey(ctx);
    const organization = ctx.state.organization;
    const parsed = parsePurchase(body, ctx.state.body, organization.currency);
    const result = await submitPurchase(deps, {
      organization,
      principal: principalOf(ctx),
      purchase: parsed.purchase,
      body: parsed.body as Record<string, unknown>,
      rawBody: ctx.state.rawBody,
      idempotencyKey: key,
      origin: 'API',
    });
    ctx.status = result.status;
    setReceiptHeader(ctx, result.receipt);
    if (result.json !== undefined) {
      ctx.type = 'application/json';
      ctx.body = result.json;
    } else ctx.body = result.body;
  });
  router.get('/v1/purchase-requests/:purchaseRequestId', requireAgentIdentity('purchase:read'), queryParams(), async (ctx) => {
    ctx.body = await getPurchase(deps.store.db, principalOf(ctx), uuidParam(ctx, 'purchaseRequestId', 'purchase request'));
  });
  router.get('/v1/purchase-requests/:purchaseRequestId/receipts', requireAgentIdentity('purchase:read'), queryParams(), async (ctx) => {
    const principal = principalOf(ctx);
    // Whoever may read the purchase may read its receipts; for anyone else it is the same 404.
    const { purchase } = await getPurchase(deps.store.db, principal, uuidParam(ctx, 'purchaseRequestId', 'purchase request'));
    ctx.body = await receiptsOfPurchase(deps.store.db, principal.organizationId, purchase.id);
  });
  return router;
}
