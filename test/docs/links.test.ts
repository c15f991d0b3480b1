// The repository stands alone: every relative link in README.md and docs/ (and any other Markdown
// file of ours) points at a file that exists inside the repository, every #anchor at a heading that
// exists, and nothing refers to ../shared/. And every citation of a page and section
// (`docs/reference/contract.md §4.1`, `docs/internals/design.md §6a`) in the README, docs/, src/,
// test/ and scripts/ names a page that exists and a section it has.
import test from 'ava';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SKIP = new Set(['node_modules', '.git', 'data', 'dist']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const path = join(dir, name);
    return statSync(path).isDirectory() ? markdownFiles(path) : name.endsWith('.md') ? [path] : [];
  });
}

/** Markdown without fenced code blocks and inline code, where links are not links. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, duplicates numbered. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of text.replace(/^```[\s\S]*?^```/gm, '').split('\n')) {
    const heading = /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .trim()
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

export function brokenLinks(file: string, text: string = readFileSync(file, 'utf8')): string[] {
  const problems: string[] = [];
  const where = relative(ROOT, file);
  if (text.includes('../shared')) problems.push(`${where}: mentions ../shared`);
  for (const [, target] of prose(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    if (/^(https?:|mailto:)/.test(target)) continue;
    const [pathPart, anchor] = target.split('#', 2);
    const resolved = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
    if (relative(ROOT, resolved).startsWith('..')) {
      problems.push(`${where}: ${target} leaves the repository`);
      continue;
    }
    if (!existsSync(resolved)) {
      problems.push(`${where}: ${target} does not exist`);
      continue;
    }
    if (anchor && resolved.endsWith('.md') && !anchors(pathPart === '' ? text : readFileSync(resolved, 'utf8')).has(anchor)) {
      problems.push(`${where}: ${target} names no heading of ${relative(ROOT, resolved)}`);
    }
  }
  return problems;
}

/** Source and documentation files whose citations are checked. */
function citingFiles(): string[] {
  const own = fileURLToPath(import.meta.url);
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      if (SKIP.has(name)) return [];
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : /\.(ts|js|md)$/.test(name) && path !== own ? [path] : [];
    });
  return [join(ROOT, 'README.md'), ...['docs', 'src', 'test', 'scripts'].flatMap((d) => walk(join(ROOT, d)))];
}

/** Whether a page has the section: a heading numbered so (`## 4.`, `### 2.1 ...`, `### 6a.`), or a numbered table row (`| 4.1 |`, the contract's operations). */
export function hasSection(page: string, section: string): boolean {
  const n = section.replace(/\./g, '\\.');
  return new RegExp(`^(#{1,6}\\s+${n}\\.?\\s|\\|\\s*${n}\\s*\\|)`, 'm').test(page);
}

/**
 * Citations of pages under docs/ in one file's text: `docs/<page>.md` alone (the page must exist), or
 * followed by sections, `§4.1`, `§4.1, §4.2`, `§4.3-4.5`, `§5.1/§5.3`, `§1 and §6a` (each must exist).
 */
export function brokenCitations(file: string, text: string = readFileSync(file, 'utf8')): string[] {
  const problems: string[] = [];
  const where = relative(ROOT, file);
  const SECTION = String.raw`\d+(?:\.\d+)?[a-z]?`;
  const LIST = new RegExp(String.raw`^ §${SECTION}(?:-${SECTION})?(?:(?:, | and | / |/)§${SECTION}(?:-${SECTION})?)*`);
  // The contract and design as this repository's authors received them are not in it: cite docs/ instead.
  for (const match of text.matchAll(/(?<![\w/.-])(?:SPEC|DESIGN)\.md\b/g)) problems.push(`${where}: cites ${match[0]}, which a cloner does not have`);
  for (const match of text.matchAll(/(?<![\w/.])(docs\/[\w/-]+\.md)/g)) {
    const page = match[1];
    const path = join(ROOT, page);
    if (!existsSync(path)) {
      problems.push(`${where}: cites ${page}, which does not exist`);
      continue;
    }
    const list = LIST.exec(text.slice(match.index + page.length));
    if (!list) continue;
    const content = readFileSync(path, 'utf8');
    for (const section of list[0].match(new RegExp(SECTION, 'g')) ?? []) {
      if (!hasSection(content, section)) problems.push(`${where}: cites ${page} §${section}, which has no such section`);
    }
  }
  return problems;
}

