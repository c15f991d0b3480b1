// validate's budgetImpact (SPEC.md 4.9). Filled in by the budgets capability; until budget windows
// exist there is no spending a limit could start from, so the honest answer is empty.
import type { AppDeps } from '../app-deps.ts';
import type { OrganizationDoc, PolicyVersionDoc } from '../store/collections.ts';

export async function budgetImpact(_deps: AppDeps, _org: OrganizationDoc, _version: PolicyVersionDoc): Promise<unknown[]> {
  return [];
}
