// The first steps a newcomer takes, run as written: the `sh` blocks of README.md and
// docs/guide/getting-started.md against a fresh service. `npm run admin -- …` runs scripts/admin.ts with
// those arguments (and what `printf` pipes into it); `curl` sends the request as written, to the test's
// service instead of localhost:3000. Placeholders are filled from earlier answers (<buyer-key>,
// <purchaseRequest.id>, <people.ana.id>). A comment on or below a command that names a purchase status,
// an outcome or a reason code (after "becomes": what it becomes) must name what the answer holds.
import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { ADMIN_TOKEN, startApp } from '../helpers/app.ts';
import { REASON_CODES } from '../../src/engine/types.ts';

const CODES = new Set<string>([
  ...REASON_CODES,
  ...['EVALUATING', 'PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED', 'REQUIRES_APPROVAL'],
]);
/** Commands a test process cannot run as such; each is covered elsewhere. */
const SKIPPED = [
  /^export ADMIN_TOKEN=/, // the test's service has its own token
  /^npm install && npm start\b/, // test/process/npm-start.test.ts
  /^npm test$/, // the suite this test is part of
  /^npx node examples\/mcp-client\.ts\b/, // test/oauth/example-client.test.ts
];

interface Command {
  words: string[][]; // a pipeline: each command's words
  comment: string;
}

/** The commands of a page's `sh` blocks, continuation lines joined, each with its comments. */
function commands(markdown: string): Command[] {
  const result: Command[] = [];
  for (const [, block] of markdown.matchAll(/^```sh\n([\s\S]*?)^```/gm)) {
    for (const line of block.replace(/\\\n/g, ' ').split('\n')) {
      const { words, comment } = parse(line);
      if (words.length > 0) result.push({ words, comment });
      else if (comment && result.length > 0) result[result.length - 1].comment += ' ' + comment;
    }
  }
  return result;
}

/** Shell words with '…' and "…" quoting, split at `|`; the rest of the line after an unquoted `#`. */
function parse(line: string): { words: string[][]; comment: string } {
  const pipeline: string[][] = [[]];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (/\s/.test(c) || c === '|' || (c === '#' && word === null)) {
      if (word !== null) pipeline[pipeline.length - 1].push(word);
      word = null;
      if (c === '|') pipeline.push([]);
      if (c === '#') return { words: pipeline.filter((w) => w.length > 0), comment: line.slice(i + 1).trim() };
    } else word = (word ?? '') + c;
  }
  if (word !== null) pipeline[pipeline.length - 1].push(word);
  return { words: pipeline.filter((w) => w.length > 0), comment: '' };
}

function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

async function admin(url: string, args: string[], input: string) {
  const child = spawn(process.execPath, ['scripts/admin.ts', ...args], { env: { ...process.env, SERVICE_URL: url, ADMIN_TOKEN } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => void (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => void (stderr += c.toString()));
  child.stdin.end(input);
  const [code] = await once(child, 'exit');
  return { code: code as number, stdout, stderr };
}

/** Runs a page's commands against a fresh service; what went otherwise than the page says. */
async function walk(markdown: string): Promise<string[]> {
  const app = await startApp();
  const problems: string[] = [];
  const answers: Record<string, any> = {};
  const fill = (word: string) =>
    word.replace(/<([^>]+)>/g, (whole, name: string) => {
      const value = { 'buyer-key': answers.apply?.apiKeys?.['buyer-key']?.key, 'purchaseRequest.id': answers.purchase?.purchaseRequest?.id, 'people.ana.id': answers.apply?.people?.ana?.id }[name];
      if (value === undefined) problems.push(`no value for ${whole}`);
      return value ?? whole;
    });
  try {
    for (const { words, comment } of commands(markdown)) {
      const shown = words.map((w) => w.join(' ')).join(' | ');
      if (SKIPPED.some((re) => re.test(shown))) continue;
      const [first, second] = words.map((w) => w.map(fill));
      let answer: unknown;
      if (first[0] === 'curl') {
        const [, , url, ...options] = first;
        const headers: Record<string, string> = {};
        let body: string | undefined;
        for (let i = 0; i < options.length; i += 2) {
          if (options[i] === '-H') {
            const [name, ...value] = options[i + 1].split(':');
            headers[name.toLowerCase()] = value.join(':').trim();
          } else if (options[i] === '-d') body = options[i + 1];
          else problems.push(`${shown}: option ${options[i]} not understood`);
        }
        const path = url.replace(/^(http:\/\/)?localhost:3000/, '');
        const res = await app.request(path, { raw: body, headers });
        if (res.status >= 300) problems.push(`${shown}: ${res.status} ${res.text}`);
        if (path === '/v1/purchase-requests') answers.purchase = res.body;
        answer = res.body;
      } else {
        const cli = second ?? first;
        const input = second && first[0] === 'printf' && first[1] === '%s' ? first[2] : '';
        if (cli.slice(0, 4).join(' ') !== 'npm run admin --' || (second && input === '')) {
          problems.push(`${shown}: not a command this test knows how to run`);
          continue;
        }
        const res = await admin(app.url, cli.slice(4), input);
        if (res.code !== 0) problems.push(`${shown}: exit ${res.code} ${res.stderr}`);
        answer = res.code === 0 ? JSON.parse(res.stdout) : undefined;
        if (cli[4] === 'apply') answers.apply = answer;
      }
      const said = comment.split(/\bbecomes\b/).pop()!;
      const found = new Set(strings(answer));
      for (const code of said.match(/\b[A-Z][A-Z_]+\b/g) ?? []) {
        if (CODES.has(code) && !found.has(code)) problems.push(`${shown}: the page says ${code}, the answer holds ${[...found].filter((s) => CODES.has(s)).join(', ')}`);
      }
    }
  } finally {
    await app.close();
  }
  return problems;
}

for (const page of ['README.md', 'docs/guide/getting-started.md']) {
  test(`${page}: every command runs as written and answers what the page says`, async (t) => {
    const markdown = readFileSync(page, 'utf8');
    t.true(commands(markdown).length >= 4);
    t.deepEqual(await walk(markdown), []);
  });
}

test('the walk finds a command that answers otherwise than its comment says, and one it cannot run', async (t) => {
  const readme = readFileSync('README.md', 'utf8');
  const altered = readme.replace('"amountMinor":"1999"', '"amountMinor":"60000"').replace('npm run admin -- answer', 'npm run admin -- anwser');
  const problems = await walk(altered);
  t.true(problems.some((p) => /the page says APPROVED, the answer holds .*REJECTED/.test(p)), problems.join('\n'));
  t.true(problems.some((p) => /anwser.*exit 2/.test(p)), problems.join('\n'));
});
