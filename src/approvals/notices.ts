// Approvers are told (docs/approve/approvals.md, issue #32): when a purchase needs a person, every
// approver of its organisation is emailed (SMTP_URL, SMTP_FROM), and reminded once before it expires
// (APPROVAL_REMINDER_AT). Run by the jobs only (src/approvals/jobs.ts), never inside a request:
//
// - `approval_notices`, one per approval, says which message is due next and when: the request at
//   once, then the reminder at its moment, then nothing. The job `approvals.notify` (scheduled after
//   the submission commits, and again for the reminder) sends what is due; the recurring
//   `approvals.notify-due` sweeps up what a lost schedule or an exhausted retry left behind.
// - `notifications`, one per approval, person and kind (`approvalId:personId:kind`), is claimed before
//   the message is handed to the relay and marked SENT after: a job that runs again (a retry, the
//   sweep, a second worker) never emails the same person twice for the same approval and kind. A
//   claim whose sender died mid-conversation is taken over after a lease: at least once, never twice
//   but for that (docs/reference/decisions.md).
//
// Nobody is emailed once the approval is no longer pending or has expired, nor is a person who has
// already answered it, nor the person who made the purchase (on the dashboard, or through a connection
// they authorised: they know, and may not approve it), one email address counting as one person.
import type { AppDeps } from '../app-deps.ts';
import { isDuplicateKeyError, type StoreDb } from '../store/store.ts';
import { hasRole } from '../identity/people/roles.ts';
import { answersOf, approvalsRequiredOf, initiatorPersonId, purchaseCollections, type ApprovalDoc } from '../purchases/documents.ts';
import { NOTIFY_APPROVAL } from '../purchases/handler.ts';
import { windowsHeldBy } from '../dashboard/queries.ts';
import { relayDeferred, sendMail, smtpRefusal } from '../mail/smtp.ts';
import type { ReminderSetting } from '../config.ts';
import { noticeMessage, type NoticeKind } from './notice-message.ts';

export { NOTIFY_APPROVAL };
export type { NoticeKind };

