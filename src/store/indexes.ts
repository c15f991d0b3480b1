// Indexes, created idempotently at start and by the Procfile's release step (DESIGN.md section 2).
import type { StoreDb } from './store.ts';

interface IndexSpec {
  collection: string;
  keys: Record<string, 1 | -1>;
  options?: { unique?: boolean; expireAfterSeconds?: number; name?: string };
}

export const INDEXES: IndexSpec[] = [
  { collection: 'organizations', keys: { handle: 1 }, options: { unique: true } },
  { collection: 'people', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
  { collection: 'people', keys: { email: 1 } },
  { collection: 'agents', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
  { collection: 'policies', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
  { collection: 'policy_versions', keys: { policyId: 1, versionNumber: 1 }, options: { unique: true } },
  { collection: 'api_keys', keys: { prefix: 1 }, options: { unique: true } },
  { collection: 'api_keys', keys: { organizationId: 1, handle: 1 }, options: { unique: true } },
  { collection: 'policy_views', keys: { organizationId: 1, createdAt: -1 } },
];

export async function createIndexes(db: StoreDb): Promise<void> {
  for (const spec of INDEXES) {
    await db.collection(spec.collection).createIndex(spec.keys, spec.options ?? {});
  }
}
