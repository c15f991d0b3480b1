// GET /v1/agents (docs/reference/contract.md §4.10): read-only, organization-scoped keys, unpaginated.
import type Router from '@koa/router';
import { newRouter } from '../http/router.ts';
import type { AppDeps } from '../app-deps.ts';
import { requireOrganizationKey } from '../identity/auth.ts';
import { queryParams } from '../http/params.ts';
import type { AgentDoc } from '../store/collections.ts';
import type { Static } from 'typebox';
import type { Agent } from '../../schemas/agents.ts';

export const presentAgent = (a: AgentDoc): Static<typeof Agent> => ({
  id: a._id,
  name: a.name,
  description: a.description,
  status: a.status,
  createdAt: a.createdAt.toISOString(),
  updatedAt: a.updatedAt.toISOString(),
});

export function agentRoutes(deps: AppDeps): Router {
  const router = newRouter();
  router.get('/v1/agents', requireOrganizationKey, queryParams(), async (ctx) => {
    const agents = await deps.collections.agents
      .find({ organizationId: ctx.state.organization._id })
      .sort({ createdAt: 1, _id: 1 })
      .toArray();
    ctx.body = { agents: agents.map(presentAgent) };
  });
  return router;
}
