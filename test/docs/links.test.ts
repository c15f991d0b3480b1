// The repository stands alone: every relative link in README.md and docs/ (and any other Markdown
// file of ours) points at a file that exists inside the repository, every #anchor at a heading that
// exists, and nothing refers to ../shared/.
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
