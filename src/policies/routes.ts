// Read-only policy endpoints (docs/reference/contract.md §4.6-4.9) and the refusal of policy authoring (docs/reference/contract.md §1 rule 2).
import type Router from '@koa/router';
import { newRouter } from '../http/router.ts';
import type { Context, Next } from 'koa';
import type { AppDeps } from '../app-deps.ts';
import { refusePolicyAuthoring, requireOrganizationKey } from '../identity/auth.ts';
import { invalidRequest, type ErrorIssue } from '../http/errors.ts';
import { firstCharacters, queryIssues, queryValue, uuidParam, queryParams, wholeNumber } from '../http/params.ts';
import type { PolicyStatus } from '../store/collections.ts';
import { listPolicies } from './list.ts';
import { getPolicy, getPolicyVersion, getPolicyVersionDoc } from './read.ts';
import { checkVersion } from './check-version.ts';
import { approverCount } from '../identity/people/roles.ts';
import { versionFull } from './present.ts';
import { budgetImpact } from './budget-impact.ts';
import { LIMITS, jsonBody } from '../http/body.ts';
import { compile } from '../http/validate.ts';
import { ValidateBody } from '../../schemas/policies.ts';

const validateBody = compile(ValidateBody);

const STATUSES: PolicyStatus[] = ['ACTIVE', 'DISABLED', 'ARCHIVED'];
const LIST_PARAMS = ['status', 'search', 'page', 'pageSize'];
const SEARCH_MAX = 200;

/**
 * A whole number of at least 1 (docs/reference/contract.md §4.6: a page past the end is empty, a pageSize above
 * 100 is clamped); values beyond 2^53-1 count as 2^53-1.
 */
function positiveInt(value: string | undefined, name: string, fallback: number, issues: ErrorIssue[]): number {
  if (value === undefined) return fallback;
  const n = wholeNumber(value);
  if (n !== null && n >= 1) return n;
  issues.push({ path: name, code: 'INVALID_INTEGER', message: `${name} must be a whole number of at least 1.` });
  return fallback;
}

function parseListQuery(ctx: Context) {
  const issues: ErrorIssue[] = queryIssues(ctx, LIST_PARAMS);
  const status = queryValue(ctx, 'status');
  if (status !== undefined && !STATUSES.includes(status as PolicyStatus)) {
    issues.push({ path: 'status', code: 'INVALID_VALUE', message: `status is one of ${STATUSES.join(', ')}.` });
  }
  const page = positiveInt(queryValue(ctx, 'page'), 'page', 1, issues);
  const pageSize = Math.min(100, positiveInt(queryValue(ctx, 'pageSize'), 'pageSize', 25, issues));
  if (issues.length > 0) throw invalidRequest(issues);
  const search = firstCharacters((queryValue(ctx, 'search') ?? '').trim(), SEARCH_MAX); // docs/reference/contract.md §8
  return { status: status as PolicyStatus | undefined, search: search || undefined, page, pageSize };
}

const isAuthoring = (ctx: Context) =>
  ['POST', 'PUT', 'PATCH', 'DELETE'].includes(ctx.method) &&
  /^\/v1\/policies(\/|$)/.test(ctx.path) &&
  !(ctx.method === 'POST' && /^\/v1\/policies\/[^/]+\/versions\/[^/]+\/validate\/?$/.test(ctx.path));

/** Mounted after authentication: every credential is refused, whatever it is. */
export function refuseAuthoring(ctx: Context, next: Next) {
  return isAuthoring(ctx) ? refusePolicyAuthoring(ctx, next) : next();
}

export function policyRoutes(deps: AppDeps): Router {
  const c = deps.collections;
  const router = newRouter();
  const orgId = (ctx: Context): string => ctx.state.organization._id;

  router.get('/v1/policies', requireOrganizationKey, async (ctx) => {
    ctx.body = await listPolicies(c, { organizationId: orgId(ctx), ...parseListQuery(ctx) });
  });
  router.get('/v1/policies/:policyId', requireOrganizationKey, queryParams(), async (ctx) => {
    ctx.body = await getPolicy(c, orgId(ctx), uuidParam(ctx, 'policyId', 'policy'));
  });
  router.get('/v1/policies/:policyId/versions/:versionId', requireOrganizationKey, queryParams(), async (ctx) => {
    ctx.body = await getPolicyVersion(c, orgId(ctx), uuidParam(ctx, 'policyId', 'policy'), uuidParam(ctx, 'versionId', 'policy version'));
  });
  router.post('/v1/policies/:policyId/versions/:versionId/validate', requireOrganizationKey, jsonBody(LIMITS.standard, { optional: true }), queryParams(), async (ctx) => {
    // No body; an empty JSON object is tolerated, a field is unknown (docs/reference/contract.md §1 rule 6: refused, not ignored).
    if (ctx.state.body !== undefined) validateBody.parse(ctx.state.body);
    const version = await getPolicyVersionDoc(c, orgId(ctx), uuidParam(ctx, 'policyId', 'policy'), uuidParam(ctx, 'versionId', 'policy version'));
    const { issues, warnings } = checkVersion(version, await approverCount(c.people, orgId(ctx)));
    ctx.body = {
      valid: issues.length === 0,
      issues,
      warnings,
      budgetImpact: await budgetImpact(deps, ctx.state.organization, version),
      version: versionFull(version),
    };
  });
  return router;
}
