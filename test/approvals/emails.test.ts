// Approvers are told (issue #32, docs/approve/approvals.md): a purchase that needs a person emails every
// approver of its organisation through a real SMTP server (started here), from the jobs worker; the
// link opens that approval on the dashboard and changes nothing; one reminder before expiry; nobody
// who answered, and nothing once resolved; a failing relay is retried and each person emailed once;
// SMTP unset sends nothing and the inbox says so.
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestApp } from '../helpers/app.ts';
import { Client, dashboardPurchase, field, PASSWORD, setUpDashboardOrg, startDashboardApp, type DashboardOrg } from '../helpers/dashboard.ts';
import { startSmtp, type ReceivedMail, type TestSmtp } from '../helpers/smtp.ts';
import { when } from '../../src/dashboard/html.ts';
import { reminderAt, sendDueNotice, sendDueNotices } from '../../src/approvals/notices.ts';

const FROM = 'Spend control <spend@example.com>';

const people = (h: string) => [
  { handle: 'ana', name: 'Ana Approver', email: `ana@${h}.example`, roles: ['approver'] },
  { handle: 'bo', name: 'Bo Approver', email: `bo@${h}.example`, roles: ['approver', 'admin'] },
  { handle: 'vic', name: 'Vic Viewer', email: `vic@${h}.example`, roles: ['viewer'] },
];

let smtp: TestSmtp;
let app: TestApp;
let orgs = 0;

test.before(async () => {
  smtp = await startSmtp();
  app = await startDashboardApp({ jobs: { sweepEvery: '1 second' }, env: { SMTP_URL: smtp.url, SMTP_FROM: FROM } });
});
test.after.always(async () => {
  await app?.close();
  await smtp?.close();
});

async function org(on: TestApp, ttl = 'PT24H') {
  const handle = `mail-${++orgs}`;
  return { handle, org: await setUpDashboardOrg(on, handle, people(handle), ttl) };
}

async function pending(on: TestApp, o: DashboardOrg, merchant = 'Standing Desks GmbH') {
  const res = await on.request('/v1/purchase-requests', { key: o.keys['buyer-key'], body: { merchant, amountMinor: '30000', reason: 'Desks for the new office' } });
  if (res.body?.decision?.outcome !== 'REQUIRES_APPROVAL') throw new Error(res.text);
  const approval = await on.store.db.collection('approvals').findOne({ purchaseId: res.body.purchaseRequest.id });
  return { id: res.body.purchaseRequest.id as string, approvalId: String(approval!._id), expiresAt: approval!.expiresAt as Date };
}

const readback = async (on: TestApp, o: DashboardOrg, id: string) => (await on.request(`/v1/purchase-requests/${id}`, { key: o.keys['buyer-key'] })).body.purchase;
const of = (approvalId: string, notice: string) => (r: ReceivedMail[]) => r.filter((m) => m.approvalId === approvalId && m.notice === notice);
const recipients = (mails: ReceivedMail[]) => mails.flatMap((m) => m.to).sort();

/** Polls until `done` holds (the job writes its records just after the relay accepts the message). */
async function until<T>(probe: () => Promise<T>, done: (value: T) => boolean, seconds = 20): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(50);
  }
}
const noticeOf = (on: TestApp, approvalId: string) => until(() => on.store.db.collection('approval_notices').findOne({ _id: approvalId as never }), (n) => n?.next === 'REMINDER');

