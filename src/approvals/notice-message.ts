// The email an approver receives when a purchase needs a person, and the one reminder before it expires
// (docs/approve/approvals.md). Pure: the facts in, the subject, text and HTML out. Amounts in the
// currency's own format from the integer of minor units, times in the organisation's zone, exactly as
// the dashboard shows them (src/dashboard/html.ts).
import type { MailMessage } from '../mail/smtp.ts';
import type { WindowView } from '../dashboard/queries.ts';
import { html, money, timeLeft, when, withoutBidiControls } from '../dashboard/html.ts';

export type NoticeKind = 'REQUEST' | 'REMINDER';

export interface NoticeFacts {
  kind: NoticeKind;
  to: { name: string; email: string };
  organization: { name: string; timezone: string };
  purchase: { amountMinor: number | bigint; currency: string; merchant: string; reason: string; category: string | null };
  agentName: string;
  /** The rules that asked for a person, as sentences (policy: message). */
  rules: string[];
  /** Their reason codes (APPROVAL_THRESHOLD_EXCEEDED, …). */
  reasonCodes: string[];
  windows: WindowView[];
  expiresAt: Date;
  now: Date;
  /** The approval on the dashboard: opening it changes nothing. */
  link: string;
  /** Approvals so far of those required, when more than one is (a quorum). */
  progress: { approved: number; required: number } | null;
}

const periodLabel = (w: WindowView) => (w.periodKind === 'DAY' ? `day ${w.periodKey}` : `month ${w.periodKey}`);

function windowSentence(w: WindowView): string {
  const used = w.openingBalanceMinor + w.committedMinor;
  const limits = w.limits.map((l) => `limit ${money(l.limitMinor, w.currency)} (${l.effect === 'BLOCK' ? 'refuses beyond' : 'asks a person beyond'})`);
  return `${w.policyName}, ${periodLabel(w)}: ${money(used, w.currency)} spent, ${money(w.heldMinor, w.currency)} held for approvals (this one included)${limits.length > 0 ? `; ${limits.join('; ')}` : ''}`;
}

/**
 * The reason as the agent wrote it, line by line: its line breaks are kept (the contract stores it as sent),
 * but each line after the first is marked as quoted, so that a reason cannot forge a line of the email
 * ("Toner\nAmount: 1.00 EUR" reads "Reason: Toner", then "  > Amount: 1.00 EUR"). Every break a mail
 * client may draw is one: CR, LF, CRLF, VT, FF, NEL and the Unicode line and paragraph separators.
 */
const quoted = (text: string): string[] => text.split(/\r\n|[\n\r\v\f\u0085\u2028\u2029]/).map((line, i) => (i === 0 ? line : `> ${line}`));

export function noticeMessage(f: NoticeFacts): MailMessage {
  const amount = money(f.purchase.amountMinor, f.purchase.currency);
  const zone = f.organization.timezone;
  const expires = `${when(f.expiresAt, zone)} (${zone})`;
  const progress = f.progress ? `${f.progress.approved} of ${f.progress.required} approvals` : null;
  const reminder = f.kind === 'REMINDER';
  const subject = `${reminder ? 'Reminder: approval needed' : 'Approval needed'}: ${amount} at ${f.purchase.merchant} for ${f.agentName}`;
  const lead = reminder
    ? `A purchase still waits for an answer${progress ? ` (${progress} so far)` : ''}; it expires ${timeLeft(f.expiresAt, f.now).replace(/ left$/, '')} from now, at ${when(f.expiresAt, zone)}. Unanswered, it is refused.`
    : `${f.agentName} asks to spend ${amount} at ${f.purchase.merchant}, and the policies of ${f.organization.name} ask a person to decide${progress ? ` (${f.progress!.required} approvals are needed)` : ''}.`;
  const rules = f.rules.length > 0 ? f.rules : [f.reasonCodes.join(', ')];
  // Each fact's value as lines: in the text, a value's further lines are indented, so that none starts a line of its own.
  const facts: [string, string[]][] = [
    ['Amount', [amount]],
    ['Merchant', [f.purchase.merchant]],
    ['Agent', [f.agentName]],
    ['Reason', quoted(f.purchase.reason)],
    ...(f.purchase.category ? ([['Category', [f.purchase.category]]] as [string, string[]][]) : []),
    ['Why a person is asked', [`${rules.join('; ')} (${f.reasonCodes.join(', ')})`]],
    ['Budget it holds', f.windows.length > 0 ? f.windows.map(windowSentence) : ['no budget window']],
    ...(progress ? ([['Approvals', [progress]]] as [string, string[]][]) : []),
    ['Expires', [expires]],
  ];
  const text = [
    `Hello ${f.to.name},`,
    '',
    lead,
    '',
    ...facts.map(([k, lines]) => `${k}: ${lines.join('\n  ')}`),
    '',
    `Open it on the dashboard: ${f.link}`,
    'Opening the link changes nothing. To answer, sign in to the dashboard and choose Approve or Reject there.',
    '',
    `You receive this as an approver of ${f.organization.name}.`,
  ].join('\n');
  const body = html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${subject}</title></head><body>
<p>Hello ${f.to.name},</p>
<p>${lead}</p>
<table role="presentation">${facts.map(([k, lines]) => html`<tr><th scope="row" align="left" valign="top">${k}</th><td>${lines.map((line, i) => (i === 0 ? html`${line}` : html`<br>${line}`))}</td></tr>`)}</table>
<p><a href="${f.link}">Open it on the dashboard</a></p>
<p>Opening the link changes nothing. To answer, sign in to the dashboard and choose Approve or Reject there.</p>
<p style="color:#555">You receive this as an approver of ${f.organization.name}.</p>
</body></html>`;
  // The subject and text as the HTML shows them: no agent's bidi override drawing a merchant backwards.
  return { to: f.to.email, subject: withoutBidiControls(subject), text: withoutBidiControls(text), html: body.text };
}
