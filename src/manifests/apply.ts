// Applies an organisation manifest (docs/internals/design.md §5) in one transaction: create or update by
// handle, never duplicate. A changed policy gets a new version (numbered here), activated only when
// asked; keys are issued once and their secret appears only in this call's result.
import { createHash } from 'node:crypto';
import { DEFAULT_ROLES, type Manifest, type ManifestPolicy } from '../../schemas/manifest.ts';
import { invalidRequest, VersionConflict, type ErrorIssue } from '../http/errors.ts';
import { newRandomId } from '../ids.ts';
import { merchantKey } from '../engine/merchant-key.ts';
import { parseMinor, toStored } from '../money.ts';
import { issueApiKey } from '../identity/credentials/api-keys.ts';
import { endOrganizationSessions } from '../identity/sessions/documents.ts';
import { changeAgentStatus, finishAgentStatusChange } from '../agents/change-status.ts';
import { runCommand } from '../commands/run-command.ts';
import type { AppDeps } from '../app-deps.ts';
import { projectPolicy } from '../policies/projection.ts';
import type { AgentDoc, Collections, PolicyDoc, PolicyVersionDoc } from '../store/collections.ts';
import { isDuplicateKeyError, type StoreSession } from '../store/store.ts';
import { canonicalTtl, checkManifest, keyBindingImmutable, keyRevocationFinal } from './check.ts';
import { canonicalZone } from '../timezones.ts';
import { checkVersion, type PolicyIssue, type VersionContent } from '../policies/check-version.ts';
import { approverCount } from '../identity/people/roles.ts';


export interface ApplyResult {
  organization: { id: string; handle: string };
  agents: Record<string, { id: string }>;
  people: Record<string, { id: string }>;
  policies: Record<string, { id: string; activeVersionId: string | null; draftVersionId: string | null }>;
  apiKeys: Record<string, { id: string; prefix: string; key?: string }>;
  /** False when everything already was as the manifest says: nothing was written (no version, key, event or stamp). */
  changed: boolean;
  /** What is applied but looks wrong: each policy's warnings as `validate` reports them (checkVersion), at its manifest path. */
  warnings: PolicyIssue[];
}

/** A manifest policy's version as it would be stored (ids aside). */
export function versionContent(p: Pick<ManifestPolicy, 'currencies' | 'rules' | 'merchants'>): VersionContent {
  return {
    currencies: [...p.currencies],
    rules: p.rules.map((r) => ({
      ruleType: r.ruleType,
      effect: r.effect,
      periodKind: r.periodKind,
      amountMinor: toStored(parseMinor(r.amountMinor)!),
      currency: r.currency ?? null,
      // Stored only above the default, so that a version written before quorum (or one asking for 1) hashes the same.
      ...(r.effect === 'REQUIRE_APPROVAL' && (r.approvalsRequired ?? 1) > 1 ? { approvalsRequired: r.approvalsRequired } : {}),
    })),
    merchants: (p.merchants ?? []).map((m) => ({ listType: m.listType, merchantKey: merchantKey(m.label), label: m.label })),
  };
}