test.serial('every approver is emailed what they need to decide, and the link opens the approval without changing it', async (t) => {
  const { handle, org: o } = await org(app);
  const p = await pending(app, o);
  const mails = of(p.approvalId, 'REQUEST')(await smtp.until((r) => of(p.approvalId, 'REQUEST')(r).length >= 2));
  t.deepEqual(recipients(mails), [`ana@${handle}.example`, `bo@${handle}.example`], 'each approver once; the viewer is not emailed');

  const ana = mails.find((m) => m.to[0] === `ana@${handle}.example`)!.mail;
  t.is(ana.from?.value[0].address, 'spend@example.com');
  t.is(ana.subject, 'Approval needed: €300.00 at Standing Desks GmbH for Office buyer');
  t.is(ana.headers.get('auto-submitted'), 'auto-generated');
  const text = ana.text!;
  t.regex(text, /^Hello Ana Approver,/);
  t.regex(text, /^Amount: €300\.00$/m);
  t.regex(text, /^Merchant: Standing Desks GmbH$/m);
  t.regex(text, /^Agent: Office buyer$/m);
  t.regex(text, /^Reason: Desks for the new office$/m);
  t.regex(text, /^Why a person is asked: Office supplies: .*threshold of 200\.00 EUR.* \(APPROVAL_THRESHOLD_EXCEEDED\)$/m, 'the rule that asked, with its limit');
  t.regex(text, /^Budget it holds: Office supplies, day \d{4}-\d{2}-\d{2}: €0\.00 spent, €300\.00 held for approvals \(this one included\); limit €2,000\.00 \(refuses beyond\)$/m);
  t.true(text.includes(`Expires: ${when(p.expiresAt, 'Europe/Berlin')} (Europe/Berlin)`), 'the expiry in the organisation\'s zone');
  const link = `${app.url}/dashboard/purchases/${p.id}`;
  t.true(text.includes(`Open it on the dashboard: ${link}`));
  t.true((ana.html as string).includes(`href="${link}"`));

  // Following the link: signed out, the sign-in page; signed in, the approval. Neither changes anything.
  const before = await readback(app, o, p.id);
  const decisions = await app.store.db.collection('decisions').countDocuments({ purchaseId: p.id });
  const anonymous = await fetch(link, { redirect: 'manual' });
  t.is(anonymous.status, 303);
  const signInAt = anonymous.headers.get('location')!;
  t.is(signInAt, `/dashboard/sign-in?next=${encodeURIComponent(new URL(link).pathname)}`);
  // Signing in from there lands on the approval itself.
  const client = new Client(app.url);
  const form = await client.get(signInAt);
  const signedIn = await client.post('/dashboard/sign-in', { token: field(form.text, 'token'), next: field(form.text, 'next'), email: `ana@${handle}.example`, password: PASSWORD });
  t.is(signedIn.status, 303);
  t.is(signedIn.location, new URL(link).pathname);
  const page = await client.get(signedIn.location!);
  t.is(page.status, 200);
  t.regex(page.text, /€300\.00 at Standing Desks GmbH/);
  t.regex(page.text, /pending approval/);
  t.deepEqual(await readback(app, o, p.id), before, 'opening the link changed nothing');
  t.is(await app.store.db.collection('decisions').countDocuments({ purchaseId: p.id }), decisions);

  // Answering still takes the signed-in person's CSRF-protected form.
  const inbox = await client.get('/dashboard');
  t.false(/data-email="off"/.test(inbox.text), 'with SMTP set, the inbox does not say approvers go unemailed');
  const noToken = await client.post(`/dashboard/approvals/${p.id}/answer`, { answer: 'APPROVE' });
  t.is(noToken.status, 403);
  t.is((await readback(app, o, p.id)).status, 'PENDING_APPROVAL');
  const answered = await client.post(`/dashboard/approvals/${p.id}/answer`, { csrf: field(inbox.text, 'csrf'), answer: 'APPROVE' });
  t.is(answered.status, 303);
  t.is((await readback(app, o, p.id)).status, 'APPROVED');
});

test.serial('the person who made a dashboard purchase is not emailed about it; the other approvers are', async (t) => {
  const { handle, org: o } = await org(app);
  const client = new Client(app.url);
  await client.signIn(`ana@${handle}.example`);
  const id = await dashboardPurchase(client, o.agents.buyer.id, { merchant: 'Chairs AG', amount: '300.00', reason: 'Chairs' });
  const approval = await app.store.db.collection('approvals').findOne({ purchaseId: id });
  const approvalId = String(approval!._id);
  const mails = of(approvalId, 'REQUEST')(await smtp.until((r) => of(approvalId, 'REQUEST')(r).length >= 1));
  t.deepEqual(recipients(mails), [`bo@${handle}.example`]);
  // The job has finished with this approval: next is the reminder, and nobody else was claimed.
  t.is((await noticeOf(app, approvalId))!.next, 'REMINDER');
  t.is(await app.store.db.collection('notifications').countDocuments({ approvalId }), 1);
});

