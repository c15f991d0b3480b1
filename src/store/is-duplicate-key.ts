// Both engines report a unique-index violation as MongoDB does: code 11000.
export const isDuplicateKey = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === 11000;
