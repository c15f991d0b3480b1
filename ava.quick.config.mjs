// `npm run test:quick`: the unit and command-level tests, in under a minute on two cores. The engine,
// commands, the store's conformance suite on the embedded engine (:memory: and a file), the handlers
// and the HTTP surface in-process. Left to `npm test` (which runs everything): child processes (CLI,
// Deno, shutdown, the port, durability, the engine benchmark), browsers, threads, the wire-protocol
// listener, fuzzing, the compiler-driven client types, and the OAuth, MCP and dashboard flows (many
// password hashes each: the slowest files of the suite).
export default {
  extensions: ['ts'],
  files: [
    'test/engine/*.test.ts',
    '!test/engine/bench.test.ts',
    'test/commands/*.test.ts',
    'test/platform/*.test.ts',
    'test/store/embedded.test.ts',
    'test/store/embedded-semantics.test.ts',
    'test/store/fences.test.ts',
    'test/store/bounded-transactions.test.ts',
    'test/store/indexes.test.ts',
    'test/store/mongo-config.test.ts',
    'test/http/*.test.ts',
    '!test/http/wire-conflicts.test.ts',
    'test/approvals/*.test.ts',
    'test/webhooks/*.test.ts',
    '!test/webhooks/end-to-end.test.ts',
    '!test/webhooks/send.test.ts',
    'test/openapi/document.test.ts',
    'test/openapi/error-codes.test.ts',
  ],
  timeout: '2m',
  // Most of these files spend their time waiting (jobs polling, timers): more at once than cores.
  concurrency: 8,
  workerThreads: false,
};
