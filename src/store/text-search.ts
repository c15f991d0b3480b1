// Plain-text "contains" searches (the dashboard's merchant filter, GET /v1/policies `search`), with the
// merchant key's full case folding (src/engine/merchant-fold.ts caseFold): 'ss' finds 'ß', 'istanbul'
// finds 'İstanbul', 'ａｃｍｅ' finds 'Acme'. A regex flag cannot do that ('i' folds one code point to one),
// so each read model stores its text already folded and the query is folded the same way
// (docs/reference/decisions.md, "Text searches"). The regex is unanchored: it narrows what the
// organisation's index selects, as before, and selects nothing on its own.
import { caseFold } from '../engine/merchant-fold.ts';
import type { StoreDb } from './store.ts';

export { caseFold };

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A filter on a field holding caseFold(text): the text contains `query`, folded alike. */
export const containsFolded = (query: string) => ({ $regex: escapeRegex(caseFold(query)) });

/**
 * Sets `field` to caseFold of the text at `source` (a dotted path) wherever it is missing or was folded
 * otherwise (an older release's toLowerCase), in _id order, `batchSize` at a time. Run at start; the
 * marker makes later starts skip it. Returns how many documents it changed.
 */
export async function refoldOnce(db: StoreDb, args: { marker: string; collection: string; field: string; source: string }, batchSize = 500): Promise<number> {
  const markers = db.collection<{ _id: string; doneAt: Date }>('migrations');
  if (await markers.findOne({ _id: args.marker })) return 0;
  const docs = db.collection<{ _id: string } & Record<string, unknown>>(args.collection);
  const textAt = (doc: Record<string, unknown>) => String(args.source.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], doc) ?? '');
  let changed = 0;
  for (let after = ''; ; ) {
    const batch = await docs.find({ _id: { $gt: after } }, { projection: { [args.field]: 1, [args.source]: 1 } }).sort({ _id: 1 }).limit(batchSize).toArray();
    if (batch.length === 0) break;
    for (const doc of batch) {
      const folded = caseFold(textAt(doc));
      if (doc[args.field] === folded) continue;
      await docs.updateOne({ _id: doc._id }, { $set: { [args.field]: folded } });
      changed++;
    }
    after = batch[batch.length - 1]._id;
  }
  await markers.updateOne({ _id: args.marker }, { $set: { doneAt: new Date() } }, { upsert: true });
  return changed;
}
