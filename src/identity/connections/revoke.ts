// revokeConnection: withdraws a connection (docs/reference/contract.md §5.2: takes effect on the next call, because
// every token is checked against its connection). Emits `connection.revoked` once; a revocation
// caused by token reuse also emits `security.connection_token_reuse_detected` (docs/reference/contract.md §6.2).
import { recordEvent } from '../../events/outbox.ts';
import type { StoreDb, StoreSession } from '../../store/store.ts';
import { connectionsCollection, type ConnectionDoc, type RevokedReason } from './documents.ts';

export interface ReuseDetail {
  /** Which credential was presented again. */
  credential: 'REFRESH_TOKEN' | 'AUTHORIZATION_CODE';
}

/**
 * Inside a transaction: marks the connection revoked and records its events. Returns the connection
 * as it now is, and whether this call revoked it (false when it was already revoked).
 */
export async function revokeConnectionIn(
  db: StoreDb,
  session: StoreSession,
  connectionId: string,
  reason: RevokedReason,
  now: Date,
  reuse?: ReuseDetail,
): Promise<{ connection: ConnectionDoc | null; revokedNow: boolean }> {
  const connections = connectionsCollection(db);
  const updated = await connections.findOneAndUpdate(
    { _id: connectionId, revokedAt: null },
    { $set: { revokedAt: now, revokedReason: reason } },
    { session, returnDocument: 'after' },
  );
  if (!updated) return { connection: await connections.findOne({ _id: connectionId }, { session }), revokedNow: false };
  const data = { connectionId: updated._id, agentId: updated.agentId, application: updated.applicationName, clientId: updated.clientId, reason };
  if (reuse) {
    await recordEvent(db, session, {
      type: 'security.connection_token_reuse_detected',
      organizationId: updated.organizationId,
      createdAt: now,
      data: { connectionId: updated._id, agentId: updated.agentId, application: updated.applicationName, clientId: updated.clientId, credential: reuse.credential },
    });
  }
  await recordEvent(db, session, { type: 'connection.revoked', organizationId: updated.organizationId, createdAt: now, data });
  return { connection: updated, revokedNow: true };
}