test.serial('one human listed under two handles (one email) is emailed once, and not about their own purchase', async (t) => {
  const handle = `mail-${++orgs}`;
  const o = await setUpDashboardOrg(app, handle, [...people(handle), { handle: 'ana-finance', name: 'Ana (finance)', email: `ANA@${handle}.example`, roles: ['approver'] }]);
  const p = await pending(app, o);
  await smtp.until((r) => of(p.approvalId, 'REQUEST')(r).length >= 2);
  t.is((await noticeOf(app, p.approvalId))!.next, 'REMINDER', 'the job finished the step');
  t.deepEqual(recipients(of(p.approvalId, 'REQUEST')(smtp.received)), [`ana@${handle}.example`, `bo@${handle}.example`], 'each address once');

  const client = new Client(app.url);
  await client.signIn(`ana@${handle}.example`);
  const id = await dashboardPurchase(client, o.agents.buyer.id, { merchant: 'Chairs AG', amount: '300.00', reason: 'Chairs' });
  const approvalId = String((await app.store.db.collection('approvals').findOne({ purchaseId: id }))!._id);
  await smtp.until((r) => of(approvalId, 'REQUEST')(r).length >= 1);
  t.is((await noticeOf(app, approvalId))!.next, 'REMINDER');
  t.deepEqual(recipients(of(approvalId, 'REQUEST')(smtp.received)), [`bo@${handle}.example`], 'not the maker under their other handle');
});

test.serial('what the agent wrote cannot add a header, a recipient or markup to the email', async (t) => {
  const { handle, org: o } = await org(app);
  // A line break in a merchant is refused at the door (docs/reference/decisions.md); the rest of the attempt gets in.
  const forged = await app.request('/v1/purchase-requests', { key: o.keys['buyer-key'], body: { merchant: 'Evil Co\r\nBcc: victim@attacker.example', amountMinor: '30000', reason: 'r' } });
  t.is(forged.status, 400, forged.text);
  const merchant = 'Evil <b>Co</b> Bcc: victim@attacker.example <a href="https://attacker.example">Approve here</a>';
  const res = await app.request('/v1/purchase-requests', {
    key: o.keys['buyer-key'],
    body: { merchant, amountMinor: '30000', reason: '<img src=x onerror="alert(1)"> & <script>steal()</script>' },
  });
  t.is(res.status, 201, res.text);
  const approvalId = String((await app.store.db.collection('approvals').findOne({ purchaseId: res.body.purchaseRequest.id }))!._id);
  await smtp.until((r) => of(approvalId, 'REQUEST')(r).length >= 2);
  t.is((await noticeOf(app, approvalId))!.next, 'REMINDER', 'the job finished the step');
  const mails = of(approvalId, 'REQUEST')(smtp.received);
  t.deepEqual(recipients(mails), [`ana@${handle}.example`, `bo@${handle}.example`], 'no recipient added');
  for (const { mail } of mails) {
    t.is(mail.bcc, undefined);
    t.false(mail.headers.has('bcc'));
    t.notRegex(mail.subject!, /[\r\n]/, 'the subject stays one line');
    t.true(mail.subject!.startsWith('Approval needed: €300.00 at Evil <b>Co</b>'), mail.subject);
    const body = mail.html as string;
    t.false(body.includes('<b>Co</b>'));
    t.false(body.includes('<a href="https://attacker.example">'));
    t.false(body.includes('<img'));
    t.false(body.includes('<script>'));
    t.true(body.includes('Evil &lt;b&gt;Co&lt;/b&gt;'));
    t.true(body.includes('&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &lt;script&gt;'));
  }
});

