// What budgets contribute: the index of the budget windows (src/budgets/windows.ts).
import type { Capability } from '../capability.ts';

export const budgets: Capability = {
  name: 'budgets',
  indexes: [{ collection: 'budget_windows', keys: { organizationId: 1, policyId: 1, periodKind: 1, periodKey: 1 } }],
};
