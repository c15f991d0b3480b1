// Server-rendered pages of the connection flow: sign in, consent, and errors that cannot be sent back
// to the client. Plain HTML forms (no JavaScript), labelled fields, one h1 per page, `lang`, errors
// announced with role="alert" and tied to their fields. Every dynamic value is escaped.
import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { Scope } from '../auth.ts';
import { SCOPE_WORDS } from './scopes.ts';

const STYLE = `
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f5f6f8;color:#1b1f24}
main{max-width:34rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.15)}
h1{font-size:1.5rem;margin-top:0}
label{display:block;font-weight:600;margin-top:1rem}
input[type=email],input[type=password]{width:100%;box-sizing:border-box;padding:.6rem;font-size:1rem;border:1px solid #6b7280;border-radius:4px}
input:focus,button:focus{outline:3px solid #2563eb;outline-offset:2px}
fieldset{border:1px solid #d1d5db;border-radius:6px;margin:1rem 0;padding:.5rem 1rem 1rem}
legend{font-weight:600;padding:0 .25rem}
.choice{display:flex;gap:.5rem;align-items:flex-start;margin-top:.5rem}
.choice label{display:inline;font-weight:400;margin:0}
.actions{display:flex;gap:1rem;margin-top:1.5rem}
button{font-size:1rem;padding:.6rem 1.2rem;border-radius:4px;border:1px solid #1f2937;background:#fff;color:#1f2937;cursor:pointer}
button.primary{background:#1d4ed8;border-color:#1d4ed8;color:#fff}
.alert{border-left:4px solid #b91c1c;background:#fef2f2;padding:.5rem 1rem;margin:1rem 0}
.warning{border-left:4px solid #b45309;background:#fffbeb;padding:.5rem 1rem;margin:1rem 0}
.muted{color:#4b5563}
code{font-size:.9em;word-break:break-all}
`;

const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · Spend control</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

/**
 * Headers of every page: no framing (clickjacking), no scripts at all, only our one inline style,
 * nothing cached, no referrer (the URL carries the request id).
 */
export function sendPage(ctx: Context, status: number, title: string, body: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Content-Security-Policy', `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; img-src 'none'; base-uri 'none'; frame-ancestors 'none'`);
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.body = layout(title, body);
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`;

export interface SignInView {
  requestId: string;
  csrf: string;
  clientName: string;
  clientHost: string;
  /** Registered here (RFC 7591): the name is the application's own, unverified claim. */
  registered: boolean;
  email?: string;
  error?: string;
}

const UNVERIFIED = 'unverified name: the application registered itself and chose this name';

/** Who the client is, as far as the service knows: the host that serves its metadata, or nothing. */
const clientOrigin = (v: { clientHost: string; registered: boolean }) => (v.registered ? UNVERIFIED : v.clientHost);

export function signInPage(v: SignInView): { title: string; body: string } {
  const err = v.error ? `<div class="alert" role="alert" id="sign-in-error">${escapeHtml(v.error)}</div>` : '';
  const described = v.error ? ' aria-describedby="sign-in-error" aria-invalid="true"' : '';
  return {
    title: 'Sign in',
    body: `<h1>Sign in to connect ${escapeHtml(v.clientName)}</h1>
<p><strong>${escapeHtml(v.clientName)}</strong> <span class="muted">(${escapeHtml(clientOrigin(v))})</span> wants to act as one of your organisation's agents. Sign in to choose whether to allow it.</p>
${err}
<form method="post" action="/oauth/sign-in">
${hidden('request', v.requestId)}
${hidden('csrf', v.csrf)}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(v.email ?? '')}"${described}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${described}>
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>
<form method="post" action="/oauth/consent">
${hidden('request', v.requestId)}
${hidden('csrf', v.csrf)}
<div class="actions"><button type="submit" name="decision" value="deny">Cancel and return to ${escapeHtml(v.clientName)}</button></div>
</form>`,
  };
}

export interface ConsentView {
  requestId: string;
  csrf: string;
  personName: string;
  organizationName: string;
  clientName: string;
  clientId: string;
  clientHost: string;
  registered: boolean;
  /** Every redirect URI of its metadata document is on the person's machine: any local program could be it. */
  localRedirectsOnly: boolean;
  redirectHost: string;
  scopes: Scope[];
  /** Asked for, but beyond what the person's roles let them grant. */
  withheld: Scope[];
  agents: { id: string; name: string; description: string | null }[];
  error?: string;
}

export function consentPage(v: ConsentView): { title: string; body: string } {
  const err = v.error ? `<div class="alert" role="alert" id="consent-error">${escapeHtml(v.error)}</div>` : '';
  const scopes = v.scopes.map((s) => `<li>${escapeHtml(SCOPE_WORDS[s])} <span class="muted">(<code>${escapeHtml(s)}</code>)</span></li>`).join('\n');
  const withheld = v.withheld.length === 0
    ? ''
    : `<p class="warning" id="withheld-scopes">It ${v.scopes.length === 0 ? 'asked' : 'also asked'} to ${v.withheld.map((s) => `<code>${escapeHtml(s)}</code>`).join(', ')}, which you may not grant: requesting purchases needs the approver role.${v.scopes.length === 0 ? ' You can only deny this request.' : ''}</p>\n`;
  const canAllow = v.agents.length > 0 && v.scopes.length > 0;
  const agents =
    v.agents.length === 0
      ? `<p>Your organisation has no enabled agent to connect. You can only deny this request.</p>`
      : `<fieldset${v.error ? ' aria-describedby="consent-error"' : ''}>
