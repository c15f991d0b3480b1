// The dashboard's own collections: server-side sessions and the failed sign-in counters. Both expire
// through TTL indexes on `expiresAt` (src/identity/capability.ts); reads check `expiresAt` too, because a
// TTL index removes documents only eventually.
import type { StoreDb, StoreSession } from '../../store/store.ts';

export interface DashboardSessionDoc {
  /** SHA-256 of the cookie value: a stolen database dump holds no usable session. */
  _id: string;
  personId: string;
  organizationId: string;
  /** Synchronizer token every form and fetch that changes something must carry. */
  csrfToken: string;
  createdAt: Date;
  lastSeenAt: Date;
  /** Sliding: lastSeenAt + idle timeout, never beyond absoluteExpiresAt. */
  expiresAt: Date;
  absoluteExpiresAt: Date;
}

export interface SignInThrottleDoc {
  /** `account:<email>` or `address:<ip>`. */
  _id: string;
  /** Failed attempts in the window, plus those being checked right now (src/identity/people/sign-in.ts). */
  failures: number;
  firstAt: Date;
  expiresAt: Date;
}

export const dashboardCollections = (db: StoreDb) => ({
  sessions: db.collection<DashboardSessionDoc>('dashboard_sessions'),
  throttle: db.collection<SignInThrottleDoc>('dashboard_sign_in_throttle'),
});

/**
 * A suspended organisation's people are signed out there and then: their sessions end with the
 * suspension, so that making it active again opens none of them (docs/operate/dashboard.md).
 */
export async function endOrganizationSessions(db: StoreDb, organizationId: string, session?: StoreSession): Promise<void> {
  await dashboardCollections(db).sessions.deleteMany({ organizationId }, { session });
}
