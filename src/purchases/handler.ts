// The one handler of every purchase command (docs/internals/design.md §1): it owns the organisation's mailbox,
// the transaction and its bounded retries (runCommand), the clock, the storage port, the metrics and
// the work after commit. A command is: load the state, decide (pure: lifecycle.ts), write the record.
import type { AppDeps } from '../app-deps.ts';
import { runCommand } from '../commands/run-command.ts';
import { approvalExpired, decisionRecorded } from '../metrics/metrics.ts';
import { timeEngine } from '../metrics/timing.ts';
import type { StoreSession } from '../store/store.ts';
import { decidePurchase, type PurchaseCommand, type PurchaseOutcome, type PurchaseState } from './lifecycle.ts';
import { transactionalRecords } from './record-writer.ts';

/** The job that expires one pending approval at its expiresAt (src/approvals/jobs.ts defines it). */
export const EXPIRE_APPROVAL = 'approvals.expire';

export type LoadState = (session: StoreSession, now: Date) => Promise<PurchaseState>;

/**
 * Runs one command on a purchase of an organisation: in its mailbox, in one transaction retried as a
 * whole when it lost a race. Returns the outcome once the record has committed.
 */
export async function handlePurchaseCommand(deps: AppDeps, organizationId: string, load: LoadState, command: PurchaseCommand): Promise<PurchaseOutcome> {
  const port = transactionalRecords(deps.store.db);
  let shadowed = false;
  const outcome = await deps.mailboxes.run(organizationId, (applied) =>
    runCommand(
      deps.store,
      async (session) => {
        const now = deps.now();
        const state = await load(session, now);
        shadowed = (state.shadowIds?.length ?? 0) > 0;
        const { outcome, record } = timeEngine(() => decidePurchase(state, command, now));
        if (record !== null) await port.write(record, session);
        return outcome;
      },
      { onApplied: applied },
    ),
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
      }
      return;
    case 'ANSWERED':
      decisionRecorded(outcome.decision, 'APPROVAL_REEVALUATION');
      return;
    case 'CLOSED':
      decisionRecorded(outcome.decision, outcome.decision.kind);
      if (outcome.decision.kind === 'APPROVAL_EXPIRED') approvalExpired((outcome.decision.evaluatedAt.getTime() - outcome.approval.expiresAt.getTime()) / 1000);
      return;
    case 'UNCHANGED':
      return;
  }
}
