// Recorded with every decision as evidence (docs/reference/contract.md §2.3 `engineVersion`). Bump when semantics change.
export const ENGINE_VERSION = 'spend-engine@1.0.0';
