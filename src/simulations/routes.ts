// POST /v1/simulations/current-policies, /draft-policy, /policy-version (docs/reference/contract.md §4.3-4.5).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { newRouter } from '../http/router.ts';
import type { AppDeps } from '../app-deps.ts';
import { principalOf, requireOrganizationKey, requireSimulationAccess } from '../identity/auth.ts';
import { queryParams } from '../http/params.ts';
import { LIMITS, jsonBody } from '../http/body.ts';
import type { ErrorIssue } from '../http/errors.ts';
import { compile } from '../http/validate.ts';
import { CurrentPoliciesSimulationBody, VersionSimulationBody } from '../../schemas/purchases.ts';
import { parsePurchase } from '../purchases/input.ts';
import { simulateCurrentPolicies, simulateVersion } from './simulate.ts';
import { serverTiming } from '../metrics/timing.ts';
import { queryValue, uuidParam } from '../http/params.ts';
import { notFound } from '../http/errors.ts';
import { ReplayBody } from '../../schemas/simulations.ts';
import { presentShadow, SHADOWS, type ShadowDoc } from '../policies/shadows.ts';
import { emptySummary, type ReplayedPurchase } from './replay.ts';
import {
  countInRange,
  pageOf,
  pageQuery,
  presentReplay,
  queueReplay,
  rangeOf,
  replayChanges,
  replayRange,
  replays,
  replaySimulation,
  storedPage,
  versionOf,
} from './replay-run.ts';
import { shadowChangesPage, shadowLag } from './shadow.ts';

const replayBody = compile(ReplayBody);
const PAGE_PARAMS = ['limit', 'cursor'];
const pageOfQuery = (ctx: Context) => pageQuery({ limit: queryValue(ctx, 'limit'), cursor: queryValue(ctx, 'cursor') });
const SHADOW_DISCLAIMER = 'A shadow: live purchases decided again with this draft in place, after their real decision and beside it; nothing it decided was recorded as a decision or held budget.';

const currentBody = compile(CurrentPoliciesSimulationBody);
const versionBody = compile(VersionSimulationBody);