test.serial('a reason\'s line breaks cannot forge a line of the email: its further lines are quoted under it, and it is kept as sent', async (t) => {
  const { org: o } = await org(app);
  // Every break a mail client may draw: LF, CRLF, CR, VT, FF, NEL, and the Unicode line and paragraph separators.
  const forged = ['Amount: €1.00', 'Why a person is asked: a routine check (APPROVAL_THRESHOLD_EXCEEDED)', 'Merchant: Toner Direct', 'Agent: Finance', 'Expires: never', 'Approvals: 2 of 2 approvals', 'Reason: approved by Bo'];
  const breaks = ['\n', '\r\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029'];
  const reason = ['Toner', ...forged].map((line, i) => (i === 0 ? line : `${breaks[(i - 1) % breaks.length]}${line}`)).join('') + '\u2029\nAmount: €2.00';
  const res = await app.request('/v1/purchase-requests', { key: o.keys['buyer-key'], body: { merchant: 'Standing Desks GmbH', amountMinor: '30000', reason } });
  t.is(res.status, 201, res.text);
  t.is((await readback(app, o, res.body.purchaseRequest.id)).reason, reason, 'the reason is kept as sent');
  const approvalId = String((await app.store.db.collection('approvals').findOne({ purchaseId: res.body.purchaseRequest.id }))!._id);
  await smtp.until((r) => of(approvalId, 'REQUEST')(r).length >= 2);
  for (const { mail } of of(approvalId, 'REQUEST')(smtp.received)) {
    const lines = (mail.text as string).split(/\r\n|[\n\r\v\f\u0085\u2028\u2029]/);
    for (const line of [...forged, 'Amount: €2.00']) t.false(lines.includes(line), `no line of its own at column 0: ${line}`);
    t.deepEqual(lines.filter((l) => /^Amount: /.test(l)), ['Amount: €300.00'], 'one amount: the real one');
    const at = lines.indexOf('Reason: Toner');
    t.not(at, -1);
    t.deepEqual(lines.slice(at + 1, at + forged.length + 3), [...forged.map((l) => `  > ${l}`), '  > ', '  > Amount: €2.00'], 'quoted under the reason, in order');
    t.true((mail.html as string).includes('<td>Toner<br>&gt; Amount: €1.00<br>'), 'in the HTML, inside the reason\'s cell');
  }
});

test.serial('an agent\'s bidi override does not turn the email around: the merchant reads as it was written', async (t) => {
  const { org: o } = await org(app);
  // U+202E would have a mail client draw "moc.nozama" as "amazon.com", and the rest of the subject backwards.
  const { approvalId } = await pending(app, o, '\u202Emoc.nozama');
  await smtp.until((r) => of(approvalId, 'REQUEST')(r).length >= 2);
  for (const { mail } of of(approvalId, 'REQUEST')(smtp.received)) {
    t.is(mail.subject, 'Approval needed: €300.00 at moc.nozama for Office buyer');
    t.true((mail.text as string).includes('Merchant: moc.nozama\n'));
    t.true((mail.html as string).includes('<td>moc.nozama</td>'));
  }
});

test.serial('a relay that fails once: the job is retried, and each approver receives the message once', async (t) => {
  const { handle, org: o } = await org(app);
  const refusedBefore = smtp.refused;
  smtp.failNext(1);
  const p = await pending(app, o);
  const mails = of(p.approvalId, 'REQUEST')(await smtp.until((r) => of(p.approvalId, 'REQUEST')(r).length >= 2));
  t.is(smtp.refused, refusedBefore + 1, 'the relay refused one message');
  t.deepEqual(recipients(mails), [`ana@${handle}.example`, `bo@${handle}.example`]);
  t.is((await noticeOf(app, p.approvalId))!.next, 'REMINDER', 'the job finished the step');
  const sent = await app.store.db.collection('notifications').find({ approvalId: p.approvalId }).toArray();
  t.deepEqual(sent.map((n) => n.state).sort(), ['SENT', 'SENT']);
  // The job and the sweep running again send nothing twice.
  t.is(await sendDueNotice(app.deps, p.approvalId), 0);
  t.is(await sendDueNotices(app.deps), 0);
  t.is(of(p.approvalId, 'REQUEST')(smtp.received).length, 2);
});

