// Timestamps on the wire are ISO 8601 UTC with milliseconds; something that has not happened is null
// (docs/reference/contract.md §2.1).
export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
