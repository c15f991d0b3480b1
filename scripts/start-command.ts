// How package.json's start script runs the service (its environment assignments and V8 flags), so
// that the benchmark and the soak measure the service as `npm start` (and the Procfile) run it.
// BENCH_V8_FLAGS overrides the flags: '0' for none, or a space-separated list of flags to compare.
// The callers let the environment override the script's variables (MALLOC_ARENA_MAX=8 npm run soak).
import { readFileSync } from 'node:fs';

export function startCommand(): { env: Record<string, string>; flags: string[] } {
  const start = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
  const words = start.split(/\s+/).filter(Boolean);
  const node = words.indexOf('node');
  if (node < 0) throw new Error(`package.json's start script does not run node: ${start}`);
  // Before node: the variables, and `exec` (so that npm's signals reach node, not the shell).
  const env = Object.fromEntries(words.slice(0, node).filter((word) => word.includes('=')).map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]));
  const override = process.env.BENCH_V8_FLAGS;
  const flags = override === '0' ? [] : override ? override.split(/\s+/).filter(Boolean) : words.slice(node + 1).filter((word) => word.startsWith('--'));
  return { env, flags };
}
