// The storage port of the purchase commands (docs/internals/design.md §1): one command's record,
// written as one unit inside the command's transaction. This implementation serves both stores
// through the MongoDB-shaped API: every write goes into one client bulk write (one round trip on
// MongoDB), budget windows and the purchase and approval at the version the command read (a matched
// count of 0 is a VersionConflict, and the handler retries the whole command), the idempotency key
// first, so that a request that raced this one to the key stops the batch there. A decision's receipt
// goes in the same batch, and the organisation's chain head moves at the seq and head the command read:
// a concurrent decision of the organisation is a VersionConflict too (docs/integrate/receipts.md). While the
// organisation has a draft in shadow, a submission's receipt also carries what the shadow reads of it
// (src/policies/shadows.ts): the shadow follows the receipts and writes nothing of its own here.
import type { BudgetWindowDoc, LoadedWindows } from '../budgets/window-state.ts';
import { WINDOWS } from '../budgets/window-state.ts';
import { fenceAgentIn } from '../agents/fence.ts';
import { fencePolicyIn } from '../policies/fence.ts';
import { queueEvent } from '../events/outbox.ts';
import { VersionConflict } from '../http/errors.ts';
import type { StoreDb, StoreSession } from '../store/store.ts';
import { WriteBatch } from '../store/write-batch.ts';
import { shadowInput } from '../policies/shadows.ts';
import { PURCHASE_COLLECTIONS, type ApprovalDoc, type PurchaseDoc } from './documents.ts';
import type { PurchaseRecord } from './lifecycle.ts';
import { projectAnswers, projectPurchase } from './projection.ts';
import { RECEIPT_COLLECTIONS, type ReceiptChainDoc, type ReceiptDoc } from '../receipts/documents.ts';

export interface PurchaseRecordPort {
  /**
   * Writes the record inside `session`'s transaction; throws VersionConflict when something it read changed,
   * the windows `read` took from the actor's memory included (those it does not write are checked here).
   */
  write(record: PurchaseRecord, session: StoreSession, read: Pick<LoadedWindows, 'docs' | 'remembered'>): Promise<void>;
}

/** The Idempotency-Key was recorded by a request that committed first. */
export class IdempotencyKeyTaken extends Error {}

export function transactionalRecords(db: StoreDb): PurchaseRecordPort {
  return {
    write: async (record, session, read) => {
      await confirmRemembered(db, record, session, read);
      await writeRecord(db, record, session);
    },
  };
}

/**
 * A window the decision took from the actor's memory and the record does not write at its version (a
 * refusal moves no amounts) is read here, in the transaction: another process may have moved it since.
 */
async function confirmRemembered(db: StoreDb, record: PurchaseRecord, session: StoreSession, read: Pick<LoadedWindows, 'docs' | 'remembered'>): Promise<void> {
  const written = new Set(record.windows.map((w) => w.id));
  const unconfirmed = [...read.remembered].filter((id) => !written.has(id));
  if (unconfirmed.length === 0) return;
  const stored = await db.collection<BudgetWindowDoc>(WINDOWS).find({ _id: { $in: unconfirmed } }, { session, projection: { version: 1 } }).toArray();
  const versions = new Map(stored.map((doc) => [doc._id, doc.version]));
  for (const id of unconfirmed) {
    if (versions.get(id) !== read.docs.get(id)?.version) throw new VersionConflict(`budget window ${id}`);
  }
}

async function writeRecord(db: StoreDb, record: PurchaseRecord, session: StoreSession): Promise<void> {
  const batch = new WriteBatch(db);
  const conflict = (what: string) => () => new VersionConflict(what);
  const { purchase, approval } = record;
  if (record.idempotency) {
    batch.insertOne(PURCHASE_COLLECTIONS.idempotency, record.idempotency, { onDuplicate: () => new IdempotencyKeyTaken(`idempotency key ${record.idempotency!._id}`) });
  }
  if (record.receipt) {
    const { organizationId, seq, prev, head, purchaseId, decisionId, jws } = record.receipt;
    const chain = conflict(`receipt chain of ${organizationId}`);
    if (seq === 1) {
      batch.updateOne<ReceiptChainDoc>(RECEIPT_COLLECTIONS.chains, { _id: organizationId, seq: { $exists: false } }, { $setOnInsert: { seq, head } }, { upsert: true, onDuplicate: chain });
    } else {
      // At the head signed on from, not only its seq: a head remembered from a chain since set back and
      // rebuilt to the same seq (a restore while processes ran) would otherwise commit a broken link.
      batch.updateOne<ReceiptChainDoc>(RECEIPT_COLLECTIONS.chains, { _id: organizationId, seq: seq - 1, head: prev! }, { $set: { seq, head } }, { unlessMatched: chain });
    }
    const receipt: ReceiptDoc = { _id: `${organizationId}:${seq}`, organizationId, seq, purchaseId, decisionId, jws };
    // What each draft in shadow will evaluate, with the receipt that orders it (no write of its own).
    if ((record.shadowIds?.length ?? 0) > 0 && record.decision !== null && record.purchaseVersionRead === null) receipt.shadow = shadowInput(purchase, record.decision);
    batch.insertOne<ReceiptDoc>(RECEIPT_COLLECTIONS.receipts, receipt, { onDuplicate: chain });
  }
  if (record.fenceAgent) fenceAgentIn(batch, purchase.agentId);
  for (const w of record.windows) {
    if (w.expectedVersion === null) {
      // Created by an upsert that matches only a document without a version: one created meanwhile is a duplicate key.
      batch.updateOne<BudgetWindowDoc>(WINDOWS, { _id: w.id, version: { $exists: false } }, { $setOnInsert: w.created }, { upsert: true, onDuplicate: conflict(`budget window ${w.id}`) });
    } else {
      batch.updateOne<BudgetWindowDoc>(WINDOWS, { _id: w.id, version: w.expectedVersion }, { $set: w.set }, { unlessMatched: conflict(`budget window ${w.id}`) });
    }
  }
  for (const policyId of record.fencedPolicyIds) fencePolicyIn(batch, policyId);
  if (record.decision !== null) {
    if (record.purchaseVersionRead === null) {
      batch.insertOne(PURCHASE_COLLECTIONS.purchases, purchase);
    } else {
      const { _id, ...fields } = purchase;
      batch.updateOne<PurchaseDoc>(PURCHASE_COLLECTIONS.purchases, { _id, version: record.purchaseVersionRead }, { $set: fields }, { unlessMatched: conflict(`purchase ${_id}`) });
    }
    batch.insertOne(PURCHASE_COLLECTIONS.decisions, record.decision);
  }
  if (approval) {
    if (record.approvalVersionRead === null) {
      batch.insertOne(PURCHASE_COLLECTIONS.approvals, approval);
    } else {
      // At the version read and still PENDING: of two answers racing, the second conflicts and is run again
      // on what the first wrote, so neither a second decision nor one person counted twice can commit.
      const { _id, ...fields } = approval;
      batch.updateOne<ApprovalDoc>(PURCHASE_COLLECTIONS.approvals, { _id, version: record.approvalVersionRead, state: 'PENDING' }, { $set: fields }, { unlessMatched: conflict(`approval ${_id}`) });
    }
  }
  for (const event of record.events) await queueEvent(db, session, batch, event);
  if (record.decision === null) projectAnswers(batch, purchase._id, approval!);
  else projectPurchase(batch, { purchase, decision: record.decision, approval, committedWindowIds: record.committedWindowIds, ...record.projection });
  await batch.write(session);
}