export interface ApprovalNoticeDoc {
  /** The approval's id. */
  _id: string;
  organizationId: string;
  purchaseId: string;
  /** The message due next; null once nothing more will be sent. */
  next: NoticeKind | null;
  dueAt: Date | null;
  /** When the reminder goes out; null when none will (turned off, or no time for one). */
  reminderAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface NotificationDoc {
  /** `${approvalId}:${personId}:${kind}` */
  _id: string;
  approvalId: string;
  organizationId: string;
  personId: string;
  kind: NoticeKind;
  to: string;
  /** SENDING while a sender holds the claim; SENT once the relay accepted it; REFUSED when it refused it for good. */
  state: 'SENDING' | 'SENT' | 'REFUSED';
  claimedAt: Date;
  sentAt: Date | null;
  messageId: string | null;
  refusal?: string;
}

export const APPROVAL_NOTICES = 'approval_notices';
export const NOTIFICATIONS = 'notifications';

const collectionsOf = (db: StoreDb) => ({
  notices: db.collection<ApprovalNoticeDoc>(APPROVAL_NOTICES),
  notifications: db.collection<NotificationDoc>(NOTIFICATIONS),
});

/** How long a claim protects a message being sent: past it, the sender is taken to have died. */
export const CLAIM_LEASE_MS = 10 * 60_000;
/** How far back the sweep looks for approvals whose first email was never even started. */
const LOOKBACK_MS = 24 * 3_600_000;
/** The sweep leaves what just fell due to the job scheduled for it (a sweep racing a job could leave the step to the next sweep). */
const GRACE_MS = 30_000;

/** The reminder's moment for an approval open from createdAt to expiresAt; null when there is none. */
export function reminderAt(createdAt: Date, expiresAt: Date, setting: ReminderSetting | null): Date | null {
  if (setting === null) return null;
  const from = createdAt.getTime();
  const to = expiresAt.getTime();
  const at = setting.kind === 'FRACTION_LEFT' ? to - Math.round(setting.fraction * (to - from)) : to - setting.ms;
  return at > from && at < to ? new Date(at) : null;
}

async function noticeFor(deps: AppDeps, approval: ApprovalDoc): Promise<ApprovalNoticeDoc> {
  const { notices } = collectionsOf(deps.store.db);
  const existing = await notices.findOne({ _id: approval._id });
  if (existing) return existing;
  const now = deps.now();
  const doc: ApprovalNoticeDoc = {
    _id: approval._id,
    organizationId: approval.organizationId,
    purchaseId: approval.purchaseId,
    next: 'REQUEST',
    dueAt: approval.createdAt,
    reminderAt: reminderAt(approval.createdAt, approval.expiresAt, deps.config.approvalReminder),
    createdAt: now,
    updatedAt: now,
  };
  try {
    await notices.insertOne(doc);
    return doc;
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    return (await notices.findOne({ _id: approval._id }))!;
  }
}

type Claim = { kind: 'CLAIMED'; at: Date } | { kind: 'DONE' } | { kind: 'BUSY' };

/** Takes the right to send one message: absent, or held by a sender whose lease ran out. */
async function claim(deps: AppDeps, doc: Omit<NotificationDoc, 'state' | 'claimedAt' | 'sentAt' | 'messageId'>): Promise<Claim> {
  const { notifications } = collectionsOf(deps.store.db);
  const at = deps.now();
  try {
    await notifications.insertOne({ ...doc, state: 'SENDING', claimedAt: at, sentAt: null, messageId: null });
    return { kind: 'CLAIMED', at };
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
  }
  const taken = await notifications.findOneAndUpdate(
    { _id: doc._id, state: 'SENDING', claimedAt: { $lte: new Date(at.getTime() - CLAIM_LEASE_MS) } },
    { $set: { claimedAt: at } },
  );
  if (taken) return { kind: 'CLAIMED', at };
  const current = await notifications.findOne({ _id: doc._id });
  return current?.state === 'SENDING' ? { kind: 'BUSY' } : { kind: 'DONE' };
}

/**
 * Sends the approval's due message to every approver not yet sent it, then moves the approval's notice
 * on (to the reminder, or to nothing). Returns how many messages went out. Throws when a message could
 * not be handed over for a reason worth a retry (the relay is unreachable, a 4xx): those sent stay sent.
 */
export async function sendDueNotice(deps: AppDeps, approvalId: string): Promise<number> {
  const smtp = deps.config.smtp;
  if (smtp === null) return 0;
  const db = deps.store.db;
  const pc = purchaseCollections(db);
  const { notices, notifications } = collectionsOf(db);
  const approval = await pc.approvals.findOne({ _id: approvalId });
  if (!approval) return 0;
  const now = deps.now();
  const open = approval.state === 'PENDING' && approval.expiresAt.getTime() > now.getTime();
  const existing = await notices.findOne({ _id: approvalId });
  if (!open) {
    // Resolved, expired or cancelled: nothing more goes out (no reminder once resolved).
    if (existing && existing.next !== null) await notices.updateOne({ _id: approvalId }, { $set: { next: null, dueAt: null, updatedAt: now } });
    return 0;
  }
  const notice = existing ?? (await noticeFor(deps, approval));
  if (notice.next === null || notice.dueAt === null || notice.dueAt.getTime() > now.getTime()) return 0;
  const kind = notice.next;

  const purchase = await pc.purchases.findOne({ _id: approval.purchaseId });
  const org = await deps.collections.organizations.findOne({ _id: approval.organizationId });
  if (!purchase || !org) return 0;
  // By address: one human listed under two handles (one email) is one person, emailed once, and not at
  // all once they answered or when they made the purchase (docs/reference/decisions.md).
  const everyone = await deps.collections.people.find({ organizationId: approval.organizationId }).sort({ _id: 1 }).toArray();
  const emailOf = new Map(everyone.map((p) => [p._id, p.email]));
  const done = new Set([...answersOf(approval).map((a) => a.personId), initiatorPersonId(purchase)].map((id) => (id === null ? undefined : emailOf.get(id))));
  const addresses = new Set<string>();
  const people = everyone.filter((p) => {
    if (!hasRole(p, 'approver') || !p.email || done.has(p.email) || addresses.has(p.email)) return false;
    addresses.add(p.email);
    return true;
  });
  const agent = await deps.collections.agents.findOne({ _id: approval.agentId });
  const decision = await pc.decisions.findOne({ _id: purchase.decisionId });
  const windows = await windowsHeldBy(deps, approval.organizationId, purchase.windowIds);
  const required = approvalsRequiredOf(approval);
  const approved = answersOf(approval).filter((a) => a.answer === 'APPROVE').length;

  let sent = 0;
  let busy = false;
  let retry: unknown = null;
  for (const person of people) {
    const id = `${approval._id}:${person._id}:${kind}`;
    const claimed = await claim(deps, { _id: id, approvalId: approval._id, organizationId: approval.organizationId, personId: person._id, kind, to: person.email });
    if (claimed.kind === 'DONE') continue;
    if (claimed.kind === 'BUSY') {
      busy = true;
      continue;
    }
    const message = noticeMessage({
      kind,
      to: { name: person.name, email: person.email },
      organization: org,
      purchase,
      agentName: agent?.name ?? 'An agent',
      rules: (decision?.ruleEvaluations ?? []).filter((e) => e.outcome === 'ESCALATE').map((e) => `${e.policyName ?? 'A policy'}: ${e.message ?? e.reasonCode ?? e.rule}`),
      reasonCodes: approval.escalationReasonCodes,
      windows,
      expiresAt: approval.expiresAt,
      now,
      link: `${deps.config.baseUrl}/dashboard/purchases/${purchase._id}`,
      progress: required > 1 ? { approved, required } : null,
    });
    try {
      const info = await sendMail(smtp, { ...message, headers: { 'X-Spend-Control-Approval': approval._id, 'X-Spend-Control-Notice': kind } });
      await notifications.updateOne({ _id: id, claimedAt: claimed.at }, { $set: { state: 'SENT', sentAt: deps.now(), messageId: info.messageId } });
      sent++;
    } catch (error) {
      const refusal = smtpRefusal(error);
      if (refusal !== null) {
        // Refused for good (no such mailbox, say): logged, and not tried again.
        deps.log.warn('the mail relay refused an approver\'s email', { approvalId, personId: person._id, kind, refusal });
        await notifications.updateOne({ _id: id, claimedAt: claimed.at }, { $set: { state: 'REFUSED', refusal } });
        continue;
      }
      // Not handed over: give the claim back, so that the retry sends it.
      await notifications.deleteOne({ _id: id, state: 'SENDING', claimedAt: claimed.at });
      retry ??= error;
    }
  }
  if (retry !== null) throw retry;
  // Another sender holds a claim: it (or, should it die, the sweep after the lease) finishes this step.
  if (busy) return sent;
  const reminder = kind === 'REQUEST' && notice.reminderAt !== null && notice.reminderAt.getTime() > now.getTime() ? notice.reminderAt : null;
  const moved = await notices.updateOne({ _id: approvalId, next: kind }, { $set: { next: reminder ? 'REMINDER' : null, dueAt: reminder, updatedAt: deps.now() } });
  if (reminder && moved.modifiedCount === 1) {
    try {
      await deps.scheduler.schedule(NOTIFY_APPROVAL, reminder, { approvalId });
    } catch (err) {
      deps.log.warn('could not schedule the approval reminder; the sweep will send it', { approvalId, err: String(err) });
    }
  }
  return sent;
}

/**
 * The safety net behind the scheduled jobs: every notice due (for half a minute) and not yet sent, and
 * every approval of the last day whose first email was never started. Stops at the first failure to
 * reach the relay (it is likely down; the next sweep tries again). An approval the relay deferred (a 4xx
 * for one of its messages: a full mailbox) is left to the next sweep and the sweep goes on: taken first
 * each time, it would otherwise hold up every other approver's email. Returns how many messages went out.
 */
export async function sendDueNotices(deps: AppDeps, batch = 100): Promise<number> {
  if (deps.config.smtp === null) return 0;
  const db = deps.store.db;
  const { notices } = collectionsOf(db);
  const now = deps.now();
  let sent = 0;
  try {
    const due = await notices.find({ next: { $in: ['REQUEST', 'REMINDER'] }, dueAt: { $lte: new Date(now.getTime() - GRACE_MS) } }).sort({ dueAt: 1 }).limit(batch).toArray();
    const send = async (approvalId: string) => {
      try {
        sent += await sendDueNotice(deps, approvalId);
      } catch (error) {
        if (!relayDeferred(error)) throw error;
        deps.log.warn('the mail relay deferred an approval email; the next sweep tries again', { approvalId, err: String(error) });
      }
    };
    for (const n of due) await send(n._id);
    let after: { createdAt: Date; _id: string } | null = null;
    for (;;) {
      const range = { $gte: new Date(now.getTime() - LOOKBACK_MS), $lte: new Date(now.getTime() - GRACE_MS) };
      const filter: Record<string, unknown> = after
        ? { state: 'PENDING', createdAt: range, $or: [{ createdAt: { $gt: after.createdAt } }, { createdAt: after.createdAt, _id: { $gt: after._id } }] }
        : { state: 'PENDING', createdAt: range };
      const page = await purchaseCollections(db).approvals.find(filter).sort({ createdAt: 1, _id: 1 }).limit(batch).toArray();
      if (page.length === 0) break;
      const known = new Set((await notices.find({ _id: { $in: page.map((a) => a._id) } }).toArray()).map((n) => n._id));
      for (const a of page) if (!known.has(a._id)) await send(a._id);
      if (page.length < batch) break;
      const last = page[page.length - 1];
      after = { createdAt: last.createdAt, _id: last._id };
    }
  } catch (error) {
    deps.log.warn('approval emails could not all be sent; the next sweep tries again', { err: String(error) });
  }
  return sent;
}
