// An organisation shaped to reach every reason code (docs/reference/contract.md §2.1) through real HTTP.
export function shopManifest(handle = 'shop') {
  return {
    organization: { handle, name: 'Shop', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT1H' },
    people: [{ handle: 'ana', name: 'Ana Approver', email: `ana@${handle}.example` }],
    agents: [
      { handle: 'a', name: 'Agent A' },
      { handle: 'b', name: 'Agent B' },
      { handle: 'm', name: 'Monthly agent' },
      { handle: 'off', name: 'Switched off', status: 'DISABLED' },
      { handle: 'lonely', name: 'No policy governs me' },
    ],
    policies: [
      {
        handle: 'main',
        name: 'Main rules',
        scope: 'AGENT',
        agents: ['a', 'off'],
        currencies: ['EUR'],
        rules: [
          { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '50000' },
          { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: 20000 },
          { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '100000' },
        ],
        merchants: [{ listType: 'BLOCK', label: 'Shady Goods Ltd' }],
      },
      {
        handle: 'allow',
        name: 'Paper only',
        scope: 'AGENT',
        agents: ['b'],
        currencies: ['EUR', 'USD'],
        rules: [],
        merchants: [{ listType: 'ALLOW', label: 'Paper Co' }],
      },
      {
        handle: 'monthly',
        name: 'Monthly budget',
        scope: 'AGENT',
        agents: ['m'],
        currencies: ['EUR'],
        rules: [{ ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '30000' }],
        merchants: [],
      },
    ],
    apiKeys: [
      { handle: 'a-key', agent: 'a' },
      { handle: 'a-key-2', agent: 'a' },
      { handle: 'b-key', agent: 'b' },
      { handle: 'm-key', agent: 'm' },
      { handle: 'off-key', agent: 'off' },
      { handle: 'lonely-key', agent: 'lonely' },
      { handle: 'org-key' },
    ],
  };
}

export const purchase = (amountMinor: string | number, merchant = 'Paper Co', extra: Record<string, unknown> = {}) => ({
  merchant,
  amountMinor,
  reason: 'Printer paper for the office',
  ...extra,
});