export function simulationRoutes(deps: AppDeps): Router {
  const router = newRouter({ prefix: '/v1/simulations' });

  router.post('/current-policies', requireSimulationAccess, jsonBody(LIMITS.standard), queryParams(), serverTiming, async (ctx) => {
    const principal = principalOf(ctx);
    const org = ctx.state.organization;
    // The agentId rule of docs/reference/contract.md §4.3 (issue codes: docs/reference/decisions.md), listed with every other problem.
    const agentRule = (body: Record<string, unknown>): ErrorIssue[] => {
      const given = body.agentId !== undefined && body.agentId !== null;
      if (principal.agentId === null && !given) return [{ path: 'agentId', code: 'AGENT_ID_REQUIRED', message: 'An organization-scoped key names the agent to simulate as.' }];
      if (principal.agentId !== null && given) return [{ path: 'agentId', code: 'AGENT_ID_NOT_PERMITTED', message: 'This credential simulates as its own agent; omit agentId.' }];
      return [];
    };
    const { body, purchase } = parsePurchase(currentBody, ctx.state.body, org.currency, agentRule);
    const agentId = principal.agentId ?? body.agentId!.toLowerCase();
    ctx.body = await simulateCurrentPolicies(deps, org, agentId, purchase);
  });

  for (const [path, mode] of [['/draft-policy', 'DRAFT_POLICY'], ['/policy-version', 'POLICY_VERSION']] as const) {
    router.post(path, requireOrganizationKey, jsonBody(LIMITS.standard), queryParams(), serverTiming, async (ctx) => {
      const org = ctx.state.organization;
      const { body, purchase } = parsePurchase(versionBody, ctx.state.body, org.currency);
      ctx.body = await simulateVersion(deps, org, mode, body.policyVersionId.toLowerCase(), purchase);
    });
  }
  // Replay (docs/integrate/simulations.md#replay): in the request up to REPLAY_INLINE_LIMIT purchases, else a job.
  router.post('/replay', requireOrganizationKey, jsonBody(LIMITS.standard), queryParams(...PAGE_PARAMS), async (ctx) => {
    const org = ctx.state.organization;
    const body = replayBody.parse(ctx.state.body);
    const { from, to } = rangeOf(body);
    const page = pageOfQuery(ctx);
    const version = await versionOf(deps, org._id, body.policyVersionId.toLowerCase());
    const agentId = body.agentId ? body.agentId.toLowerCase() : null;
    if (agentId !== null && !(await deps.collections.agents.findOne({ _id: agentId, organizationId: org._id }))) throw notFound('agent');
    const req = { version, from, to, agentId };
    const total = await countInRange(deps, org._id, from, to);
    const doc = { _id: null, policyId: version.policyId, policyVersionId: version._id, versionNumber: version.versionNumber, from, to, agentId, error: null };
    if (total > deps.config.replayInlineLimit) {
      const queued = await queueReplay(deps, org, req, total);
      ctx.status = 202;
      ctx.set('Location', `/v1/simulations/replay/${queued._id}`);
      ctx.body = { simulation: replaySimulation('REPLAY', deps.now()), replay: presentReplay(queued), summary: null, changes: [], nextCursor: null, hasMore: false };
      return;
    }
    const changes: ReplayedPurchase[] = [];
    // What was replayed, not what was counted before: purchases submitted meanwhile into the range are replayed too.
    let evaluated = 0;
    const summary = await replayRange(deps, org, req, (r) => void changes.push(r), async (seen) => void (evaluated = seen));
    ctx.body = {
      simulation: replaySimulation('REPLAY', deps.now()),
      replay: presentReplay({ ...doc, status: 'SUCCEEDED', progress: { evaluated, total: evaluated } }),
      summary,
      ...pageOf(changes, page),
    };
  });

  router.get('/replay/:replayId', requireOrganizationKey, queryParams(...PAGE_PARAMS), async (ctx) => {
    const org = ctx.state.organization;
    const id = uuidParam(ctx, 'replayId', 'replay');
    const page = pageOfQuery(ctx);
    const doc = await replays(deps.store.db).findOne({ _id: id, organizationId: org._id });
    if (!doc) throw notFound('replay');
    const changes =
      doc.status === 'SUCCEEDED'
        ? await storedPage(
            (f, limit) => replayChanges(deps.store.db).find(f).sort({ requestedAt: 1, purchaseId: 1 }).limit(limit).toArray(),
            { replayId: id },
            page,
            (row) => row.change,
          )
        : { changes: [], nextCursor: null, hasMore: false };
    ctx.body = { simulation: replaySimulation('REPLAY', deps.now()), replay: presentReplay(doc), summary: doc.summary, ...changes };
  });
  return router;
}

/** GET /v1/policies/{policyId}/versions/{versionId}/shadow (docs/integrate/simulations.md#shadow). */
export function shadowRoutes(deps: AppDeps): Router {
  const router = newRouter();
  router.get('/v1/policies/:policyId/versions/:versionId/shadow', requireOrganizationKey, queryParams(...PAGE_PARAMS), async (ctx) => {
    const org = ctx.state.organization;
    const policyId = uuidParam(ctx, 'policyId', 'policy');
    const versionId = uuidParam(ctx, 'versionId', 'policy version');
    const page = pageOfQuery(ctx);
    const version = await deps.collections.policyVersions.findOne({ _id: versionId, policyId, organizationId: org._id });
    if (!version) throw notFound('policy version');
    const shadow = await deps.store.db.collection<ShadowDoc>(SHADOWS).findOne({ _id: versionId });
    const s = shadow?.summary;
    const summary = s ? { evaluated: s.evaluated, unchanged: s.evaluated - s.changed, changed: s.changed, byTransition: s.byTransition, byReasonCode: s.byReasonCode } : emptySummary();
    const changes = await shadowChangesPage(deps.store.db, versionId, page);
    const { policyVersionId, ...state } = presentShadow(shadow, versionId);
    const lag = shadow?.status === 'RUNNING' ? await shadowLag(deps.store.db, shadow) : { pending: 0, oldestRequestedAt: null };
    ctx.body = {
      simulation: replaySimulation('SHADOW', deps.now(), SHADOW_DISCLAIMER),
      shadow: { policyId, policyVersionId, versionNumber: version.versionNumber, ...state, pending: lag.pending, pendingSince: lag.oldestRequestedAt?.toISOString() ?? null },
      summary,
      ...changes,
    };
  });
  return router;
}
