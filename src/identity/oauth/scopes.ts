// The three scopes of docs/reference/contract.md §5.2, with the plain words the consent page shows for each.
import type { Scope } from '../auth.ts';
import type { PersonDoc } from '../../store/collections.ts';
import { hasRole } from '../people/roles.ts';

export const SCOPES: readonly Scope[] = ['purchase:check', 'purchase:read', 'purchase:request'];

export const SCOPE_WORDS: Record<Scope, string> = {
  'purchase:check': 'Check whether a purchase would be allowed by your policies (nothing is recorded).',
  'purchase:read': 'See what happened to the purchases it requested.',
  'purchase:request': 'Request purchases as the agent you choose; your policies decide each one.',
};

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);

/**
 * Parses a space-separated scope parameter (RFC 6749 3.3). Unknown scopes make the whole request
 * invalid rather than being dropped silently. Returns the scopes in canonical order.
 */
export function parseScopes(raw: string): { ok: true; scopes: Scope[] } | { ok: false; unknown: string[] } {
  const words = raw.split(' ').filter((w) => w !== '');
  const unknown = words.filter((w) => !isScope(w));
  if (unknown.length > 0 || words.length === 0) return { ok: false, unknown };
  return { ok: true, scopes: SCOPES.filter((s) => words.includes(s)) };
}

/**
 * The scopes a person may grant, or that a connection they granted may use: requesting purchases is making
 * them, which only an `approver` may do on the dashboard (docs/operate/dashboard.md#roles), so a person
 * without that role grants at most `purchase:check` and `purchase:read` (docs/reference/decisions.md).
 */
export const grantableScopes = (person: Pick<PersonDoc, 'roles'>, scopes: readonly Scope[]): Scope[] =>
  scopes.filter((s) => s !== 'purchase:request' || hasRole(person, 'approver'));