test.serial('a crash between the commit and the scheduling loses no email: the sweep sends it', async (t) => {
  const crashing = await startDashboardApp({ store: app.store, scheduler: { schedule: () => Promise.reject(new Error('worker gone')) }, env: { SMTP_URL: smtp.url, SMTP_FROM: FROM } });
  t.teardown(() => crashing.close());
  const { handle, org: o } = await org(crashing);
  const p = await pending(crashing, o);
  t.is(await app.store.db.collection('agendaJobs').countDocuments({ name: 'approvals.notify', 'data.approvalId': p.approvalId }), 0, 'nothing was scheduled');
  // The sweep leaves the first half minute to the job; half a minute on, it finds the approval nobody told.
  const later = { ...app.deps, now: () => new Date(Date.now() + 31_000) };
  await sendDueNotices(later);
  const mails = of(p.approvalId, 'REQUEST')(await smtp.until((r) => of(p.approvalId, 'REQUEST')(r).length >= 2));
  t.deepEqual(recipients(mails), [`ana@${handle}.example`, `bo@${handle}.example`]);
});

test.serial('a mailbox the relay keeps refusing for now (452) holds up nobody else\'s email: the sweep goes on to the next approval', async (t) => {
  // Web processes that schedule nothing (no worker reachable, or no SMTP_URL given to them): the sweep
  // sends every first email. One approver's mailbox is full: the relay answers 452 at every attempt.
  const relay = await startSmtp();
  const web = await startDashboardApp({ scheduler: { schedule: () => Promise.reject(new Error('worker gone')) }, env: { SMTP_URL: relay.url, SMTP_FROM: FROM } });
  t.teardown(async () => {
    await web.close();
    await relay.close();
  });
  const full = await org(web);
  relay.refuseRecipient(`ana@${full.handle}.example`);
  const stuck = await pending(web, full.org);
  const other = await org(web);
  const waiting = await pending(web, other.org);
  const later = { ...web.deps, now: () => new Date(Date.now() + 31_000) };
  for (let sweep = 0; sweep < 2; sweep++) await sendDueNotices(later);
  t.deepEqual(recipients(of(waiting.approvalId, 'REQUEST')(relay.received)), [`ana@${other.handle}.example`, `bo@${other.handle}.example`]);
  t.deepEqual(recipients(of(stuck.approvalId, 'REQUEST')(relay.received)), [`bo@${full.handle}.example`], 'the full mailbox is tried again later; the other approver has it');
  const refused = await web.store.db.collection('notifications').countDocuments({ approvalId: stuck.approvalId, to: `ana@${full.handle}.example` });
  t.is(refused, 0, 'the full mailbox holds no claim: the next sweep tries it again');
});

test.serial('the reminder is scheduled on the worker and arrives before expiry', async (t) => {
  // An 8-second approval, reminded when three quarters of its time is left: 2 seconds in.
  const early = await startSmtp();
  const quick = await startDashboardApp({ jobs: { sweepEvery: '1 second' }, env: { SMTP_URL: early.url, SMTP_FROM: FROM, APPROVAL_REMINDER_AT: '0.75' } });
  t.teardown(async () => {
    await quick.close();
    await early.close();
  });
  const { handle, org: o } = await org(quick, 'PT8S');
  const p = await pending(quick, o);
  const reminders = of(p.approvalId, 'REMINDER')(await early.until((r) => of(p.approvalId, 'REMINDER')(r).length >= 2));
  t.deepEqual(recipients(reminders), [`ana@${handle}.example`, `bo@${handle}.example`]);
  t.is(of(p.approvalId, 'REQUEST')(early.received).length, 2, 'the request came first');
  const sent = await until(
    () => quick.store.db.collection('notifications').find({ approvalId: p.approvalId, kind: 'REMINDER' }).toArray(),
    (n) => n.length === 2 && n.every((x) => x.state === 'SENT'),
  );
  t.is(sent.length, 2);
  for (const n of sent) t.true(n.sentAt.getTime() < p.expiresAt.getTime(), 'sent before the approval expired');
  t.regex(reminders[0].mail.subject!, /^Reminder: approval needed: €300\.00 at Standing Desks GmbH for Office buyer$/);
});

