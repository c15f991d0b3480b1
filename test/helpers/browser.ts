// A real Chromium for the dashboard tests, driven by playwright-core. The binary is never downloaded:
// CHROMIUM_PATH, else Debian's /usr/bin/chromium (apt-get install -y chromium) or a Chrome on the PATH.
// Without one the tests fail with instructions; they never pass silently.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function chromiumPath(env: NodeJS.ProcessEnv = process.env, exists: (path: string) => boolean = existsSync): string {
  const configured = env.CHROMIUM_PATH;
  if (configured) {
    if (!exists(configured)) throw new Error(`CHROMIUM_PATH is ${configured}, which does not exist.`);
    return configured;
  }
  const found = CANDIDATES.find((p) => exists(p));
  if (found) return found;
  throw new Error(
    `No Chromium found for the dashboard's browser tests${env.CI ? ' (CI must run them)' : ''}. ` +
      'Install one with "apt-get install -y chromium" (Debian/Ubuntu), or set CHROMIUM_PATH to a Chromium or Chrome binary, then run npm test again. ' +
      `Looked at: ${CANDIDATES.join(', ')}.`,
  );
}

export interface BrowserSession {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/** A fresh Chromium with its own new profile directory (so its own cookies), at a phone-friendly or desktop size. */
export async function openBrowser(viewport = { width: 1100, height: 900 }): Promise<BrowserSession> {
  const dir = await mkdtemp(join(tmpdir(), 'dashboard-chromium-'));
  const context = await chromium.launchPersistentContext(dir, { executablePath: chromiumPath(), headless: true, args: ARGS, viewport, locale: 'en-GB', timeout: 60_000 });
  context.setDefaultTimeout(30_000);
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
