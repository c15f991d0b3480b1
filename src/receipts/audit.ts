// The auditor's tools on the store (docs/operate/auditors.md): an organisation's chain as JSON Lines
// (`npm run admin -- export-log`), and the stored chain checked against the stored decisions
// (`npm run admin -- verify-log`): every signature under the deployment's keys, seq from 1 without a
// gap, every prev, the chain head, and each receipt's facts recomputed from the decision and purchase
// stored now, so that a decision edited in the database after the fact is found; and every decision
// that must have a receipt has one, so that a receipt deleted with the head set back is found too.
import { isDeepStrictEqual } from 'node:util';
import { purchaseCollections, type DecisionDoc } from '../purchases/documents.ts';
import type { StoreDb } from '../store/store.ts';
import { receiptHash, type DecisionFacts } from './chain.ts';
import { receiptCollections } from './documents.ts';
import { receiptFacts } from './facts.ts';
import type { Logger } from '../log.ts';
import { publicKeys, type KeySettings } from './keys.ts';
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

/**
 * `settings`: the service's encryption key, which vouches for its signing keys as the JWKS does. The
 * service may go on deciding meanwhile: the chain is checked as its head stood when the check began (a
 * receipt is written with the head it moves, so every receipt up to it is in the store by then), and a
 * decision committed since is not taken for one without a receipt.
 */
export async function verifyLog(db: StoreDb, organizationId: string, settings: Pick<KeySettings, 'webhookEncryptionKey'>, log?: Pick<Logger, 'warn'>): Promise<LogVerdict> {
  const chains = receiptCollections(db).chains;
  const readHead = async () => {
    const doc = await chains.findOne({ _id: organizationId });
    return { seq: doc?.seq ?? 0, head: doc?.head ?? null };
  };
  const start = await readHead();
  // After the head: a key that signed a receipt up to it was stored before that receipt.
  const keys = keysOf(await publicKeys(db, settings, log));
  const pc = purchaseCollections(db);
  // Read first (the store is asynchronous, the chain check is not): one organisation's chain, with its decisions and purchases.
  const lines: LogLine[] = [];
  let lastListed = 0;
  const stored = new Map<number, DecisionFacts | string>();
  const receipted = new Set<string>();
  for await (const doc of chainOf(db, organizationId)) {
    receipted.add(doc.decisionId);
    lastListed = doc.seq;
    // Past the head read first: committed since, checked at the next run.
    if (doc.seq > start.seq) continue;
    lines.push({ seq: doc.seq, receipt: doc.jws });
    const decision = await pc.decisions.findOne({ _id: doc.decisionId });
    const purchase = await pc.purchases.findOne({ _id: doc.purchaseId });
    stored.set(doc.seq, !decision ? `its decision ${doc.decisionId} is not in the store` : !purchase ? `its purchase ${doc.purchaseId} is not in the store` : receiptFacts('', purchase, decision));
  }
  if (lines.length > 0 && lines[0].seq !== 1) return { ok: false, seq: 1, reason: `the stored chain starts at seq ${lines[0].seq}` };
  const signedAt: { seq: number; evaluatedAt: string }[] = [];
  const result = verifyChain(lines, keys, (payload, line) => {
    const facts = stored.get(line.seq)!;
    if (typeof facts === 'string') return facts;
    signedAt.push({ seq: line.seq, evaluatedAt: facts.evaluatedAt });
    for (const field of CHECKED) {
      if (!isDeepStrictEqual(payload[field], facts[field])) return `the stored ${field} is ${JSON.stringify(facts[field])}, the receipt says ${JSON.stringify(payload[field])}`;
    }
    return null;
  });
  if (!result.ok) return result;
  const last = lines.at(-1);
  const head = last ? receiptHash(last.receipt) : null;
  if (start.seq !== (last?.seq ?? 0) || start.head !== head) {
    return { ok: false, seq: (last?.seq ?? 0) + 1, reason: `the chain head says seq ${start.seq}, the stored receipts end at ${last?.seq ?? 0} (or its hash differs)` };
  }
  // Receipts listed past it were committed since, each moving the head on: one the head never reached was left behind by a head set back.
  const end = await readHead();
  if (end.seq < lastListed) return { ok: false, seq: end.seq + 1, reason: `the chain head says seq ${end.seq}, the stored receipts go on to ${lastListed}` };
  const unreceipted = await firstDecisionWithoutReceipt(db, organizationId, receipted, signedAt[0]?.evaluatedAt ?? null);
  if (unreceipted !== null) {
    const { decision, evaluatedAt } = unreceipted;
    // Where its receipt would be: before the first receipt of a later decision, else after the last.
    const seq = signedAt.find((r) => r.evaluatedAt > evaluatedAt)?.seq ?? (last?.seq ?? 0) + 1;
    return { ok: false, seq, reason: `decision ${decision._id} of purchase ${decision.purchaseId} (${decision.kind}, ${evaluatedAt}) has no receipt` };
  }
  return { ok: true, count: result.count, head };
}

const SIGNED_KINDS = new Set<DecisionDoc['kind']>(['INITIAL', 'APPROVAL_REEVALUATION']);

/**
 * The earliest decision of the organisation that should have a receipt and has none. Decisions made
 * before receipts existed have none: a decision needs one when it was evaluated at or after the first
 * receipt of the organisation, or the deployment's first signing key (made at the first start of a
 * release with receipts), whichever is earlier.
 */
async function firstDecisionWithoutReceipt(
  db: StoreDb,
  organizationId: string,
  receipted: ReadonlySet<string>,
  firstReceiptAt: string | null,
): Promise<{ decision: DecisionDoc; evaluatedAt: string } | null> {
  const [firstKey] = await receiptCollections(db).keys.find({}, { sort: { createdAt: 1 }, limit: 1, projection: { createdAt: 1 } }).toArray();
  const since = [firstReceiptAt, firstKey?.createdAt.toISOString()].filter((t): t is string => t !== undefined && t !== null).sort()[0];
  if (since === undefined) return null;
  const pc = purchaseCollections(db);
  const candidates: { decision: DecisionDoc; evaluatedAt: string }[] = [];
  const purchaseIds = (await pc.purchases.find({ organizationId }, { projection: { _id: 1 } }).toArray()).map((p) => p._id);
  for (let i = 0; i < purchaseIds.length; i += 500) {
    const decisions = await pc.decisions.find({ purchaseId: { $in: purchaseIds.slice(i, i + 500) } }, { projection: { ruleEvaluations: 0 } }).toArray();
    for (const decision of decisions) {
      const evaluatedAt = decision.evaluatedAt.toISOString();
      if (SIGNED_KINDS.has(decision.kind) && evaluatedAt >= since && !receipted.has(decision._id)) candidates.push({ decision, evaluatedAt });
    }
  }
  candidates.sort((a, b) => (a.evaluatedAt < b.evaluatedAt ? -1 : a.evaluatedAt > b.evaluatedAt ? 1 : 0));
  // A decision committed after the receipts were listed has its receipt now: it was written in the same transaction.
  for (const candidate of candidates) {
    const receipt = await receiptCollections(db).receipts.findOne({ purchaseId: candidate.decision.purchaseId, decisionId: candidate.decision._id }, { projection: { _id: 1 } });
    if (!receipt) return candidate;
  }
  return null;
}
