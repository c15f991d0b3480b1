// A connection (docs/reference/contract.md §5.2): one person's grant letting one application act as one existing agent
// with some scopes. Tokens belong to a connection; revoking it ends every token at the next call.
import type { Scope } from '../auth.ts';
import { iso } from '../../timestamps.ts';
import type { StoreDb } from '../../store/store.ts';
import { stillListed } from '../revoked-listing.ts';

export type RevokedReason = 'OPERATOR' | 'CLIENT' | 'TOKEN_REUSE' | 'PASSWORD_RESET';

export interface ConnectionDoc {
  _id: string;
  organizationId: string;
  personId: string;
  /** The person's name when they approved: shown as `submittedVia.grantedBy` (docs/reference/contract.md §2.5). */
  grantedBy: { name: string };
  agentId: string;
  /** The client ID metadata document URL (docs/reference/contract.md §5.2). */
  clientId: string;
  /** `client_name` from the document (or its host): `submittedVia.application`. */
  applicationName: string;
  scopes: Scope[];
  createdAt: Date;
  revokedAt: Date | null;
  revokedReason: RevokedReason | null;
  /** Refreshed at most once a minute by token use; absent until first used. */
  lastUsedAt?: Date | null;
}

export const connectionsCollection = (db: StoreDb) => db.collection<ConnectionDoc>('connections');

/** An organisation's connections as the lists show them, newest first: unrevoked ones and those revoked lately (stillListed). */
export function listedConnections(db: StoreDb, organizationId: string, now: Date): Promise<ConnectionDoc[]> {
  return connectionsCollection(db)
    .find({ organizationId, ...stillListed(now) })
    .sort({ createdAt: -1, _id: -1 })
    .toArray();
}

/** The operator API's view of a connection. */
export function presentConnection(c: ConnectionDoc, agent: { id: string; name: string } | null, person: { id: string; name: string } | null) {
  return {
    id: c._id,
    organizationId: c.organizationId,
    application: c.applicationName,
    clientId: c.clientId,
    agent: agent ?? { id: c.agentId, name: null },
    grantedBy: { id: c.personId, name: person?.name ?? c.grantedBy.name },
    scopes: c.scopes,
    createdAt: c.createdAt.toISOString(),
    revokedAt: iso(c.revokedAt),
    revokedReason: c.revokedReason,
  };
}
