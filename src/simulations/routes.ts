// POST /v1/simulations/current-policies, /draft-policy, /policy-version (SPEC.md 4.3-4.5).
import Router from '@koa/router';
import type { AppDeps } from '../app-deps.ts';
import { principalOf, requireOrganizationKey, requireSimulationAccess } from '../http/auth.ts';
import { LIMITS, jsonBody } from '../http/body.ts';
import { invalidRequest } from '../http/errors.ts';
import { compile } from '../http/validate.ts';
import { CurrentPoliciesSimulationBody, VersionSimulationBody } from '../../schemas/purchases.ts';
import { purchaseInput } from '../purchases/input.ts';
import { simulateCurrentPolicies, simulateVersion } from './simulate.ts';
import { serverTiming } from '../metrics/timing.ts';

const currentBody = compile(CurrentPoliciesSimulationBody);
const versionBody = compile(VersionSimulationBody);

export function simulationRoutes(deps: AppDeps): Router {
  const router = new Router({ prefix: '/v1/simulations' });

  router.post('/current-policies', requireSimulationAccess, jsonBody(LIMITS.standard), serverTiming, async (ctx) => {
    const body = currentBody.parse(ctx.state.body);
    const principal = principalOf(ctx);
    const org = ctx.state.organization;
    // The agentId rule of SPEC.md 4.3 (issue codes: DESIGN.md section 3).
    let agentId: string;
    if (principal.agentId === null) {
      if (!body.agentId) throw invalidRequest([{ path: 'agentId', code: 'AGENT_ID_REQUIRED', message: 'An organization-scoped key names the agent to simulate as.' }]);
      agentId = body.agentId.toLowerCase();
    } else {
      if (body.agentId) throw invalidRequest([{ path: 'agentId', code: 'AGENT_ID_NOT_PERMITTED', message: 'This credential simulates as its own agent; omit agentId.' }]);
      agentId = principal.agentId;
    }
    ctx.body = await simulateCurrentPolicies(deps, org, agentId, purchaseInput(body, org.currency));
  });

  for (const [path, mode] of [['/draft-policy', 'DRAFT_POLICY'], ['/policy-version', 'POLICY_VERSION']] as const) {
    router.post(path, requireOrganizationKey, jsonBody(LIMITS.standard), serverTiming, async (ctx) => {
      const body = versionBody.parse(ctx.state.body);
      const org = ctx.state.organization;
      ctx.body = await simulateVersion(deps, org, mode, body.policyVersionId.toLowerCase(), purchaseInput(body, org.currency));
    });
  }
  return router;
}
