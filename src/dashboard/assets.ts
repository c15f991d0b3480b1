// The dashboard's only static files: one stylesheet and one small script (progressive: every page
// works without it). Served from memory with a content hash in the URL, so they are cached for good.
import { createHash } from 'node:crypto';

const CSS = `
:root{--ink:#1b1f24;--muted:#4b5563;--line:#d1d5db;--bg:#f5f6f8;--accent:#1d4ed8;--ok:#166534;--bad:#b91c1c;--held:#b45309}
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:var(--bg);color:var(--ink)}
a{color:var(--accent)}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:2}
header{background:#fff;border-bottom:1px solid var(--line);padding:.5rem 1rem;display:flex;flex-wrap:wrap;gap:.5rem 1.5rem;align-items:center}
header .who{margin-left:auto;color:var(--muted);font-size:.9rem}
nav ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:.25rem 1rem}
nav a{text-decoration:none;padding:.25rem 0;display:inline-block}nav a[aria-current=page]{font-weight:700;border-bottom:3px solid var(--accent)}
main{max-width:64rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:1rem;margin:0 0 1rem}
.card h2{margin:0 0 .5rem}.card h3,.card h4{margin:0 0 .5rem}form+.side{margin-top:1rem}
.cards{list-style:none;padding:0;margin:0}
.row{display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:baseline}
.amount{font-size:1.25rem;font-weight:700}
.muted{color:var(--muted)}
.lines{white-space:pre-line}
.codes{font-family:ui-monospace,monospace;font-size:.85rem}
.badge{display:inline-block;border-radius:999px;padding:0 .6rem;font-size:.85rem;border:1px solid currentColor}
.APPROVED{color:var(--ok)}.REJECTED,.EXPIRED,.CANCELLED{color:var(--bad)}.PENDING_APPROVAL,.REQUIRES_APPROVAL,.PENDING{color:var(--held)}
label{display:block;font-weight:600;margin:.5rem 0 .25rem}
input,select,textarea{font:inherit;padding:.45rem;border:1px solid #6b7280;border-radius:4px;width:100%;max-width:28rem;background:#fff;color:var(--ink)}
textarea{min-height:3rem}
button{font:inherit;padding:.5rem 1rem;border-radius:4px;border:1px solid #1f2937;background:#fff;color:#1f2937;cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button.danger{background:var(--bad);border-color:var(--bad);color:#fff}
a:focus,button:focus,input:focus,select:focus,textarea:focus{outline:3px solid #2563eb;outline-offset:2px}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;margin-top:.75rem}
.filters{display:grid;grid-template-columns:repeat(auto-fit,minmax(10rem,1fr));gap:.5rem 1rem;align-items:end}
.alert{border-left:4px solid var(--bad);background:#fef2f2;padding:.5rem 1rem;margin:0 0 1rem}
.notice{border-left:4px solid var(--ok);background:#f0fdf4;padding:.5rem 1rem;margin:0 0 1rem}
table{border-collapse:collapse;width:100%;background:#fff}th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
.scroll{overflow-x:auto}
.bar{display:block;width:100%;max-width:40rem;height:1rem;border-radius:4px;margin:.25rem 0}
.bar .opening{fill:#6b7280}.bar .committed{fill:var(--accent)}.bar .held{fill:var(--held)}
.legend{font-size:.9rem}.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-1px}
.legend .opening{background:#6b7280}.legend .committed{background:var(--accent)}.legend .held{background:var(--held)}
.windows{margin:.5rem 0 0;padding-left:1.2rem}
.side{display:grid;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr));gap:1rem}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0}dl.facts dt{font-weight:600}dl.facts dd{margin:0}
@media (max-width:30rem){header .who{margin-left:0}main{padding:.5rem}.card{padding:.75rem}}
`;

// Asks before a revocation (forms with data-confirm), and keeps the inbox current by polling (docs/operate/dashboard.md explains why not server-sent events): new approvals are
// inserted, answered or expired ones removed, and the live parts of the others refreshed, without
// touching a card someone is typing a comment in.
const JS = `
document.addEventListener('submit', function (e) {
  var question = e.target.getAttribute('data-confirm');
  if (question && !window.confirm(question)) e.preventDefault();
});
(function () {
  var list = document.getElementById('inbox-list');
  if (!list) return;
  var status = document.getElementById('inbox-status');
  var empty = document.getElementById('inbox-empty');
  var every = Number(list.getAttribute('data-every')) || 3000;
  function refresh() {
    fetch(list.getAttribute('data-live'), { credentials: 'same-origin', headers: { accept: 'text/html' } })
      .then(function (res) {
        if (res.redirected || !res.ok) { if (res.redirected || res.status === 401) location.reload(); return null; }
        return res.text();
      })
      .then(function (text) {
        if (text === null) return;
        var fresh = new DOMParser().parseFromString(text, 'text/html').getElementById('inbox-list');
        if (!fresh) return;
        var current = {};
        Array.prototype.forEach.call(list.children, function (li) { current[li.getAttribute('data-id')] = li; });
        var ref = list.firstElementChild, added = 0;
        Array.prototype.slice.call(fresh.children).forEach(function (li) {
          var id = li.getAttribute('data-id'), old = current[id];
          if (old) {
            old.querySelectorAll('[data-live]').forEach(function (el) {
              var next = li.querySelector('[data-live="' + el.getAttribute('data-live') + '"]');
              if (next && next.innerHTML !== el.innerHTML) el.innerHTML = next.innerHTML;
            });
            delete current[id];
            if (old === ref) ref = old.nextElementSibling;
          } else {
            list.insertBefore(document.importNode(li, true), ref);
            added++;
          }
        });
        var removed = 0;
        Object.keys(current).forEach(function (id) { current[id].remove(); removed++; });
        if (empty) empty.hidden = list.children.length > 0;
        if (status && (added || removed)) status.textContent = (added ? added + ' new approval' + (added > 1 ? 's' : '') + '. ' : '') + (removed ? removed + ' no longer waiting.' : '');
      })
      .catch(function () {})
      .then(function () { setTimeout(refresh, every); });
  }
  setTimeout(refresh, every);
})();
`;

const version = (s: string) => createHash('sha256').update(s).digest('base64url').slice(0, 12);

export const ASSETS: Record<string, { type: string; body: string; path: string }> = {
  css: { type: 'text/css; charset=utf-8', body: CSS, path: `/dashboard/assets/app-${version(CSS)}.css` },
  js: { type: 'text/javascript; charset=utf-8', body: JS, path: `/dashboard/assets/app-${version(JS)}.js` },
};
