// The one handler of every purchase command (docs/internals/design.md §1): it owns the organisation's mailbox,
// the transaction and its bounded retries (runCommand), the clock, the storage port, the metrics and
// the work after commit. A command is: load the state, decide (pure: lifecycle.ts), write the record.
import type { AppDeps } from '../app-deps.ts';
import { runCommand } from '../commands/run-command.ts';
import { approvalExpired, decisionRecorded } from '../metrics/metrics.ts';
import { timeEngine } from '../metrics/timing.ts';
import type { StoreSession } from '../store/store.ts';
import { decidePurchase, type PurchaseCommand, type PurchaseOutcome, type PurchaseState } from './lifecycle.ts';
import { rememberWindows } from '../budgets/window-state.ts';
import { applyWindowWrites } from '../budgets/window-writes.ts';
import { transactionalRecords } from './record-writer.ts';
import { ensureSigningKey } from '../receipts/keys.ts';

/** The job that expires one pending approval at its expiresAt (src/approvals/jobs.ts defines it). */
export const EXPIRE_APPROVAL = 'approvals.expire';
/** The job that emails a pending approval's approvers (src/approvals/notices.ts); scheduled when SMTP is set. */
export const NOTIFY_APPROVAL = 'approvals.notify';

export type LoadState = (session: StoreSession, now: Date) => Promise<PurchaseState>;

/**
 * Runs one command on a purchase of an organisation: in its mailbox, in one transaction retried as a
 * whole when it lost a race. Returns the outcome once the record has committed.
 */
export async function handlePurchaseCommand(deps: AppDeps, organizationId: string, load: LoadState, command: PurchaseCommand): Promise<PurchaseOutcome> {
  const port = transactionalRecords(deps.store.db);
  // Once per process: the key a decision's receipt is signed with exists (made outside any transaction).
  if (command.kind === 'SUBMIT' || command.kind === 'ANSWER') await ensureSigningKey(deps.store, deps.config, deps.log);
  let shadowed = false;
  const actors = deps.actors;
  let attempts = 0;
  const outcome = await actors.run(organizationId, (applied) =>
    runCommand(
      deps.store,
      async (session) => {
        // A retry lost a race: what the actor remembered may be what it lost to.
        if (attempts++ > 0) actors.forget(organizationId);
        const now = deps.now();
        const state = await load(session, now);
        shadowed = (state.shadowIds?.length ?? 0) > 0;
        const { outcome, record } = timeEngine(() => decidePurchase(state, command, now));
        if (record !== null) {
          await port.write(record, session, state.windows);
          // Remembered once applied, so that the organisation's next command (which may start before this
          // one's commit, in the same group) signs on from it and takes its windows as they now stand; a
          // commit that fails forgets it below.
          const windows = rememberWindows(actors.memory(organizationId).windows, applyWindowWrites(state.windows, record.windows));
          actors.remember(organizationId, { windows, ...(record.receipt ? { receiptChain: { seq: record.receipt.seq, head: record.receipt.head } } : {}) });
        }
        return outcome;
      },
      { onApplied: applied },
    ).catch((error: unknown) => {
      actors.forget(organizationId);
      throw error;
    }),
  );
  await afterCommit(deps, outcome);
  // A draft in shadow decides it again later, off the request path: the record left it to the shadow in
  // the store; this only nudges this process's drain, never awaited (src/simulations/shadow.ts).
  if (shadowed && outcome.kind === 'SUBMITTED') deps.shadows?.nudge(outcome.decision.organizationId);
  return outcome;
}

async function afterCommit(deps: AppDeps, outcome: PurchaseOutcome): Promise<void> {
  switch (outcome.kind) {
    case 'SUBMITTED':
      decisionRecorded(outcome.decision, 'INITIAL');
      // If this fails (or the process dies first), the recurring sweep expires the approval anyway.
      if (outcome.expiry !== null) {
        try {
          await deps.scheduler.schedule(EXPIRE_APPROVAL, outcome.expiry.expiresAt, { approvalId: outcome.expiry.approvalId });
        } catch (err) {
          deps.log.warn('could not schedule approval expiry; the sweep will expire it', { approvalId: outcome.expiry.approvalId, err: String(err) });
        }
        // The approvers are emailed by the worker, never on this thread; a lost schedule is swept up too.
        if (deps.config.smtp !== null) {
          try {
            await deps.scheduler.schedule(NOTIFY_APPROVAL, deps.now(), { approvalId: outcome.expiry.approvalId });
          } catch (err) {
            deps.log.warn('could not schedule the approvers\' email; the sweep will send it', { approvalId: outcome.expiry.approvalId, err: String(err) });
          }
        }
      }
      return;
    case 'ANSWERED':
      decisionRecorded(outcome.decision, 'APPROVAL_REEVALUATION');
      return;
    case 'CLOSED':
      decisionRecorded(outcome.decision, outcome.decision.kind);
      if (outcome.decision.kind === 'APPROVAL_EXPIRED') approvalExpired((outcome.decision.evaluatedAt.getTime() - outcome.approval.expiresAt.getTime()) / 1000);
      return;
    case 'ANSWER_RECORDED':
    case 'UNCHANGED':
      return;
  }
}
