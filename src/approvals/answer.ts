// answerApproval: a person answers a pending purchase (docs/internals/design.md §4 item 7, docs/reference/contract.md §3.1), from the
// dashboard, the operator API or the CLI. The answer is an ANSWER command of the purchase lifecycle
// (src/purchases/lifecycle.ts): it re-evaluates against the policies in force now; the hold becomes
// spend or is released. The approval's version makes an answer racing the expiry lose cleanly. With a
// quorum (approvalsRequired > 1) an approval below it is only recorded; the one that reaches it decides.
import type { AppDeps } from '../app-deps.ts';
import { notFound } from '../http/errors.ts';
import { newId } from '../ids.ts';
import { purchaseCollections } from '../purchases/documents.ts';
import { handlePurchaseCommand } from '../purchases/handler.ts';
import { loadPurchaseState } from '../purchases/load.ts';
import { views } from '../purchases/projection.ts';
import { currentReadbacks } from '../purchases/read.ts';

export interface AnswerCommand {
  purchaseId: string;
  answer: 'APPROVE' | 'REJECT';
  personHandle: string;
  comment: string | null;
  /** Set by the dashboard: another organisation's purchase is then indistinguishable from none. */
  organizationId?: string;
}

export interface AnswerResult {
  /** The purchase as its agent reads it back, after the answer. */
  purchase: Awaited<ReturnType<typeof currentReadbacks>>[number];
  /**
   * The receipt of the decision the answer made (APPROVAL_REEVALUATION, docs/integrate/receipts.md): the
   * operator API's Decision-Receipt header. Absent when the answer was only recorded below the quorum.
   */
  receipt?: string;
}

export async function answerApproval(deps: AppDeps, cmd: AnswerCommand): Promise<AnswerResult> {
  const pc = purchaseCollections(deps.store.db);
  const first = await pc.purchases.findOne({ _id: cmd.purchaseId, ...(cmd.organizationId ? { organizationId: cmd.organizationId } : {}) });
  if (!first) throw notFound('purchase request');
  const outcome = await handlePurchaseCommand(
    deps,
    first.organizationId,
    (session, now) => loadPurchaseState(deps, session, first._id, now, { answeredBy: cmd.personHandle }),
    { kind: 'ANSWER', ids: { decisionId: newId() }, answer: cmd.answer, personHandle: cmd.personHandle, comment: cmd.comment },
  );
  if (outcome.kind === 'ANSWERED') return { purchase: outcome.purchase, receipt: outcome.receipt };
  if (outcome.kind !== 'ANSWER_RECORDED') throw new Error(`an answer ended ${outcome.kind}`);
  // Below the quorum nothing but the approval changed: the purchase's view, as the answer's record wrote it.
  const view = await views(deps.store.db).purchaseViews.findOne({ _id: first._id });
  if (!view) throw new Error(`purchase ${first._id} has no view`);
  const [purchase] = await currentReadbacks(deps.store.db, [view]);
  return { purchase };
}
