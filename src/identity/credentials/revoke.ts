// Revoking an API key (operator API and the dashboard's keys page): idempotent, the first revocation
// time stays. With `organizationId`, another organisation's key is indistinguishable from none.
import type { ApiKeyDoc, Collections } from '../../store/collections.ts';

export async function revokeApiKey(c: Collections, id: string, now: Date, organizationId?: string): Promise<ApiKeyDoc | null> {
  const scope = organizationId ? { organizationId } : {};
  const key = await c.apiKeys.findOneAndUpdate({ _id: id, ...scope, revokedAt: null }, { $set: { revokedAt: now } }, { returnDocument: 'after' });
  return key ?? (await c.apiKeys.findOne({ _id: id, ...scope }));
}