test.serial('with the clock moved on: one reminder for what is still pending, none once answered, none to who answered', async (t) => {
  let now = new Date();
  const clocked = await startDashboardApp({ now: () => now, jobs: { sweepEvery: '1 second' }, env: { SMTP_URL: smtp.url, SMTP_FROM: FROM } });
  t.teardown(() => clocked.close());
  const { handle, org: o } = await org(clocked);
  const answeredLater = await pending(clocked, o, 'Answered Ltd');
  now = new Date(now.getTime() + 1000);
  const quorum = await pending(clocked, o, 'Quorum Ltd');
  now = new Date(now.getTime() + 1000);
  const waiting = await pending(clocked, o, 'Waiting Ltd');
  for (const p of [answeredLater, quorum, waiting]) await smtp.until((r) => of(p.approvalId, 'REQUEST')(r).length >= 2);
  for (const p of [answeredLater, quorum, waiting]) {
    t.is(of(p.approvalId, 'REQUEST')(smtp.received).length, 2);
    t.is((await noticeOf(clocked, p.approvalId))!.next, 'REMINDER');
  }

  // Ana approves the first: resolved. On the second, Ana's approval counted toward a quorum of two
  // (as the quorum rules record it: approvalsRequired and answers on the approval).
  const client = new Client(clocked.url);
  await client.signIn(`ana@${handle}.example`);
  const inbox = await client.get('/dashboard');
  t.is((await client.post(`/dashboard/approvals/${answeredLater.id}/answer`, { csrf: field(inbox.text, 'csrf'), answer: 'APPROVE' })).status, 303);
  t.is((await readback(clocked, o, answeredLater.id)).status, 'APPROVED');
  await clocked.store.db.collection('approvals').updateOne(
    { _id: quorum.approvalId as never },
    { $set: { approvalsRequired: 2, answers: [{ personId: o.people.ana.id, name: 'Ana Approver', answer: 'APPROVE', comment: null, answeredAt: now }] } },
  );

  // A quarter of the day left (the default): 18 hours and a minute later, before the expiry.
  now = new Date(now.getTime() + 18 * 3_600_000 + 60_000);
  t.true(now.getTime() < waiting.expiresAt.getTime());
  const got = await smtp.until((r) => of(waiting.approvalId, 'REMINDER')(r).length >= 2 && of(quorum.approvalId, 'REMINDER')(r).length >= 1);
  // The sweep takes due reminders oldest first, so the answered purchase's turn came before these.
  t.deepEqual(recipients(of(waiting.approvalId, 'REMINDER')(got)), [`ana@${handle}.example`, `bo@${handle}.example`]);
  t.deepEqual(recipients(of(quorum.approvalId, 'REMINDER')(got)), [`bo@${handle}.example`], 'not to Ana, who answered');
  t.deepEqual(of(answeredLater.approvalId, 'REMINDER')(got), [], 'no reminder once resolved');
  const quorumText = of(quorum.approvalId, 'REMINDER')(got)[0].mail.text!;
  t.regex(quorumText, /1 of 2 approvals/);
  t.regex(of(waiting.approvalId, 'REMINDER')(got)[0].mail.text!, /expires 5 h 59 min from now/);
  t.is((await readback(clocked, o, waiting.id)).status, 'PENDING_APPROVAL');
  t.is((await clocked.store.db.collection('approval_notices').findOne({ _id: answeredLater.approvalId as never }))!.next, null);

  // Nothing more is due: another sweep sends nothing.
  const count = smtp.received.length;
  t.is(await sendDueNotices(clocked.deps), 0);
  t.is(smtp.received.length, count);
});

