// The operator API under /admin (docs/internals/design.md §5): outside the /v1 contract, for the people who
// run the service. Thin handlers over commands.
import type Router from '@koa/router';
import { newRouter } from '../http/router.ts';
import Type from 'typebox';
import type { AppDeps } from '../app-deps.ts';
import { LIMITS, jsonBody } from '../http/body.ts';
import { notFound } from '../http/errors.ts';
import { uuidParam } from '../http/params.ts';
import { compile } from '../http/validate.ts';
import { applyManifest } from '../manifests/apply.ts';
import { changeAgentStatus, finishAgentStatusChange } from '../agents/change-status.ts';
import { runCommand } from '../commands/run-command.ts';
import { presentAgent } from '../agents/routes.ts';
import { AgentStatus } from '../../schemas/common.ts';
import { requireAdmin } from '../identity/operator-token.ts';
import { endOrganizationSessions } from '../identity/sessions/documents.ts';
import { manifestBody } from './manifest-body.ts';
import { iso } from '../timestamps.ts';
import { answerApproval } from '../approvals/answer.ts';
import { views } from '../purchases/projection.ts';
import { currentReadbacks } from '../purchases/read.ts';
import { revokeApiKey } from '../identity/credentials/revoke.ts';
import { setShadow } from '../policies/shadows.ts';
import { setReceiptHeader } from '../receipts/header.ts';

const AgentPatch = compile(Type.Object({ status: AgentStatus }, { additionalProperties: false }));
const Answer = compile(
  Type.Object(
    {
      answer: Type.Union([Type.Literal('APPROVE'), Type.Literal('REJECT')]),
      person: Type.String({ minLength: 1, maxLength: 64 }),
      comment: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
    },
    { additionalProperties: false },
  ),
);
const VersionPatch = compile(Type.Object({ shadow: Type.Boolean() }, { additionalProperties: false }));
const OrganizationPatch = compile(
  Type.Object({ status: Type.Union([Type.Literal('ACTIVE'), Type.Literal('SUSPENDED')]) }, { additionalProperties: false }),
);

export function adminRoutes(deps: AppDeps): Router {
  const c = deps.collections;
  const router = newRouter({ prefix: '/admin' });
  router.use(requireAdmin(deps.config.adminTokenSha256));

  router.post('/manifests', manifestBody, async (ctx) => {
    ctx.body = await applyManifest(deps, ctx.state.body);
  });

  router.patch('/agents/:agentId', jsonBody(LIMITS.standard), async (ctx) => {
    const id = uuidParam(ctx, 'agentId', 'agent');
    const { status } = AgentPatch.parse(ctx.state.body);
    const agent = await runCommand(deps.store, async (session) => {
      const found = await c.agents.findOne({ _id: id }, { session });
      if (!found) throw notFound('agent');
      return changeAgentStatus(deps, session, found, status, deps.now());
    });
    await finishAgentStatusChange(deps, agent);
    ctx.body = { agent: presentAgent(agent) };
  });

  router.patch('/organizations/:organizationId', jsonBody(LIMITS.standard), async (ctx) => {
    const id = uuidParam(ctx, 'organizationId', 'organization');
    const { status } = OrganizationPatch.parse(ctx.state.body);
    const org = await runCommand(deps.store, async (session) => {
      const updated = await c.organizations.findOneAndUpdate({ _id: id }, { $set: { status, updatedAt: deps.now() } }, { returnDocument: 'after', session });
      if (updated && status === 'SUSPENDED') await endOrganizationSessions(deps.store.db, id, session);
      return updated;
    });
    if (!org) throw notFound('organization');
    ctx.body = { organization: { id: org._id, handle: org.handle, name: org.name, status: org.status } };
  });

  router.post('/purchase-requests/:purchaseRequestId/answer', jsonBody(LIMITS.standard), async (ctx) => {
    const id = uuidParam(ctx, 'purchaseRequestId', 'purchase request');
    const body = Answer.parse(ctx.state.body);
    const { purchase, receipt } = await answerApproval(deps, { purchaseId: id, answer: body.answer, personHandle: body.person, comment: body.comment ?? null });
    // The answer that decided sends its decision's receipt, as a submission does (docs/integrate/receipts.md);
    // one recorded below the quorum decided nothing, so it has none.
    setReceiptHeader(ctx, receipt);
    ctx.body = { purchase };
  });

  // A DRAFT version in shadow, or out of it (docs/operate/shadow.md).
  router.patch('/policy-versions/:versionId', jsonBody(LIMITS.standard), async (ctx) => {
    const id = uuidParam(ctx, 'versionId', 'policy version');
    const { shadow } = VersionPatch.parse(ctx.state.body);
    ctx.body = { shadow: await setShadow(deps, id, shadow) };
  });

  // A purchase as its agent reads it back, whoever submitted it: for operators following an approval's answers.
  router.get('/purchase-requests/:purchaseRequestId', async (ctx) => {
    const id = uuidParam(ctx, 'purchaseRequestId', 'purchase request');
    const view = await views(deps.store.db).purchaseViews.findOne({ _id: id });
    if (!view) throw notFound('purchase request');
    const [purchase] = await currentReadbacks(deps.store.db, [view]);
    ctx.body = { purchase };
  });

  router.delete('/api-keys/:apiKeyId', async (ctx) => {
    const id = uuidParam(ctx, 'apiKeyId', 'API key');
    const final = await revokeApiKey(c, id, deps.now());
    if (!final) throw notFound('API key');
    ctx.body = { apiKey: { id: final._id, prefix: final.prefix, revokedAt: iso(final.revokedAt) } };
  });
  return router;
}
