// Which revoked credentials the lists show (outside the contract: the operator API's connections, the dashboard's
// Connections and API keys pages; docs/reference/decisions.md). Every one ever made was listed, so the lists only
// grew: a revoked one stays listed for 30 days, long enough to see what was just cut off; unrevoked ones always.

export const REVOKED_LISTED_DAYS = 30;

/** The filter part that keeps unrevoked credentials and those revoked in the last REVOKED_LISTED_DAYS days. */
export function stillListed(now: Date) {
  const since = new Date(now.getTime() - REVOKED_LISTED_DAYS * 86_400_000);
  return { $or: [{ revokedAt: null }, { revokedAt: { $gte: since } }] };
}
