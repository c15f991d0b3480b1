// `npm run verify-receipts -- --jwks <file or URL> [--from <seq>] <export.jsonl>`: checks an export of an
// organisation's decision receipts (`npm run admin -- export-log`) offline, with the service's public keys
// only (docs/operate/auditors.md): every signature, seq from 1 (or from the --from the export was made
// with) without a gap or a change of order, and every prev the hash of the receipt before. Exits 0 when
// all hold, 1 naming the first bad or missing seq, 2 on a usage mistake or an unreadable input (a JWKS
// with a private part included).
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { keysOf, parseSeqOption, SEQ_OPTION_MISTAKE, verifyChain, type LogLine } from '../src/receipts/verify.ts';

const USAGE = 'Usage: npm run verify-receipts -- --jwks <jwks.json file or https URL> [--from <seq>] [--organization <id>] <export.jsonl>';

function fail(code: number, message: string): never {
  process.stderr.write(message + '\n');
  process.exit(code);
}

async function readJwks(source: string): Promise<unknown> {
  if (/^https?:\/\//i.test(source)) {
    const res = await fetch(source).catch((err: Error) => fail(2, `cannot fetch ${source}: ${err.message}`));
    if (!res.ok) fail(2, `cannot fetch ${source}: HTTP ${res.status}`);
    return res.json();
  }
  return JSON.parse(await readFile(source, 'utf8'));
}

/** The export's lines; a line that is not `{"seq", "receipt"}` stands for the seq that should be there. */
function* linesOf(text: string): Generator<LogLine> {
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    let line: Partial<LogLine> | null;
    try {
      line = JSON.parse(raw);
    } catch {
      line = {};
    }
    // A line that is JSON but no object (`null`, say) is a bad line too, not a crash.
    if (line === null || typeof line !== 'object') line = {};
    yield { seq: typeof line.seq === 'number' ? line.seq : NaN, receipt: typeof line.receipt === 'string' ? line.receipt : '' };
  }
}

async function main(): Promise<void> {
  let values: { jwks?: string; from?: string; organization?: string };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: process.argv.slice(2), allowPositionals: true, options: { jwks: { type: 'string' }, from: { type: 'string' }, organization: { type: 'string' } } }));
  } catch (err) {
    fail(2, `${(err as Error).message}\n${USAGE}`);
  }
  // Where an export made with `export-log --from` starts; a whole export starts at 1, so a file that
  // starts later without saying so has lost its first lines.
  const from = values.from === undefined ? 1 : parseSeqOption(values.from);
  if (!values.jwks) fail(2, `--jwks is required: the public keys to verify with\n${USAGE}`);
  if (positionals.length !== 1) fail(2, `give one export file (got ${positionals.length})\n${USAGE}`);
  if (from === null) fail(2, `${SEQ_OPTION_MISTAKE(values.from!)}\n${USAGE}`);
  let keys;
  try {
    keys = keysOf(await readJwks(values.jwks));
  } catch (err) {
    fail(2, `cannot read the keys from ${values.jwks}: ${(err as Error).message}`);
  }
  const text = await readFile(positionals[0], 'utf8').catch((err: NodeJS.ErrnoException) => fail(2, `cannot read ${positionals[0]}: ${err.code ?? err.message}`));
  // A whole, sound chain of another organisation than the one asked about verifies as well: the
  // auditor names the organisation, or reads it in the answer.
  // Ids are lower-case UUIDs; one in capitals is the same, as export-log takes it.
  const expected = values.organization?.toLowerCase();
  const ofOrganization = (payload: { organizationId: string }) =>
    expected === undefined || payload.organizationId === expected ? null : `the receipt is of organisation ${payload.organizationId}, not ${expected} (--organization)`;
  const result = verifyChain(linesOf(text), keys, ofOrganization, from);
  if (!result.ok) fail(1, `seq ${result.seq}: ${result.reason}`);
  if (result.count === 0) fail(1, `${positionals[0]} holds no receipts`);
  const partial = from === 1 ? '' : ` (an export from seq ${from}: its first prev is taken as given)`;
  process.stdout.write(`${result.count} receipt(s), seq ${result.first}..${result.last}, verified: signatures, order and chain hold${partial}; organisation ${result.organizationId}.\n`);
}

if (import.meta.main) await main();
