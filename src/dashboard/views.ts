// The dashboard's pages. Plain HTML forms that work without JavaScript; labelled fields, one h1 per
// page, a skip link, errors announced with role="alert", status changes with aria-live. Every value
// goes through the `html` template, which escapes it.
import type { OrganizationDoc, PersonDoc, PersonRole } from '../store/collections.ts';
import type { ConnectionDoc } from '../identity/connections/documents.ts';
import { REVOKED_LISTED_DAYS } from '../identity/revoked-listing.ts';
import { answersOf, approvalsRequiredOf, type ApprovalDoc, type DecisionDoc } from '../purchases/documents.ts';
import { rolesOf } from '../identity/people/roles.ts';
import { ASSETS } from './assets.ts';
import { Html, html, money, timeLeft, when } from './html.ts';
import { OUTCOMES, PURCHASE_STATUSES, type InboxItem, type PurchaseDetail, type PurchaseFilters, type WindowView } from './queries.ts';

export interface Viewer {
  person: PersonDoc;
  organization: OrganizationDoc;
  csrf: string;
  /**
   * On the inbox: the viewer's id and those of every record of the organisation with their email, one
   * person (docs/reference/decisions.md), as the answer command counts them. Absent: their id alone.
   */
  selfIds?: ReadonlySet<string>;
}

type NavKey = 'inbox' | 'purchases' | 'new' | 'budgets' | 'policies' | 'connections' | 'keys' | 'none';

const NAV: { key: NavKey; href: string; label: string; role?: PersonRole }[] = [
  { key: 'inbox', href: '/dashboard', label: 'Approvals' },
  { key: 'purchases', href: '/dashboard/purchases', label: 'Purchases' },
  { key: 'new', href: '/dashboard/purchases/new', label: 'New purchase', role: 'approver' },
  { key: 'budgets', href: '/dashboard/budgets', label: 'Budgets' },
  { key: 'policies', href: '/dashboard/policies', label: 'Policies' },
  { key: 'connections', href: '/dashboard/connections', label: 'Connections', role: 'admin' },
  { key: 'keys', href: '/dashboard/keys', label: 'API keys', role: 'admin' },
];

export const csrfField = (csrf: string) => html`<input type="hidden" name="csrf" value="${csrf}">`;

