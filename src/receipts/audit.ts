// The auditor's tools on the store (docs/operate/auditors.md): an organisation's chain as JSON Lines
// (`npm run admin -- export-log`), and the stored chain checked against the stored decisions
// (`npm run admin -- verify-log`): every signature under the deployment's keys, seq from 1 without a
// gap, every prev, the chain head, and each receipt's facts recomputed from the decision and purchase
// stored now, so that a decision edited in the database after the fact is found.
import { isDeepStrictEqual } from 'node:util';
import { purchaseCollections } from '../purchases/documents.ts';
import type { StoreDb } from '../store/store.ts';
import { receiptHash, type DecisionFacts } from './chain.ts';
import { receiptCollections } from './documents.ts';
import { receiptFacts } from './facts.ts';
import { publicKeys } from './keys.ts';
import { chainOf } from './read.ts';
import { keysOf, verifyChain, type LogLine } from './verify.ts';

/** The export's lines, `{"seq": n, "receipt": "<JWS>"}`, in chain order from `fromSeq`. */
export async function* exportLog(db: StoreDb, organizationId: string, fromSeq = 1): AsyncGenerator<string> {
  for await (const doc of chainOf(db, organizationId, fromSeq)) yield JSON.stringify({ seq: doc.seq, receipt: doc.jws });
}

export type LogVerdict = { ok: true; count: number; head: string | null } | { ok: false; seq: number; reason: string };

const CHECKED: ReadonlyArray<Exclude<keyof DecisionFacts, 'iss'>> = [
  'organizationId',
  'agentId',
  'purchaseRequestId',
  'decisionId',
  'kind',
  'outcome',
  'reasonCodes',
  'amountMinor',
  'currency',
  'merchant',
  'evaluatedAt',
  'policyVersionIds',
  'requestSha256',
];

export async function verifyLog(db: StoreDb, organizationId: string): Promise<LogVerdict> {
  const keys = keysOf(await publicKeys(db));
  const pc = purchaseCollections(db);
  // Read first (the store is asynchronous, the chain check is not): one organisation's chain, with its decisions and purchases.
  const lines: LogLine[] = [];
  const stored = new Map<number, DecisionFacts | string>();
  for await (const doc of chainOf(db, organizationId)) {
    lines.push({ seq: doc.seq, receipt: doc.jws });
    const decision = await pc.decisions.findOne({ _id: doc.decisionId });
    const purchase = await pc.purchases.findOne({ _id: doc.purchaseId });
    stored.set(doc.seq, !decision ? `its decision ${doc.decisionId} is not in the store` : !purchase ? `its purchase ${doc.purchaseId} is not in the store` : receiptFacts('', purchase, decision));
  }
  if (lines.length > 0 && lines[0].seq !== 1) return { ok: false, seq: 1, reason: `the stored chain starts at seq ${lines[0].seq}` };
  const result = verifyChain(lines, keys, (payload, line) => {
    const facts = stored.get(line.seq)!;
    if (typeof facts === 'string') return facts;
    for (const field of CHECKED) {
      if (!isDeepStrictEqual(payload[field], facts[field])) return `the stored ${field} is ${JSON.stringify(facts[field])}, the receipt says ${JSON.stringify(payload[field])}`;
    }
    return null;
  });
  if (!result.ok) return result;
  const chain = await receiptCollections(db).chains.findOne({ _id: organizationId });
  const last = lines.at(-1);
  const head = last ? receiptHash(last.receipt) : null;
  if ((chain?.seq ?? 0) !== (last?.seq ?? 0) || (chain?.head ?? null) !== head) {
    return { ok: false, seq: (last?.seq ?? 0) + 1, reason: `the chain head says seq ${chain?.seq ?? 0}, the stored receipts end at ${last?.seq ?? 0} (or its hash differs)` };
  }
  return { ok: true, count: result.count, head };
}
