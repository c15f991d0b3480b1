// Summarises V8 CPU profiles (node --cpu-prof, or BENCH_PROFILE=<dir> npm run bench): self time per
// function and per file, as microseconds of CPU per request when a request count is given.
// Run: node scripts/profile-summary.ts <file.cpuprofile> [requests] [top]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, requestsArg, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node scripts/profile-summary.ts <file.cpuprofile> [requests] [top]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const requests = Number(requestsArg || 0);
const top = Number(topArg || 40);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

const shortUrl = (url: string) => url.replace(/^file:\/\/.*?\/(node_modules|src|scripts)\//, '$1/');
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const where = shortUrl(url) || '(native)';
  const fn = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  const f = functionName === '(idle)' || functionName === '(program)' || functionName === '(garbage collector)' ? functionName : where.replace(/(node_modules\/(@[^/]+\/)?[^/]+)\/.*/, '$1');
  byFile.set(f, (byFile.get(f) ?? 0) + us);
  total += us;
}
// Inclusive time of the service's own functions (src/): what a function and everything it calls cost.
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
    if (!url.includes('/src/')) continue;
    const fn = `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}`;
    if (seen.has(fn)) continue;
    seen.add(fn);
    inclusive.set(fn, (inclusive.get(fn) ?? 0) + us);
  }
}
const unit = requests > 0 ? 'µs/request' : 'ms';
const fmt = (us: number) => (requests > 0 ? (us / requests).toFixed(1) : (us / 1000).toFixed(0));
const print = (title: string, rows: Map<string, number>) => {
  process.stdout.write(`\n${title} (${unit}, share of samples)\n`);
  for (const [name, us] of [...rows].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${fmt(us).padStart(9)}  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${name}\n`);
  }
};
print('By file or package', byFile);
print('By function', byFunction);
print('Inclusive, src/ functions', inclusive);