test('README.md and every Markdown file link only to files and headings that exist in the repository', (t) => {
  const files = markdownFiles(ROOT);
  t.true(files.includes(join(ROOT, 'README.md')));
  t.true(files.some((f) => f.startsWith(join(ROOT, 'docs'))), 'docs/ holds Markdown');
  t.deepEqual(files.flatMap((f) => brokenLinks(f)), []);
});

test('the checker finds a missing file, a missing heading, a link out of the repository and ../shared', (t) => {
  const file = join(ROOT, 'README.md');
  const problems = brokenLinks(file, '# Title\n[a](docs/nope.md) [b](#no-such-heading) [c](../../etc/passwd) [d](../shared/SPEC.md) [ok](#title) `[code](nope.md)`\n');
  t.is(problems.length, 5, problems.join('\n'));
  t.regex(problems.join('\n'), /nope\.md does not exist/);
  t.regex(problems.join('\n'), /#no-such-heading names no heading/);
  t.regex(problems.join('\n'), /leaves the repository/);
  t.regex(problems.join('\n'), /mentions \.\.\/shared/);
});

test('every cited page exists, and every cited section of it', (t) => {
  const files = citingFiles();
  t.true(files.some((f) => f.endsWith(join('src', 'webhooks', 'signing.ts'))), 'src/ is scanned');
  t.deepEqual(files.flatMap((f) => brokenCitations(f)), []);
});

test('the citation checker finds a missing page, a missing section, and one bad item of a list or range', (t) => {
  const file = join(ROOT, 'src', 'example.ts');
  const problems = brokenCitations(
    file,
    [
      '// docs/reference/contract.md §4.1 and docs/internals/design.md §6a are fine, as is docs/reference/decisions.md.',
      '// docs/reference/nope.md is missing; docs/reference/contract.md §4.99 is not a section.',
      '// docs/reference/contract.md §2.1, §2.9 and docs/reference/contract.md §4.3-4.25; docs/internals/design.md §1 and §12.',
      '// The outbox (SPEC.md 6.1), as DESIGN.md plans it.',
    ].join('\n'),
  );
  t.deepEqual(problems, [
    'src/example.ts: cites SPEC.md, which a cloner does not have',
    'src/example.ts: cites DESIGN.md, which a cloner does not have',
    'src/example.ts: cites docs/reference/nope.md, which does not exist',
    'src/example.ts: cites docs/reference/contract.md §4.99, which has no such section',
    'src/example.ts: cites docs/reference/contract.md §2.9, which has no such section',
    'src/example.ts: cites docs/reference/contract.md §4.25, which has no such section',
    'src/example.ts: cites docs/internals/design.md §12, which has no such section',
  ]);
  t.true(hasSection('## 3. Choices\n', '3'));
  t.false(hasSection('## 3. Choices\n', '3.1'));
  t.false(hasSection('### 7.1 Retries\n', '7'));
  t.true(hasSection('### 6a. Patterns\n', '6a'));
  t.true(hasSection('| 4.19 | `/mcp` |\n', '4.19'));
});

/** The pages of docs/ (Markdown) a map does not link to. */
export function unmappedPages(map: string, mapFile: string): string[] {
  const docs = join(ROOT, 'docs');
  const linked = new Set(
    [...prose(map).matchAll(/\]\(\s*<?([^)\s>#]+)/g)].map(([, target]) => resolve(dirname(mapFile), decodeURIComponent(target))),
  );
  return markdownFiles(docs)
    .filter((page) => page !== mapFile && !linked.has(page))
    .map((page) => relative(ROOT, page));
}

test('README.md and docs/README.md map every page of docs/', (t) => {
  for (const map of [join(ROOT, 'README.md'), join(ROOT, 'docs', 'README.md')]) {
    t.deepEqual(unmappedPages(readFileSync(map, 'utf8'), map), [], `${relative(ROOT, map)} leaves these pages out`);
  }
  t.false(unmappedPages('[a](docs/guide/getting-started.md)', join(ROOT, 'README.md')).includes('docs/guide/getting-started.md'));
  t.true(unmappedPages('', join(ROOT, 'README.md')).includes('docs/integrate/receipts.md'));
});