test.serial('SMTP unset: no email, nothing scheduled for it, and the inbox says approvers are not emailed', async (t) => {
  const silent = await startDashboardApp({ jobs: { sweepEvery: '1 second' } });
  t.teardown(() => silent.close());
  t.is(silent.deps.config.smtp, null);
  const { handle, org: o } = await org(silent);
  const p = await pending(silent, o);
  t.is(await silent.store.db.collection('agendaJobs').countDocuments({ name: 'approvals.notify' }), 0);
  t.is(await sendDueNotice(silent.deps, p.approvalId), 0);
  t.is(await sendDueNotices(silent.deps), 0);
  t.is(await silent.store.db.collection('approval_notices').countDocuments({}), 0);
  t.is(await silent.store.db.collection('notifications').countDocuments({}), 0);
  const client = new Client(silent.url);
  await client.signIn(`vic@${handle}.example`);
  const inbox = await client.get('/dashboard');
  t.regex(inbox.text, /data-email="off">Approvers are not emailed about new approvals/);
  t.regex(inbox.text, /€300\.00 at Standing Desks GmbH/, 'the approval waits in the inbox');
});

test('the reminder\'s moment: the share of the time left, or a duration before expiry; none when there is no time for one', (t) => {
  const created = new Date('2026-11-23T08:00:00Z');
  const expires = new Date('2026-11-24T08:00:00Z');
  t.deepEqual(reminderAt(created, expires, { kind: 'FRACTION_LEFT', fraction: 0.25 }), new Date('2026-11-24T02:00:00Z'));
  t.deepEqual(reminderAt(created, expires, { kind: 'BEFORE_EXPIRY', ms: 3_600_000 }), new Date('2026-11-24T07:00:00Z'));
  t.is(reminderAt(created, expires, { kind: 'BEFORE_EXPIRY', ms: 24 * 3_600_000 }), null, 'an hour-long wait for a day-long reminder: none');
  t.is(reminderAt(created, expires, null), null);
});

test.serial('an expiry in the hour repeated at the end of summer time reads as two different times, in the email and in the inbox', async (t) => {
  // America/New_York falls back on 1 Nov 2026: 01:00-02:00 local comes twice (EDT, UTC-4, then EST, UTC-5).
  let now = new Date('2026-11-01T03:30:00.000Z');
  const clocked = await startDashboardApp({ now: () => now, jobs: { sweepEvery: '1 second' }, env: { SMTP_URL: smtp.url, SMTP_FROM: FROM } });
  t.teardown(() => clocked.close());
  const handle = `mail-${++orgs}`;
  const o = await setUpDashboardOrg(clocked, handle, people(handle), 'PT2H', (m) => {
    m.organization.timezone = 'America/New_York';
  });
  const first = await pending(clocked, o, 'First Hour Ltd');
  now = new Date('2026-11-01T04:30:00.000Z');
  const second = await pending(clocked, o, 'Second Hour Ltd');
  t.deepEqual([first.expiresAt.toISOString(), second.expiresAt.toISOString()], ['2026-11-01T05:30:00.000Z', '2026-11-01T06:30:00.000Z']);

  const expiresLine = async (approvalId: string) => {
    const mails = of(approvalId, 'REQUEST')(await smtp.until((r) => of(approvalId, 'REQUEST')(r).length >= 1));
    return /^Expires: (.*)$/m.exec(mails[0].mail.text!)![1];
  };
  const [a, b] = [await expiresLine(first.approvalId), await expiresLine(second.approvalId)];
  t.is(a, '1 Nov 2026, 01:30 GMT-4 (America/New_York)');
  t.is(b, '1 Nov 2026, 01:30 GMT-5 (America/New_York)');

  // The inbox: each card says when its purchase expires and when it was asked, each with its offset.
  const client = new Client(clocked.url);
  await client.signIn(`ana@${handle}.example`);
  const inbox = (await client.get('/dashboard')).text;
  const card = (merchant: string) => /\(expires ([^;]*); asked ([^)]*)\)/.exec(inbox.slice(inbox.indexOf(merchant)))!;
  const [, expiresFirst, askedFirst] = card('First Hour Ltd');
  const [, expiresSecond, askedSecond] = card('Second Hour Ltd');
  t.not(expiresFirst, expiresSecond, 'two instants, two texts');
  t.regex(expiresFirst, /01:30 GMT-4$/);
  t.regex(expiresSecond, /01:30 GMT-5$/);
  t.regex(askedFirst, /^31 Oct 2026, 23:30 GMT-4$/);
  t.regex(askedSecond, /^1 Nov 2026, 00:30 GMT-4$/);
});
