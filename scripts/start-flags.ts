// The V8 flags of package.json's start script, so that the benchmark and the soak measure the
// service as `npm start` (and the Procfile) run it. BENCH_V8_FLAGS overrides them: '0' for none,
// or a space-separated list of flags to compare.
import { readFileSync } from 'node:fs';

export function startFlags(): string[] {
  const override = process.env.BENCH_V8_FLAGS;
  if (override === '0') return [];
  if (override) return override.split(/\s+/).filter(Boolean);
  const start = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start;
  return start.split(/\s+/).filter((word) => word.startsWith('--'));
}
