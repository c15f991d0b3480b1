// POST /v1/simulations/current-policies, /draft-policy, /policy-version (docs/reference/contract.md §4.3-4.5).
import type Router from '@koa/router';
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
  return router;
}
