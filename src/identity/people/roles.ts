// A person's dashboard roles (manifest `people[].roles`). Every signed-in person may look; `approver`
// answers approvals and makes dashboard purchases; `admin` sees and revokes connections and keys.
import { DEFAULT_ROLES } from '../../../schemas/manifest.ts';
import type { PersonDoc, PersonRole } from '../../store/collections.ts';
import type { StoreCollection, StoreSession } from '../../store/store.ts';

export const rolesOf = (person: Pick<PersonDoc, 'roles'>): readonly PersonRole[] => person.roles ?? DEFAULT_ROLES;

export const hasRole = (person: Pick<PersonDoc, 'roles'>, role: PersonRole): boolean => rolesOf(person).includes(role);

/**
 * How many people of the organisation may approve: those with the approver role (or no roles, the
 * default), one human listed under several handles with one email counted once, as their answers are.
 */
export async function approverCount(people: StoreCollection<PersonDoc>, organizationId: string): Promise<number> {
  const emails = await people.distinct('email', { organizationId, $or: [{ roles: { $exists: false } }, { roles: 'approver' }] });
  return emails.length;
}

/**
 * The ids of every record of the organisation with this email: one human listed under several handles is
 * one person (docs/reference/decisions.md), who answers once and may not approve what any of them made.
 */
export async function samePersonIds(people: StoreCollection<PersonDoc>, organizationId: string, email: string, session?: StoreSession): Promise<string[]> {
  const records = await people.find({ organizationId, email }, { session, projection: { _id: 1 } }).toArray();
  return records.map((p) => p._id);
}
