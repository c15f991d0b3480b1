// PORT=0: the system picks the port, and the URLs the service publishes name that port.
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService } from '../helpers/service-process.ts';

test('with PORT=0 and no BASE_URL, the OAuth issuer, the MCP resource and the API reference name the port listened on', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'port-zero-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const env = { BASE_URL: '', AUTH_URL: '' };
  const service = await startService(t, dataDir, env);
  const port = Number(new URL(service.url).port);
  t.true(port > 0);
  const expected = `http://localhost:${port}`;
  const issuer = (await (await fetch(`${service.url}/.well-known/oauth-authorization-server`)).json()) as { issuer: string; token_endpoint: string };
  t.is(issuer.issuer, expected);
  t.is(issuer.token_endpoint, `${expected}/oauth/token`);
  const resource = (await (await fetch(`${service.url}/.well-known/oauth-protected-resource/mcp`)).json()) as { resource: string };
  t.is(resource.resource, `${expected}/mcp`);
  const reference = (await (await fetch(`${service.url}/v1/openapi.json`)).json()) as { servers: Array<{ url: string }> };
  t.true(reference.servers.some((server) => server.url.startsWith(expected)), JSON.stringify(reference.servers));
  await service.stop();
});
