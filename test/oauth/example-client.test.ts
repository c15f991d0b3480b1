// The local recipe of docs/integrate/assistants.md, run as written: examples/mcp-client.ts (the official SDK, no
// https, no metadata document: it registers itself) against a local service over plain http. The
// test plays the person: opens the printed address, signs in, allows, and lets the browser follow
// the redirect to the script's loopback callback.
import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { TestApp } from '../helpers/app.ts';
import { hiddenField, setUpOrg, signInToConsent, startConnectionsApp, type Org } from './helpers.ts';

const SCRIPT = fileURLToPath(new URL('../../examples/mcp-client.ts', import.meta.url));
let app: TestApp;
let org: Org;

test.before(async () => {
  app = await startConnectionsApp();
  org = await setUpOrg(app);
});
test.after.always(async () => {
  await app?.close();
});

test('examples/mcp-client.ts connects through DCR over plain http on loopback and lists the tools', async (t) => {
  const child = spawn(process.execPath, [SCRIPT, `${app.url}/mcp`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => void (stderr += c.toString()));
  const exited = once(child, 'exit');
  try {
    const authorizationUrl = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        stdout += c.toString();
        const m = /Open this address in a browser to connect:\n(\S+)\n/.exec(stdout);
        if (m) resolve(m[1]);
      });
      child.on('exit', () => reject(new Error(`the example exited early:\n${stdout}\n${stderr}`)));
    });
    t.regex(new URL(authorizationUrl).searchParams.get('client_id') ?? '', new RegExp(`^${app.url}/oauth/clients/`));
    const { browser, consentHtml } = await signInToConsent(app, org, authorizationUrl);
    const approved = await browser.post(`${app.url}/oauth/consent`, { request: hiddenField(consentHtml, 'request'), csrf: hiddenField(consentHtml, 'csrf'), agent: org.agents.buyer.id, decision: 'approve' });
    const back = await browser.fetch(approved.headers.get('location')!);
    t.is(back.status, 200, 'the script accepted state and iss');
    const [code] = await exited;
    t.is(code, 0, stderr);
    t.regex(stdout, /Connected\. Tools: (?=.*check_purchase)(?=.*request_purchase)(?=.*get_purchase)(?=.*list_purchases)/);
    t.regex(stdout, /"purchases":\[\]/);
  } finally {
    if (child.exitCode === null) child.kill();
  }
});
