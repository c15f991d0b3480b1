// The cost of a decision's receipt (docs/integrate/receipts.md), in this process: signing one (Ed25519
// over the JWS, and the SHA-256 that is the next prev) with the facts of a realistic decision, as
// src/purchases/lifecycle.ts does it inside every INITIAL and APPROVAL_REEVALUATION decision.
// `node scripts/bench-receipts.ts [n]`; part of `npm run bench`, which sets it beside the CPU time a
// whole decision costs the service.
import { generateKeyPairSync } from 'node:crypto';
import { EMPTY_CHAIN, bodySha256, nextReceipt, type ChainHead, type DecisionFacts } from '../src/receipts/chain.ts';
import { BENCH_BODY } from './bench-manifest.ts';

export function benchReceipts(n = 20_000): { signings: number; meanUs: number; p50Us: number; p99Us: number } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const key = { kid: 'bench', privateKey };
  const facts: DecisionFacts = {
    iss: 'https://spend.example.com',
    organizationId: '0190aaaa-0000-7000-8000-000000000001',
    agentId: '0190aaaa-0000-7000-8000-000000000002',
    purchaseRequestId: '0190aaaa-0000-7000-8000-000000000003',
    decisionId: '0190aaaa-0000-7000-8000-000000000004',
    kind: 'INITIAL',
    outcome: 'APPROVED',
    reasonCodes: [],
    amountMinor: '1999',
    currency: 'EUR',
    merchant: 'Paper Co',
    evaluatedAt: new Date().toISOString(),
    policyVersionIds: Array.from({ length: 10 }, (_, i) => `0190aaaa-0000-7000-8000-0000000001${String(i).padStart(2, '0')}`),
    requestSha256: '',
  };
  let head: ChainHead = EMPTY_CHAIN;
  const sample = (count: number) => {
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const start = process.hrtime.bigint();
      // The body's hash is part of the receipt's cost: it is computed for it alone.
      const signed = nextReceipt(head, { ...facts, requestSha256: bodySha256(BENCH_BODY) }, key);
      times.push(Number(process.hrtime.bigint() - start) / 1000);
      head = signed.head;
    }
    return times;
  };
  sample(Math.min(2000, n)); // warm-up
  const times = sample(n).sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 10) / 10;
  return { signings: n, meanUs: round(times.reduce((a, b) => a + b, 0) / n), p50Us: round(times[Math.floor(n / 2)]), p99Us: round(times[Math.floor(n * 0.99)]) };
}

if (import.meta.main) process.stdout.write(JSON.stringify(benchReceipts(Number(process.argv[2] || 20_000))) + '\n');
