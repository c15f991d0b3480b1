// A person's dashboard roles (manifest `people[].roles`). Every signed-in person may look; `approver`
// answers approvals and makes dashboard purchases; `admin` sees and revokes connections and keys.
import { DEFAULT_ROLES } from '../../../schemas/manifest.ts';
import type { PersonDoc, PersonRole } from '../../store/collections.ts';

export const rolesOf = (person: Pick<PersonDoc, 'roles'>): readonly PersonRole[] => person.roles ?? DEFAULT_ROLES;

export const hasRole = (person: Pick<PersonDoc, 'roles'>, role: PersonRole): boolean => rolesOf(person).includes(role);
