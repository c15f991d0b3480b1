// An organisation with a two-person rule (and a three-person one above it), a single-approver rule for
// another agent, three approvers and a viewer: the quorum approvals of issue #32.
export function quorumManifest(handle: string) {
  return {
    organization: { handle, name: 'Quorum Ltd', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT1H' },
    people: [
      { handle: 'ana', name: 'Ana Approver', email: `ana@${handle}.example` },
      { handle: 'bob', name: 'Bob Approver', email: `bob@${handle}.example` },
      { handle: 'cyd', name: 'Cyd Approver', email: `cyd@${handle}.example` },
      { handle: 'vic', name: 'Vic Viewer', email: `vic@${handle}.example`, roles: ['viewer'] },
    ],
    agents: [
      { handle: 'buyer', name: 'Buyer' },
      { handle: 'solo', name: 'Solo buyer' },
    ],
    policies: [
      {
        handle: 'two-person',
        name: 'Two-person rule',
        scope: 'AGENT',
        agents: ['buyer'],
        currencies: ['EUR'],
        rules: [
          { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '20000', approvalsRequired: 2 },
          { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '100000', approvalsRequired: 3 },
          { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '500000' },
          { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '10000000' },
        ],
      },
      {
        handle: 'one-person',
        name: 'One-person rule',
        scope: 'AGENT',
        agents: ['solo'],
        currencies: ['EUR'],
        rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '20000' }],
      },
    ],
    apiKeys: [{ handle: 'buyer-key', agent: 'buyer' }, { handle: 'solo-key', agent: 'solo' }, { handle: 'admin-key' }],
  };
}