<legend>Act as which agent?</legend>
${v.agents
  .map(
    (a, i) => `<div class="choice"><input type="radio" id="agent-${i}" name="agent" value="${escapeHtml(a.id)}"${v.agents.length === 1 ? ' checked' : ''} required>
<label for="agent-${i}">${escapeHtml(a.name)}${a.description ? ` <span class="muted">— ${escapeHtml(a.description)}</span>` : ''}</label></div>`,
  )
  .join('\n')}
</fieldset>`;
  return {
    title: 'Allow access?',
    body: `<h1>Allow ${escapeHtml(v.clientName)} to act as an agent?</h1>
<p class="muted">Signed in as ${escapeHtml(v.personName)}, ${escapeHtml(v.organizationName)}.</p>
${err}
<h2>Who is asking</h2>
<dl>
<dt>Application</dt><dd>${escapeHtml(v.clientName)}${v.registered ? ' <strong>(unverified)</strong>' : ''}</dd>
<dt>Identified by</dt><dd>${
      v.registered
        ? `nothing: it registered itself with this service, and its name was chosen by whoever registered it. Allow it only if you started this connection from the application you expect. <span class="muted">(<code>${escapeHtml(v.clientId)}</code>)</span>`
        : `<strong>${escapeHtml(v.clientHost)}</strong> <span class="muted">(<code>${escapeHtml(v.clientId)}</code>)</span>`
    }</dd>
<dt>You will be sent back to</dt><dd><strong>${escapeHtml(v.redirectHost)}</strong></dd>
</dl>
${
  v.localRedirectsOnly
    ? `<p class="warning" id="local-client-warning"><strong>Warning:</strong> ${escapeHtml(v.clientName)} can only send you back to this computer (<code>localhost</code>), so any program running on it could claim to be ${escapeHtml(v.clientName)}. Allow it only if you started this connection yourself, just now, from that application.</p>\n`
    : ''
}<h2>What it may do</h2>
${scopes && `<ul>\n${scopes}\n</ul>\n`}${withheld}<p class="muted">It can never change policies, budgets or agents, and every purchase it requests is decided by your policies. You can revoke this connection at any time.</p>
<form method="post" action="/oauth/consent">
${hidden('request', v.requestId)}
${hidden('csrf', v.csrf)}
${agents}
<div class="actions">
${canAllow ? '<button type="submit" name="decision" value="approve" class="primary">Allow</button>' : ''}
<button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</div>
</form>`,
  };
}

/** `back`: a link that takes the person to the application, for them to follow or not. */
export function errorPage(heading: string, message: string, back?: { href: string; host: string }): { title: string; body: string } {
  return {
    title: heading,
    body: `<h1>${escapeHtml(heading)}</h1>
<p role="alert">${escapeHtml(message)}</p>
${
  back
    ? `<p><a href="${escapeHtml(back.href)}">Return to ${escapeHtml(back.host)}</a></p>
<p class="muted">The link tells the application why. Follow it only if you started connecting from an application at that address.</p>`
    : '<p class="muted">Return to the application and start connecting again.</p>'
}`,
  };
}
