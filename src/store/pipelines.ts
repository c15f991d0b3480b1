// The stages of an aggregation pipeline wherever they stand: at its top level, or nested in the
// pipelines of $lookup, $unionWith and $facet. What reads another collection or writes must be found
// at any depth, not only at the top.

/** Calls visit with each stage's operator and spec, nested pipelines included (after the stage that holds them). */
export function forEachStage(pipeline: unknown, visit: (operator: string, spec: unknown) => void): void {
  if (!Array.isArray(pipeline)) return;
  for (const stage of pipeline) {
    if (!stage || typeof stage !== 'object') continue;
    for (const [operator, spec] of Object.entries(stage)) {
      visit(operator, spec);
      const s = spec && typeof spec === 'object' && !Array.isArray(spec) ? (spec as Record<string, unknown>) : undefined;
      if (operator === '$facet') for (const sub of Object.values(s ?? {})) forEachStage(sub, visit);
      else if (operator === '$lookup' || operator === '$unionWith') forEachStage(s?.pipeline, visit);
    }
  }
}

/**
 * Whether a pipeline writes: $out or $merge anywhere in it. MongoDB allows them only as the last stage
 * of the top level; the embedded engine supports neither, and nested in $facet, $lookup or $unionWith
 * mingo would run them on a copy of the target, answering as if nothing had been asked.
 */
export function writesAnywhere(pipeline: unknown): boolean {
  let writes = false;
  forEachStage(pipeline, (operator) => {
    if (operator === '$out' || operator === '$merge') writes = true;
  });
  return writes;
}