/** Order-insensitive digest: the same rules in another order are the same version. */
function contentHash(c: VersionContent): string {
  const canonical = {
    currencies: [...c.currencies].sort(),
    rules: c.rules
      .map((r) => JSON.stringify([r.ruleType, r.effect, r.periodKind, r.amountMinor, r.currency, ...((r.approvalsRequired ?? 1) > 1 ? [r.approvalsRequired] : [])]))
      .sort(),
    merchants: c.merchants.map((m) => JSON.stringify([m.listType, m.merchantKey, m.label])).sort(),
  };
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/**
 * The digest of a stored version as merchantKey reads its labels today. The contentHash stored with a
 * version holds the keys of when it was written, so after the key changed (confusable skeletons, issue
 * #29) an unchanged manifest would no longer match it and every policy with a merchant list would get a
 * spurious new version; the stored content is hashed again instead.
 */
function storedContentHash(v: PolicyVersionDoc): string {
  return contentHash({
    currencies: v.currencies,
    rules: v.rules.map(({ id: _id, ...r }) => r),
    merchants: v.merchants.map((m) => ({ listType: m.listType, merchantKey: merchantKey(m.label), label: m.label })),
  });
}

const NOT_APPLIED = 'The manifest is not valid; nothing was applied.';

/** A version's issue or warning (path relative to the version) at its place in the manifest: `policies.N.rules.M`. */
const atPolicy = (index: number) => (issue: PolicyIssue): ErrorIssue => ({ ...issue, path: issue.path ? `policies.${index}.${issue.path}` : `policies.${index}` });

/** An issue of the stored active version that enabling its policy would put in force: at the policy's status, which is what the manifest changes. */
const inForceAgain = (v: PolicyVersionDoc) => (issue: PolicyIssue): PolicyIssue => ({
  code: issue.code,
  path: 'status',
  message: `Enabling the policy puts its active version ${v.versionNumber} in force, and it is not acceptable${issue.path ? ` (${issue.path})` : ''}: ${issue.message}`,
});

export async function applyManifest(deps: AppDeps, input: unknown): Promise<ApplyResult> {
  const c = deps.collections;
  const handle = (input as Manifest)?.organization?.handle;
  const existingOrg = typeof handle === 'string' ? await c.organizations.findOne({ handle }) : null;
  const agents = existingOrg ? await c.agents.find({ organizationId: existingOrg._id }).toArray() : [];
  const agentHandles = new Map(agents.map((a) => [a._id, a.handle]));
  const keys = existingOrg ? await c.apiKeys.find({ organizationId: existingOrg._id }).toArray() : [];
  const issues = checkManifest(
    input,
    new Set(agents.map((a) => a.handle)),
    new Map(keys.map((k) => [k.handle, k.agentId === null ? null : (agentHandles.get(k.agentId) ?? k.agentId)])),
    new Set(keys.filter((k) => k.revokedAt).map((k) => k.handle)),
  );
  if (issues.length > 0) throw invalidRequest(issues, NOT_APPLIED);
  const manifest = input as Manifest;
  const now = deps.now();

  const changedAgents: Array<Pick<AgentDoc, '_id' | 'status'>> = [];
  /** Per policy of the manifest: the issues of its active version while the policy is not in force (warnings, a reminder that enabling it is refused). */
  const dormant = new Map<number, PolicyIssue[]>();
  const applied = await runCommand(deps.store, (session) => lostRaceOnDuplicate(applyIn(session)));
  async function applyIn(session: StoreSession): Promise<ApplyResult> {
    changedAgents.length = 0;
    const result: ApplyResult = { organization: { id: '', handle: manifest.organization.handle }, agents: {}, people: {}, policies: {}, apiKeys: {}, changed: false, warnings: [] };
    /** Every write below goes through this, so that `changed` says whether there was one. */
    const write = <T>(op: Promise<T>): Promise<T> => {
      result.changed = true;
      return op;
    };
    const o = manifest.organization;
    const org = await c.organizations.findOne({ handle: o.handle }, { session });
    const orgFields = { name: o.name, currency: o.currency, timezone: canonicalZone(o.timezone)!, approvalTtl: canonicalTtl(o.approvalTtl ?? org?.approvalTtl ?? 'PT24H'), status: o.status ?? org?.status ?? 'ACTIVE' };
    let orgId: string;
    if (org) {
      orgId = org._id;
      // Changes of zone and of TTL are recorded with their time: a replay reads those of a purchase's time.
      // One stored in another spelling of the same value is rewritten in its canonical one, and is no change.
      const history = {
        ...(canonicalZone(org.timezone) !== orgFields.timezone ? { timezoneChanges: { from: org.timezone, to: orgFields.timezone, at: now } } : {}),
        ...(canonicalTtl(org.approvalTtl) !== orgFields.approvalTtl ? { approvalTtlChanges: { from: org.approvalTtl, to: orgFields.approvalTtl, at: now } } : {}),
      };
      const push = Object.keys(history).length > 0 ? { $push: history } : {};
      if (changed(org, orgFields)) await write(c.organizations.updateOne({ _id: orgId }, { $set: { ...orgFields, updatedAt: now }, ...push }, { session }));
    } else {
      orgId = newRandomId();
      await write(c.organizations.insertOne({ _id: orgId, handle: o.handle, ...orgFields, createdAt: now, updatedAt: now }, { session }));
    }
    result.organization.id = orgId;
    if (orgFields.status === 'SUSPENDED') await endOrganizationSessions(deps.store.db, orgId, session);
    // Each kind read once, not once per item: a manifest of thousands would make as many round trips in this transaction.
    const byHandle = <T extends { handle: string }>(docs: T[]) => new Map(docs.map((d) => [d.handle, d]));

    const people = byHandle(await c.people.find({ organizationId: orgId }, { session }).toArray());
    for (const p of manifest.people ?? []) {
      const existing = people.get(p.handle);
      const fields = { name: p.name, email: p.email.toLowerCase(), roles: [...(p.roles ?? DEFAULT_ROLES)] };
      // Roles are a set, as a policy's agents are: in another order they are no change.
      const storedRoles = existing?.roles;
      if (storedRoles && sameMembers(storedRoles, fields.roles)) fields.roles = storedRoles;
      if (existing) {
        if (changed(existing, fields)) await write(c.people.updateOne({ _id: existing._id }, { $set: { ...fields, updatedAt: now } }, { session }));
        result.people[p.handle] = { id: existing._id };
      } else {
        const id = newRandomId();
        await write(c.people.insertOne({ _id: id, organizationId: orgId, handle: p.handle, ...fields, passwordHash: null, createdAt: now, updatedAt: now }, { session }));
        result.people[p.handle] = { id };
      }
    }

    const agents = byHandle(await c.agents.find({ organizationId: orgId }, { session }).toArray());
    const agentIds = new Map([...agents].map(([handle, a]) => [handle, a._id]));
    for (const a of manifest.agents ?? []) {
      const existing = agents.get(a.handle);
      const fields = { name: a.name, description: a.description ?? null };
      if (existing) {
        if (changed(existing, fields)) await write(c.agents.updateOne({ _id: existing._id }, { $set: { ...fields, updatedAt: now } }, { session }));
        if (a.status && a.status !== existing.status) {
          changedAgents.push(await write(changeAgentStatus(deps, session, { ...existing, ...fields }, a.status, now)));
        }
        result.agents[a.handle] = { id: existing._id };
      } else {
        const id = newRandomId();
        await write(c.agents.insertOne({ _id: id, organizationId: orgId, handle: a.handle, ...fields, status: a.status ?? 'ENABLED', createdAt: now, updatedAt: now }, { session }));
        agentIds.set(a.handle, id);
        result.agents[a.handle] = { id };
      }
    }

    const unacceptable: ErrorIssue[] = [];
    dormant.clear();
    for (const [i, p] of (manifest.policies ?? []).entries()) {
      const outcome = await applyPolicy(c, session, orgId, p, (h) => agentIds.get(h)!, now);
      if (outcome.touched) result.changed = true;
      result.policies[p.handle] = outcome.view;
      unacceptable.push(...outcome.issues.map(atPolicy(i)));
      dormant.set(i, outcome.dormant);
    }
    // Thrown inside the transaction: what was written before it (other policies, people, agents) is undone.
    if (unacceptable.length > 0) throw invalidRequest(unacceptable, NOT_APPLIED);

    const keys = byHandle(await c.apiKeys.find({ organizationId: orgId }, { session }).toArray());
    for (const [i, k] of (manifest.apiKeys ?? []).entries()) {
      const existing = keys.get(k.handle);
      const agentId = k.agent ? agentIds.get(k.agent)! : null;
      const expiresAt = k.expiresAt ? new Date(k.expiresAt) : null;
      if (existing) {
        // Checked before (checkManifest); again here for a key issued since by another apply.
        if (existing.agentId !== agentId) throw invalidRequest([keyBindingImmutable(i)], NOT_APPLIED);
        if (k.revoked === false && existing.revokedAt) throw invalidRequest([keyRevocationFinal(i)], NOT_APPLIED);
        const set: Record<string, unknown> = {};
        if ((existing.expiresAt?.getTime() ?? null) !== (expiresAt?.getTime() ?? null)) set.expiresAt = expiresAt;
        if (k.revoked && !existing.revokedAt) set.revokedAt = now;
        if (Object.keys(set).length > 0) await write(c.apiKeys.updateOne({ _id: existing._id }, { $set: set }, { session }));
        result.apiKeys[k.handle] = { id: existing._id, prefix: existing.prefix };
      } else {
        const issued = issueApiKey();
        const id = newRandomId();
        await write(
          c.apiKeys.insertOne(
            { _id: id, organizationId: orgId, agentId, handle: k.handle, prefix: issued.prefix, hash: issued.hash, expiresAt, revokedAt: k.revoked ? now : null, createdAt: now },
            { session },
          ),
        );
        result.apiKeys[k.handle] = { id, prefix: issued.prefix, key: issued.key };
      }
    }
    return result;
  }
  for (const agent of changedAgents) await finishAgentStatusChange(deps, agent);
  const approvers = await approverCount(c.people, applied.organization.id);
  (manifest.policies ?? []).forEach((p, i) => applied.warnings.push(...[...(dormant.get(i) ?? []), ...checkVersion(versionContent(p), approvers).warnings].map(atPolicy(i))));
  return applied;
}

/**
 * Everything an apply creates is unique by handle, and it creates only what its transaction did not find: a
 * duplicate key means that another apply (or admin call) created the same thing since this transaction's
 * snapshot (two first applies of a new organisation, on MongoDB). A lost race, then: the apply runs again and
 * finds it (docs/reference/decisions.md).
 */
async function lostRaceOnDuplicate<T>(attempt: Promise<T>): Promise<T> {
  try {
    return await attempt;
  } catch (error) {
    if (isDuplicateKeyError(error)) throw new VersionConflict('a manifest apply (created concurrently)');
    throw error;
  }
}

async function applyPolicy(
  c: Collections,
  session: StoreSession,
  organizationId: string,
  p: ManifestPolicy,
  agentId: (handle: string) => string,
  now: Date,
): Promise<{ view: ApplyResult['policies'][string]; touched: boolean; issues: PolicyIssue[]; dormant: PolicyIssue[] }> {
  const content = versionContent(p);
  const hash = contentHash(content);
  const activate = p.activate ?? true;
  const status = p.status ?? 'ACTIVE';
  const fields = {
    name: p.name,
    description: p.description ?? null,
    scopeType: p.scope,
    agentIds: (p.agents ?? []).map(agentId),
    status,
  };
  let policy = await c.policies.findOne({ organizationId, handle: p.handle }, { session });
  const policyBefore = policy;
  // The agents are a set: the same ones listed in another order are no change (no write, no stamp bump).
  if (policy && sameMembers(policy.agentIds, fields.agentIds)) fields.agentIds = policy.agentIds;
  let touched = false;
  if (!policy) {
    policy = { _id: newRandomId(), organizationId, handle: p.handle, ...fields, activeVersionId: null, draftVersionId: null, createdAt: now, updatedAt: now, archivedAt: status === 'ARCHIVED' ? now : null };
    await c.policies.insertOne(policy, { session });
    touched = true;
  } else if (changed(policy, fields)) {
    const archivedAt = status === 'ARCHIVED' ? (policy.archivedAt ?? now) : null;
    // A change of status is kept with its time: a replay decides each purchase with the policies enabled then (src/simulations/replay.ts).
    const statusChange = policy.status === status ? null : { from: policy.status, to: status, at: now };
    await c.policies.updateOne({ _id: policy._id }, { $set: { ...fields, archivedAt, updatedAt: now }, ...(statusChange ? { $push: { statusChanges: statusChange } } : {}) }, { session });
    policy = { ...policy, ...fields, archivedAt, updatedAt: now, ...(statusChange ? { statusChanges: [...(policy.statusChanges ?? []), statusChange] } : {}) };
    touched = true;
  }

  // The active and the draft version, not every archived one (each with its rules and merchants).
  const versions = await c.policyVersions.find({ policyId: policy._id, status: { $in: ['ACTIVE', 'DRAFT'] } }, { session }).toArray();
  const active = versions.find((v) => v.status === 'ACTIVE') ?? null;
  const draft = versions.find((v) => v.status === 'DRAFT') ?? null;
  const withIds = {
    currencies: content.currencies,
    currencyScope: 'EXPLICIT',
    rules: content.rules.map((r) => ({ id: newRandomId(), ...r })),
    merchants: content.merchants.map((m) => ({ id: newRandomId(), ...m })),
    contentHash: hash,
  };

  let target: PolicyVersionDoc | null = null; // the version to activate, if asked
  if (active && storedContentHash(active) === hash) {
    target = null;
  } else if (draft && storedContentHash(draft) === hash) {
    target = draft;
  } else if (draft) {
    // Drafts are editable (docs/reference/contract.md §3.2): the manifest rewrites the policy's one draft in place.
    await c.policyVersions.updateOne({ _id: draft._id }, { $set: withIds }, { session });
    target = { ...draft, ...withIds };
    touched = true;
  } else {
    const [newest] = await c.policyVersions.find({ policyId: policy._id }, { session, projection: { versionNumber: 1 } }).sort({ versionNumber: -1 }).limit(1).toArray();
    const versionNumber = (newest?.versionNumber ?? 0) + 1;
    target = { _id: newRandomId(), policyId: policy._id, organizationId, versionNumber, status: 'DRAFT', ...withIds, createdAt: now, activatedAt: null, archivedAt: null };
    await c.policyVersions.insertOne(target, { session });
    await c.policies.updateOne({ _id: policy._id }, { $set: { draftVersionId: target._id, updatedAt: now } }, { session });
    policy = { ...policy, draftVersionId: target._id, updatedAt: now };
    touched = true;
  }

  // Validate's check (docs/reference/contract.md §4.9) guards what starts deciding purchases: a version activated in
  // an ACTIVE policy, or the active version of a policy being enabled (docs/reference/decisions.md). A version
  // activated in a DISABLED or ARCHIVED policy decides nothing, and one that already decides (activated with
  // issues before this check existed) goes on working. The manifest's content is checked when it is the version
  // in force, for issues at its own paths (a stored version of the same content may list its rules in another order).
  const activating = target !== null && activate;
  const contentInForce = activating || (active !== null && storedContentHash(active) === hash);
  const enabling = policyBefore !== null && policyBefore.status !== 'ACTIVE';
  const contentIssues = contentInForce ? checkVersion(content).issues : [];
  let issues: PolicyIssue[] = [];
  if (status === 'ACTIVE' && (activating || enabling)) {
    issues = contentInForce ? contentIssues : active ? checkVersion(active).issues.map(inForceAgain(active)) : [];
  }
  if (issues.length > 0) return { view: { id: policy._id, activeVersionId: policy.activeVersionId, draftVersionId: policy.draftVersionId }, touched, issues, dormant: [] };
  const dormant = status === 'ACTIVE' ? [] : contentIssues;
  if (target && activate) {
    await activateVersion(c, session, policy, target, active, now);
    policy = { ...policy, activeVersionId: target._id, draftVersionId: null, updatedAt: now };
    touched = true;
  } else if (target && policy.draftVersionId !== target._id) {
    await c.policies.updateOne({ _id: policy._id }, { $set: { draftVersionId: target._id } }, { session });
    policy = { ...policy, draftVersionId: target._id };
    touched = true;
  }
  if (touched) await projectPolicy(c, session, policy._id);
  return { view: { id: policy._id, activeVersionId: policy.activeVersionId, draftVersionId: policy.draftVersionId }, touched, issues, dormant };
}

/** ACTIVE is immutable and unique per policy (docs/reference/contract.md §3.2): the previous active version is archived. */
export async function activateVersion(
  c: Collections,
  session: StoreSession,
  policy: PolicyDoc,
  version: PolicyVersionDoc,
  previous: PolicyVersionDoc | null,
  now: Date,
): Promise<void> {
  if (previous && previous._id !== version._id) {
    await c.policyVersions.updateOne({ _id: previous._id }, { $set: { status: 'ARCHIVED', archivedAt: now } }, { session });
  }
  await c.policyVersions.updateOne({ _id: version._id }, { $set: { status: 'ACTIVE', activatedAt: now } }, { session });
  // Activating a draft in shadow ends its shadow (docs/operate/shadow.md).
  await c.policyShadows.updateOne({ _id: version._id, status: 'RUNNING' }, { $set: { status: 'STOPPED', stoppedAt: now, stopReason: 'ACTIVATED' }, $inc: { version: 1 } }, { session });
  await c.policies.updateOne({ _id: policy._id }, { $set: { activeVersionId: version._id, draftVersionId: null, updatedAt: now } }, { session });
}

function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  const members = new Set(b);
  return a.length === b.length && a.every((x) => members.has(x));
}

function changed(doc: object, fields: Record<string, unknown>): boolean {
  const d = doc as Record<string, unknown>;
  return Object.entries(fields).some(([k, v]) => JSON.stringify(d[k]) !== JSON.stringify(v));
}

