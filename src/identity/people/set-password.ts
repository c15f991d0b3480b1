// Setting a person's password (PUT /admin/people/{personId}/password), or taking it away (DELETE: a person
// who left; a manifest never deletes anyone). A new password, or none, is how an operator locks out whoever
// learnt the old one, so everything the old one opened ends with it, in the
// same transaction: their dashboard sessions, the sign-ins still waiting on a consent page, and every
// connection they approved (`connection.revoked`, reason PASSWORD_RESET; docs/reference/decisions.md).
// Someone holding the old password could have connected an assistant of their own.
import type { AppDeps } from '../../app-deps.ts';
import { runCommand } from '../../commands/run-command.ts';
import type { PersonDoc } from '../../store/collections.ts';
import { connectionsCollection } from '../connections/documents.ts';
import { revokeConnectionIn } from '../connections/revoke.ts';
import { oauthCollections } from '../oauth/documents.ts';
import { dashboardCollections } from '../sessions/documents.ts';

/** The person as now stored, or null when there is no such person. `passwordHash` from hashPassword, null for none. */
export function setPassword(deps: Pick<AppDeps, 'store' | 'collections' | 'now'>, personId: string, passwordHash: string | null): Promise<PersonDoc | null> {
  return runCommand(deps.store, async (session) => {
    const now = deps.now();
    const person = await deps.collections.people.findOneAndUpdate({ _id: personId }, { $set: { passwordHash, updatedAt: now } }, { returnDocument: 'after', session });
    if (!person) return null;
    const db = deps.store.db;
    await dashboardCollections(db).sessions.deleteMany({ personId }, { session });
    await oauthCollections(db).requests.deleteMany({ personId }, { session });
    for (const connection of await connectionsCollection(db).find({ personId, revokedAt: null }, { session }).toArray()) {
      await revokeConnectionIn(db, session, connection._id, 'PASSWORD_RESET', now);
    }
    return person;
  });
}
