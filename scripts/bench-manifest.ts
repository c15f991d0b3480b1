// The benchmarks' organisation and request body (scripts/bench.ts, scripts/bench-round-trips.ts).

export const BENCH_TOKEN = 'bench-admin-token-0123456789abcdef';

export function benchManifest() {
  const agents = Array.from({ length: 20 }, (_, i) => ({ handle: `agent-${i}`, name: `Agent ${i}` }));
  const policies = Array.from({ length: 10 }, (_, p) => ({
    handle: `policy-${p}`,
    name: `Policy ${p}`,
    scope: p < 4 ? 'ORGANIZATION' : 'AGENT',
    agents: p < 4 ? undefined : agents.filter((_, i) => i % 6 === p % 6).map((a) => a.handle),
    currencies: ['EUR', 'USD'],
    rules: [
      { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '500000' },
      { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '200000' },
      { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '900000000000' },
      { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '9000000000000', currency: 'EUR' },
    ],
    merchants: Array.from({ length: 40 }, (_, m) => ({ listType: 'BLOCK', label: `Blocked merchant ${p}-${m}` })),
  }));
  return {
    organization: { handle: 'bench', name: 'Bench Corp', currency: 'EUR', timezone: 'Europe/Berlin' },
    agents,
    policies,
    apiKeys: agents.map((a) => ({ handle: `${a.handle}-key`, agent: a.handle })),
  };
}

export const BENCH_BODY = JSON.stringify({ merchant: 'Paper Supplies GmbH', amountMinor: '4599', reason: 'Printer paper', currency: 'EUR', category: 'office', metadata: { ticket: 'OPS-1234' } });