export function layout(title: string, body: Html, viewer: Viewer | null, current: NavKey = 'none'): string {
  const roles = viewer ? rolesOf(viewer.person) : [];
  const header = viewer
    ? html`<header>
<nav aria-label="Dashboard"><ul>${NAV.filter((n) => !n.role || roles.includes(n.role)).map(
        (n) => html`<li><a href="${n.href}"${n.key === current ? html` aria-current="page"` : ''}>${n.label}</a></li>`,
      )}</ul></nav>
<div class="who">${viewer.person.name} (${roles.join(', ')}) · ${viewer.organization.name}</div>
<form method="post" action="/dashboard/sign-out">${csrfField(viewer.csrf)}<button type="submit">Sign out</button></form>
</header>`
    : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Spend control</title>
<link rel="stylesheet" href="${ASSETS.css.path}">
${viewer ? html`<script src="${ASSETS.js.path}" defer></script>` : ''}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${header}
<main id="main">
${body}
</main>
</body>
</html>`.text;
}

/** An error message; with the command's stable error code as data-code, for scripts and tests. */
const alert = (message: string | undefined, code?: string) =>
  message ? (code ? html`<div class="alert" role="alert" data-code="${code}">${message}</div>` : html`<div class="alert" role="alert">${message}</div>`) : '';
const notice = (message: string | undefined) => (message ? html`<div class="notice" role="status">${message}</div>` : '');
const badge = (value: string) => html`<span class="badge ${value}">${value.replace(/_/g, ' ').toLowerCase()}</span>`;

export function signInPage(v: { token: string; email?: string; error?: string; next?: string | null }): string {
  const described = v.error ? html` aria-describedby="sign-in-error" aria-invalid="true"` : '';
  return layout(
    'Sign in',
    html`<div class="card">
<h1>Sign in to your organisation's dashboard</h1>
${v.error ? html`<div class="alert" role="alert" id="sign-in-error">${v.error}</div>` : ''}
<form method="post" action="/dashboard/sign-in">
<input type="hidden" name="token" value="${v.token}">
${v.next ? html`<input type="hidden" name="next" value="${v.next}">` : ''}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${v.email ?? ''}"${described}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${described}>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
<p class="muted">Your operator sets your password (<code>npm run admin -- set-password</code>).</p>
</div>`,
    null,
  );
}

export const messagePage = (viewer: Viewer | null, title: string, message: string) =>
  layout(title, html`<h1>${title}</h1><div class="alert" role="alert">${message}</div><p><a href="/dashboard">Back to the dashboard</a></p>`, viewer);

/** What is left under a limit, or by how much it is exceeded. */
const headroom = (left: bigint, currency: string) => (left < 0n ? `${money(-left, currency)} over` : `${money(left, currency)} left`);

function usedOf(w: WindowView) {
  return w.openingBalanceMinor + w.committedMinor;
}

/** One budget window as a stacked bar (opening balance, committed, held) against its limits. */
function windowBar(w: WindowView) {
  const top = w.limits.reduce((m, l) => (l.limitMinor > m ? l.limitMinor : m), 0n);
  const total = usedOf(w) + w.heldMinor;
  const scale = top > total ? top : total > 0n ? total : 1n;
  const width = (x: bigint) => Number((x * 1000n) / scale);
  const segments: [string, bigint][] = [['opening', w.openingBalanceMinor], ['committed', w.committedMinor], ['held', w.heldMinor]];
  let x = 0;
  const rects = segments.map(([cls, amount]) => {
    const rect = html`<rect class="${cls}" x="${x}" y="0" width="${width(amount)}" height="16"></rect>`;
    x += width(amount);
    return rect;
  });
  const label = `${money(w.committedMinor, w.currency)} committed, ${money(w.heldMinor, w.currency)} held, ${money(w.openingBalanceMinor, w.currency)} opening balance, of ${top > 0n ? money(top, w.currency) : 'no limit'}`;
  return html`<svg class="bar" viewBox="0 0 1000 16" preserveAspectRatio="none" role="img" aria-label="${label}" data-committed="${w.committedMinor}" data-held="${w.heldMinor}">
<rect x="0" y="0" width="1000" height="16" fill="#e5e7eb"></rect>${rects}</svg>`;
}

const periodLabel = (w: WindowView) => (w.periodKind === 'DAY' ? `day ${w.periodKey}` : `month ${w.periodKey}`);

function windowLine(w: WindowView, zone: string) {
  return html`<li data-window="${w.id}"><strong>${w.policyName}</strong>, ${periodLabel(w)} (${w.currency}):
used ${money(usedOf(w), w.currency)}, held ${money(w.heldMinor, w.currency)}${w.limits.map((l) => {
    return html`; limit ${money(l.limitMinor, w.currency)} (${l.effect === 'BLOCK' ? 'refuses beyond' : 'asks a person beyond'}), approving leaves <strong>${headroom(l.limitMinor - usedOf(w) - w.heldMinor, w.currency)}</strong>`;
  })}. <span class="muted">Resets ${when(w.periodEnd, zone)}.</span></li>`;
}

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);

/** Quorum progress ("1 of 2 approvals") and the answers so far: who, when, and their comment. */
function quorumProgress(a: ApprovalDoc, zone: string) {
  const required = approvalsRequiredOf(a);
  const answers = answersOf(a);
  if (required === 1 && answers.length === 0) return html``;
  const approvals = answers.filter((x) => x.answer === 'APPROVE').length;
  return html`<div class="quorum"><p><strong data-quorum="${approvals}/${required}">${approvals} of ${required} ${plural(required, 'approval', 'approvals')}</strong>${
    a.state === 'PENDING' && approvals < required ? html` <span class="muted">(${required - approvals} more ${plural(required - approvals, 'approver', 'approvers')} must approve; one rejection refuses it)</span>` : ''
  }</p>${
    answers.length > 0
      ? html`<ul class="answers">${answers.map(
          (x) => html`<li>${x.name} ${x.answer === 'APPROVE' ? 'approved' : 'rejected'} <span class="muted">${when(x.answeredAt, zone)}</span>${x.comment ? html`: “<span class="lines">${x.comment}</span>”` : ''}</li>`,
        )}</ul>`
      : ''
  }</div>`;
}

function inboxCard(item: InboxItem, viewer: Viewer, now: Date, canAnswer: boolean) {
  const p = item.purchase;
  const zone = viewer.organization.timezone;
  const codes = [...new Set([...(p.decision?.reasonCodes ?? []), ...item.approval.escalationReasonCodes])];
  const id = `approval-${p.id}`;
  const self = viewer.selfIds ?? new Set([viewer.person._id]);
  const ownPurchase = item.initiatorPersonId !== null && self.has(item.initiatorPersonId);
  // Each person counts once: who has answered has nothing left to do here.
  const mine = answersOf(item.approval).find((x) => self.has(x.personId));
  return html`<li class="card" data-id="${p.id}" aria-labelledby="${id}">
<div class="row"><h2 id="${id}" class="amount">${money(p.amountMinor, p.currency)} at ${p.merchant}</h2><span>for agent <strong>${p.agent.name}</strong></span></div>
<p><strong>Reason:</strong> <span class="lines">${p.reason}</span></p>
<p>${p.decision?.explanation ?? ''} <span class="codes">${codes.join(', ')}</span></p>
${item.windows.length > 0 ? html`<p>Budgets it holds:</p><ul class="windows" data-live="windows">${item.windows.map((w) => windowLine(w, zone))}</ul>` : html`<p class="muted">It holds no budget window.</p>`}
<div data-live="quorum">${quorumProgress(item.approval, zone)}</div>
<p><span data-live="left"><strong>${timeLeft(item.approval.expiresAt, now)}</strong></span> <span class="muted">(expires ${when(item.approval.expiresAt, zone)}; asked ${when(p.requestedAt, zone)})</span> · <a href="/dashboard/purchases/${p.id}">Details</a></p>
${mine
    ? html`<p class="muted answered">You approved it ${when(mine.answeredAt, zone)}; other approvers must answer now.</p>`
    : canAnswer
    ? html`<form method="post" action="/dashboard/approvals/${p.id}/answer">
${csrfField(viewer.csrf)}
<label for="comment-${p.id}">Comment (optional)</label>
<textarea id="comment-${p.id}" name="comment" maxlength="2000"></textarea>
<div class="actions">${ownPurchase ? html`<span class="muted">You made this purchase, so another approver must approve it; you can reject it.</span>` : html`<button class="primary" type="submit" name="answer" value="APPROVE">Approve</button>`}<button class="danger" type="submit" name="answer" value="REJECT">Reject</button></div>
</form>`
    : ''}
</li>`;
}

export function inboxList(items: InboxItem[], viewer: Viewer, now: Date, canAnswer: boolean) {
  return html`<ol class="cards" id="inbox-list" data-live="/dashboard/inbox/live" data-every="3000">${items.map((i) => inboxCard(i, viewer, now, canAnswer))}</ol>`;
}

export function inboxPage(viewer: Viewer, items: InboxItem[], now: Date, canAnswer: boolean, messages: { notice?: string; error?: string; code?: string; emailOff?: boolean } = {}) {
  return layout(
    'Approvals',
    html`<h1>Waiting for approval</h1>
${alert(messages.error, messages.code)}${notice(messages.notice)}
${canAnswer ? '' : html`<p class="muted">You can follow approvals here; people with the approver role answer them.</p>`}
${messages.emailOff ? html`<p class="muted" data-email="off">Approvers are not emailed about new approvals: this service has no mail server configured (<code>SMTP_URL</code>). Look here for what waits.</p>` : ''}
<p id="inbox-status" class="muted" aria-live="polite"></p>
<p id="inbox-empty" class="muted"${items.length > 0 ? html` hidden` : ''}>Nothing is waiting for an answer.</p>
${inboxList(items, viewer, now, canAnswer)}`,
    viewer,
    'inbox',
  );
}

/** The inbox list alone, polled by the page's script. */
export const inboxFragment = (items: InboxItem[], viewer: Viewer, now: Date, canAnswer: boolean) =>
  `<!doctype html><html lang="en"><body>${inboxList(items, viewer, now, canAnswer).text}</body></html>`;

type Readback = InboxItem['purchase'];

function select(name: string, label: string, options: { value: string; text: string }[], selected: string | undefined) {
  return html`<div><label for="${name}">${label}</label><select id="${name}" name="${name}"><option value="">Any</option>${options.map(
    (o) => html`<option value="${o.value}"${o.value === selected ? html` selected` : ''}>${o.text}</option>`,
  )}</select></div>`;
}

export function purchasesPage(viewer: Viewer, v: { filters: PurchaseFilters; agents: { _id: string; name: string }[]; purchases: Readback[]; nextCursor: string | null; error?: string }) {
  const zone = viewer.organization.timezone;
  const f = v.filters;
  const query = new URLSearchParams(Object.entries({ agent: f.agentId, status: f.status, outcome: f.outcome, from: f.from, to: f.to, merchant: f.merchant }).filter((e): e is [string, string] => !!e[1]));
  const next = v.nextCursor ? `/dashboard/purchases?${new URLSearchParams([...query, ['cursor', v.nextCursor]])}` : null;
  return layout(
    'Purchases',
    html`<h1>Purchases</h1>
${alert(v.error)}
<form method="get" action="/dashboard/purchases" class="card" aria-label="Filter purchases"><div class="filters">
${select('agent', 'Agent', v.agents.map((a) => ({ value: a._id, text: a.name })), f.agentId)}
${select('status', 'Status', PURCHASE_STATUSES.map((s) => ({ value: s, text: s.replace(/_/g, ' ').toLowerCase() })), f.status)}
${select('outcome', 'Decision', OUTCOMES.map((s) => ({ value: s, text: s.replace(/_/g, ' ').toLowerCase() })), f.outcome)}
<div><label for="from">From</label><input id="from" name="from" type="date" value="${f.from ?? ''}"></div>
<div><label for="to">To</label><input id="to" name="to" type="date" value="${f.to ?? ''}"></div>
<div><label for="merchant">Merchant</label><input id="merchant" name="merchant" type="search" maxlength="200" value="${f.merchant ?? ''}"></div>
<div><button type="submit" class="primary">Filter</button> <a href="/dashboard/purchases">Clear</a></div>
</div></form>
${v.purchases.length === 0 ? html`<p class="muted">No purchases match.</p>` : html`<div class="scroll"><table>
<caption class="muted">Newest first, times in ${zone}</caption>
<thead><tr><th scope="col">Requested</th><th scope="col">Merchant</th><th scope="col">Amount</th><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Origin</th></tr></thead>
<tbody>${v.purchases.map(
      (p) => html`<tr><td>${when(p.requestedAt, zone)}</td><td><a href="/dashboard/purchases/${p.id}">${p.merchant}</a></td><td>${money(p.amountMinor, p.currency)}</td><td>${p.agent.name}</td><td>${badge(p.status)}</td><td>${p.origin ?? ''}${p.initiatedBy ? ` by ${p.initiatedBy.name}` : ''}</td></tr>`,
    )}</tbody></table></div>`}
<p>${f.cursor ? html`<a href="/dashboard/purchases?${query.toString()}">First page</a> ` : ''}${next ? html`<a href="${next}" rel="next">Older purchases</a>` : ''}</p>`,
    viewer,
    'purchases',
  );
}

function decisionBlock(d: DecisionDoc, zone: string) {
  return html`<li class="card"><div class="row">${badge(d.outcome)} <strong>${d.kind.replace(/_/g, ' ').toLowerCase()}</strong> <span class="muted">${when(d.evaluatedAt, zone)} · ${d.engineVersion}</span></div>
<p>${d.explanation}</p><p class="codes">${d.reasonCodes.join(', ')}</p>
${d.ruleEvaluations.length > 0 ? html`<details><summary>Rules evaluated (${d.ruleEvaluations.length})</summary><div class="scroll"><table><thead><tr><th scope="col">Policy</th><th scope="col">Rule</th><th scope="col">Outcome</th><th scope="col">Message</th></tr></thead><tbody>${d.ruleEvaluations.map(
    (e) => html`<tr><td>${String(e.policyName ?? '')}</td><td>${String(e.rule)} (${String(e.role)})</td><td>${String(e.outcome)}</td><td>${String(e.message ?? '')}</td></tr>`,
  )}</tbody></table></div></details>` : ''}</li>`;
}

/** `waiting`: the purchase's pending approval, answered on this page as in the inbox. */
export function purchaseDetailPage(viewer: Viewer, d: PurchaseDetail, waiting?: { item: InboxItem; now: Date; canAnswer: boolean }) {
  const zone = viewer.organization.timezone;
  const p = d.purchase;
  const a = d.approval;
  return layout(
    `${p.merchant} purchase`,
    html`<h1>${money(p.amountMinor, p.currency)} at ${p.merchant}</h1>
<div class="card"><dl class="facts">
<dt>Status</dt><dd>${badge(p.status)}</dd>
<dt>Agent</dt><dd>${p.agent.name}</dd>
<dt>Reason</dt><dd class="lines">${p.reason}</dd>
<dt>Category</dt><dd>${p.category ?? '—'}</dd>
<dt>Requested</dt><dd>${when(p.requestedAt, zone)}</dd>
<dt>Resolved</dt><dd>${p.resolvedAt ? when(p.resolvedAt, zone) : '—'}</dd>
<dt>Origin</dt><dd>${p.origin ?? '—'}${p.initiatedBy ? ` (by ${p.initiatedBy.name})` : ''}${p.submittedVia ? (p.submittedVia.type === 'API_KEY' ? ` via key ${p.submittedVia.apiKeyPrefix}` : ` via ${p.submittedVia.application}`) : ''}</dd>
</dl></div>
<h2>Approval</h2>
${a
  ? html`<div class="card"><dl class="facts">
<dt>State</dt><dd>${badge(a.state)}</dd>
<dt>Why a person was asked</dt><dd class="codes">${a.escalationReasonCodes.join(', ')}</dd>
<dt>Expires</dt><dd>${when(a.expiresAt, zone)}</dd>
<dt>Answered by</dt><dd>${a.resolvedBy?.name ?? '—'}${a.resolvedAt ? html` <span class="muted">${when(a.resolvedAt, zone)}</span>` : ''}</dd>
<dt>Comment</dt><dd class="lines">${a.comment ?? '—'}</dd>
</dl>${quorumProgress(a, zone)}</div>${waiting ? html`<ol class="cards">${inboxCard(waiting.item, viewer, waiting.now, waiting.canAnswer)}</ol>` : ''}`
  : html`<p class="muted">No person was asked: the policies decided alone.</p>`}
<h2>Decision history</h2>
<ol class="cards">${d.decisions.map((x) => decisionBlock(x, zone))}</ol>`,
    viewer,
    'purchases',
  );
}

export function budgetsPage(viewer: Viewer, windows: WindowView[]) {
  const zone = viewer.organization.timezone;
  return layout(
    'Budgets',
    html`<h1>Budgets this period</h1>
<p class="legend muted"><span><i class="opening"></i>Opening balance</span> · <span><i class="committed"></i>Committed</span> · <span><i class="held"></i>Held for approvals</span> · times in ${zone}</p>
${windows.length === 0 ? html`<p class="muted">No policy in force has a daily or monthly spend limit.</p>` : ''}
<ul class="cards">${windows.map(
      (w) => html`<li class="card" data-window="${w.id}"><h2>${w.policyName} · ${w.currency} · ${periodLabel(w)}</h2>
${windowBar(w)}
<dl class="facts">
<dt>Committed</dt><dd data-field="committed">${money(w.committedMinor, w.currency)}</dd>
<dt>Held</dt><dd data-field="held">${money(w.heldMinor, w.currency)}</dd>
<dt>Opening balance</dt><dd>${money(w.openingBalanceMinor, w.currency)}</dd>
${w.limits.map((l) => html`<dt>Limit (${l.effect === 'BLOCK' ? 'refuses beyond' : 'asks a person beyond'})</dt><dd>${money(l.limitMinor, w.currency)}, ${headroom(l.limitMinor - usedOf(w) - w.heldMinor, w.currency)}</dd>`)}
<dt>Resets</dt><dd>${when(w.periodEnd, zone)}</dd>
</dl></li>`,
    )}</ul>`,
    viewer,
    'budgets',
  );
}

export interface PurchaseFormValues {
  agentId?: string;
  merchant?: string;
  amount?: string;
  currency?: string;
  reason?: string;
  category?: string;
}

export function newPurchasePage(viewer: Viewer, v: { agents: { _id: string; name: string }[]; token: string; values?: PurchaseFormValues; error?: string }) {
  const values = v.values ?? {};
  const currency = values.currency ?? viewer.organization.currency;
  return layout(
    'New purchase',
    html`<h1>Request a purchase for an agent</h1>
<p>The same policies decide it as if the agent asked; it is recorded as a dashboard purchase made by you.</p>
${alert(v.error)}
<form method="post" action="/dashboard/purchases" class="card">
${csrfField(viewer.csrf)}<input type="hidden" name="token" value="${v.token}">
<label for="agent">Agent</label>
<select id="agent" name="agent" required>${v.agents.map((a) => html`<option value="${a._id}"${a._id === values.agentId ? html` selected` : ''}>${a.name}</option>`)}</select>
<label for="merchant">Merchant</label><input id="merchant" name="merchant" required maxlength="200" value="${values.merchant ?? ''}">
<label for="amount">Amount</label><input id="amount" name="amount" required inputmode="decimal" pattern="[0-9]+([.][0-9]+)?" aria-describedby="amount-help" value="${values.amount ?? ''}">
<p id="amount-help" class="muted">In major units with a dot, for example 125.50.</p>
<label for="currency">Currency</label><input id="currency" name="currency" required pattern="[A-Z]{3}" maxlength="3" value="${currency}">
<label for="reason">Reason</label><textarea id="reason" name="reason" required maxlength="2000">${values.reason ?? ''}</textarea>
<label for="category">Category (optional)</label><input id="category" name="category" maxlength="200" value="${values.category ?? ''}">
<div class="actions"><button class="primary" type="submit">Request purchase</button></div>
</form>`,
    viewer,
    'new',
  );
}

export function connectionsPage(viewer: Viewer, rows: { connection: ConnectionDoc; agentName: string }[], message?: string) {
  const zone = viewer.organization.timezone;
  return layout(
    'Connections',
    html`<h1>Connected applications</h1>${notice(message)}
${rows.length === 0 ? html`<p class="muted">No application is connected, nor was one revoked in the last ${REVOKED_LISTED_DAYS} days.</p>` : html`<p class="muted">Connections revoked more than ${REVOKED_LISTED_DAYS} days ago are not listed.</p><div class="scroll"><table>
<thead><tr><th scope="col">Application</th><th scope="col">Agent</th><th scope="col">Scopes</th><th scope="col">Granted by</th><th scope="col">Last used</th><th scope="col">State</th></tr></thead>
<tbody>${rows.map(({ connection: c, agentName }) => html`<tr><td>${c.applicationName}<br><span class="muted">${c.clientId}</span></td><td>${agentName}</td><td class="codes">${c.scopes.join(' ')}</td><td>${c.grantedBy.name}<br><span class="muted">${when(c.createdAt, zone)}</span></td><td>${c.lastUsedAt ? when(c.lastUsedAt, zone) : 'never'}</td>
<td>${c.revokedAt ? html`revoked ${when(c.revokedAt, zone)}` : html`<form method="post" action="/dashboard/connections/${c._id}/revoke" data-confirm="Revoke ${c.applicationName} for ${agentName}? It cannot be undone.">${csrfField(viewer.csrf)}<button class="danger" type="submit" aria-label="Revoke ${c.applicationName} for ${agentName}">Revoke</button></form>`}</td></tr>`)}</tbody></table></div>`}`,
    viewer,
    'connections',
  );
}

export function keysPage(viewer: Viewer, rows: { prefix: string; id: string; agentName: string | null; lastUsedAt: Date | null; revokedAt: Date | null; expiresAt: Date | null; createdAt: Date }[], message?: string) {
  const zone = viewer.organization.timezone;
  return layout(
    'API keys',
    html`<h1>API keys</h1>${notice(message)}
<p class="muted">Keys are issued by applying the organisation's manifest; the secret is shown only then.</p>
${rows.length === 0 ? html`<p class="muted">No keys, nor was one revoked in the last ${REVOKED_LISTED_DAYS} days.</p>` : html`<p class="muted">Keys revoked more than ${REVOKED_LISTED_DAYS} days ago are not listed.</p><div class="scroll"><table>
<thead><tr><th scope="col">Prefix</th><th scope="col">Agent</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th></tr></thead>
<tbody>${rows.map((k) => html`<tr><td class="codes">${k.prefix}</td><td>${k.agentName ?? 'organisation-wide'}</td><td>${when(k.createdAt, zone)}</td><td>${k.lastUsedAt ? when(k.lastUsedAt, zone) : 'never'}</td>
<td>${k.revokedAt ? html`revoked ${when(k.revokedAt, zone)}` : html`${k.expiresAt ? html`<span class="muted">expires ${when(k.expiresAt, zone)}</span> ` : ''}<form method="post" action="/dashboard/keys/${k.id}/revoke" data-confirm="Revoke key ${k.prefix}? It cannot be undone.">${csrfField(viewer.csrf)}<button class="danger" type="submit" aria-label="Revoke key ${k.prefix}">Revoke</button></form>`}</td></tr>`)}</tbody></table></div>`}`,
    viewer,
    'keys',
  );
}

export interface SimulationView {
  outcome: string;
  reasonCodes: string[];
  explanation: string;
  budgets: { policyName: string; periodKey: string; currency: string; limits: { limitMinor: string; remainingAfterMinor: string; wouldExceed: boolean }[] }[];
}

export interface PolicyRow {
  id: string;
  name: string;
  status: string;
  scopeType: string;
  description: string | null;
  versions: { label: 'Active' | 'Draft'; versionNumber: number; currencies: string[]; rules: { ruleType: string; effect: string; periodKind: string; amountMinor: number; currency: string | null }[]; merchants: { listType: string; label: string }[] }[];
  simulation?: { draft: SimulationView; active: SimulationView | null } | { error: string };
  form?: { merchant: string; amount: string; currency: string };
  /** The draft's version id and whether it is in shadow; `canShadow` for admins. */
  draft?: { id: string; shadow: boolean; canShadow: boolean };
  /** Version ids to replay (active, draft), and the replay asked for on this page. */
  replayable: { id: string; label: string }[];
  replay?: { versionId: string; from: string; to: string; result: { summary: { evaluated: number; changed: number; byTransition: Record<string, number> }; changes: ReplayChangeView[] } | { error: string } };
}

export interface ReplayChangeView {
  purchaseRequestId: string;
  merchant: string;
  amountMinor: string;
  currency: string;
  requestedAt: string;
  recorded: { outcome: string; reasonCodes: string[] };
  replayed: { outcome: string; reasonCodes: string[] };
}

/** The replay form of a policy, and the table of the changes it found (docs/integrate/simulations.md#replay). */
function replayBlock(viewer: Viewer, p: PolicyRow) {
  const r = p.replay;
  return html`<form method="get" action="/dashboard/policies#replay-${p.id}" aria-label="Replay a version of ${p.name} over recorded purchases">
<input type="hidden" name="replay" value="${p.id}">
<h3 id="replay-${p.id}">Replay over recorded purchases</h3><div class="filters">
<div><label for="rv-${p.id}">Version</label><select id="rv-${p.id}" name="version">${p.replayable.map((v) => html`<option value="${v.id}"${r?.versionId === v.id ? ' selected' : ''}>${v.label}</option>`)}</select></div>
<div><label for="rf-${p.id}">From</label><input id="rf-${p.id}" name="from" type="date" required value="${r?.from ?? ''}"></div>
<div><label for="rt-${p.id}">To (inclusive)</label><input id="rt-${p.id}" name="to" type="date" required value="${r?.to ?? ''}"></div>
<div><button type="submit">Replay</button></div></div></form>
${r ? ('error' in r.result ? alert(r.result.error) : html`<p data-replay-summary>${r.result.summary.evaluated} purchases replayed, ${r.result.summary.changed} changed${Object.entries(r.result.summary.byTransition).map(([k, n]) => `; ${k.replace('->', ' → ')}: ${n}`).join('')}.</p>
${r.result.changes.length > 0 ? html`<table><thead><tr><th>Requested</th><th>Merchant</th><th>Amount</th><th>Recorded</th><th>Replayed</th></tr></thead><tbody>
${r.result.changes.map((c) => html`<tr><td>${c.requestedAt.slice(0, 16).replace('T', ' ')}</td><td><a href="/dashboard/purchases/${c.purchaseRequestId}">${c.merchant}</a></td><td>${money(c.amountMinor, c.currency)}</td><td>${badge(c.recorded.outcome)} <span class="codes">${c.recorded.reasonCodes.join(', ')}</span></td><td>${badge(c.replayed.outcome)} <span class="codes">${c.replayed.reasonCodes.join(', ')}</span></td></tr>`)}
</tbody></table>` : ''}`) : ''}
${p.draft?.canShadow ? html`<form method="post" action="/dashboard/policies/${p.id}/versions/${p.draft.id}/shadow">${csrfField(viewer.csrf)}<input type="hidden" name="shadow" value="${p.draft.shadow ? 'off' : 'on'}"><p>${p.draft.shadow ? 'The draft runs in shadow beside every live decision.' : 'Run the draft in shadow to see what it does to live purchases.'} <button type="submit">${p.draft.shadow ? 'Stop the shadow' : 'Run in shadow'}</button></p></form>` : p.draft?.shadow ? html`<p class="muted">The draft runs in shadow beside every live decision.</p>` : ''}`;
}

function simulationCard(title: string, s: SimulationView | null) {
  if (!s) return html`<div class="card"><h4>${title}</h4><p class="muted">No active version.</p></div>`;
  return html`<div class="card" data-simulation="${title}"><h4>${title}</h4><p>${badge(s.outcome)} <span class="codes">${s.reasonCodes.join(', ')}</span></p><p>${s.explanation}</p>
${s.budgets.map((b) => html`<p class="muted">${b.policyName} ${b.periodKey}: ${b.limits.map((l) => `${money(l.limitMinor, b.currency)} limit, ${headroom(BigInt(l.remainingAfterMinor), b.currency)} after it`).join('; ')}.</p>`)}</div>`;
}

const PERIOD_WORD: Record<string, string> = { DAY: 'daily', MONTH: 'monthly', PER_REQUEST: 'per-purchase' };

function versionBlock(v: PolicyRow['versions'][number]) {
  return html`<div class="card"><h3>${v.label} version ${v.versionNumber}</h3><p>Currencies: ${v.currencies.join(', ')}</p>
<ul>${v.rules.map((r) => html`<li>${r.ruleType === 'AMOUNT_LIMIT' ? (r.effect === 'BLOCK' ? 'Refuse one purchase over' : 'Ask a person for one purchase over') : r.effect === 'BLOCK' ? `Refuse beyond a ${PERIOD_WORD[r.periodKind]} spend of` : `Ask a person beyond a ${PERIOD_WORD[r.periodKind]} spend of`} ${r.currency !== null || v.currencies.length === 1 ? money(r.amountMinor, r.currency ?? v.currencies[0]) : `${r.amountMinor} minor units of the purchase's currency`}</li>`)}
${v.merchants.map((m) => html`<li>${m.listType === 'BLOCK' ? 'Blocked' : 'Allowed'} merchant: ${m.label}</li>`)}</ul></div>`;
}

export function policiesPage(viewer: Viewer, rows: PolicyRow[]) {
  return layout(
    'Policies',
    html`<h1>Policies</h1><p class="muted">Read-only: policies are changed by applying the organisation's manifest.</p>
${rows.map((p) => html`<section class="card" aria-labelledby="policy-${p.id}"><h2 id="policy-${p.id}">${p.name} ${badge(p.status)}</h2>
<p class="muted">${p.scopeType === 'ORGANIZATION' ? 'Governs every agent' : 'Governs listed agents'}${p.description ? ` · ${p.description}` : ''}</p>
<div class="side">${p.versions.map(versionBlock)}</div>
${p.versions.some((v) => v.label === 'Draft')
  ? html`<form method="get" action="/dashboard/policies#policy-${p.id}" aria-label="Compare the draft of ${p.name} with its active version">
<input type="hidden" name="policy" value="${p.id}">
<h3>Draft versus active</h3><div class="filters">
<div><label for="merchant-${p.id}">Merchant</label><input id="merchant-${p.id}" name="merchant" required value="${p.form?.merchant ?? ''}"></div>
<div><label for="amount-${p.id}">Amount</label><input id="amount-${p.id}" name="amount" required inputmode="decimal" value="${p.form?.amount ?? ''}"></div>
<div><label for="currency-${p.id}">Currency</label><input id="currency-${p.id}" name="currency" required maxlength="3" value="${p.form?.currency ?? viewer.organization.currency}"></div>
<div><button type="submit">Simulate</button></div></div></form>
${p.simulation ? ('error' in p.simulation ? alert(p.simulation.error) : html`<div class="side">${simulationCard('Draft', p.simulation.draft)}${simulationCard('Active', p.simulation.active)}</div>`) : ''}`
  : ''}
${p.replayable.length > 0 ? replayBlock(viewer, p) : ''}
</section>`)}`,
    viewer,
    'policies',
  );
}
