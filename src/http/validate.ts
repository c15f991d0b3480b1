// TypeBox validators compiled once at module level; failures become `invalid_request` with one
// ErrorIssue per problem (docs/reference/contract.md §7). Unknown fields: issue code UNKNOWN_FIELD (docs/reference/decisions.md).
import type { TSchema, Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { Settings } from 'typebox/system';
import { invalidRequest, MAX_ISSUES, type ErrorIssue } from './errors.ts';
import { NO_CONTROL_CHARACTERS } from '../../schemas/common.ts';

/**
 * At most MAX_ISSUES issues are listed (the first ones found, in body order); a body can never
 * produce an empty list. TypeBox stops collecting at its own `maxErrors` (8 by default), which hid
 * problems: it is raised far enough that every listed issue is found.
 */
export { MAX_ISSUES };
Settings.Set({ maxErrors: MAX_ISSUES * 4 });

/** The issues to report: the first MAX_ISSUES, deduplicated by path and code. */
export function capIssues(issues: ErrorIssue[]): ErrorIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const key = `${i.path}|${i.code}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  }).slice(0, MAX_ISSUES);
}

export interface Validator<T extends TSchema> {
  check(value: unknown): value is Static<T>;
  /** Returns the value typed, or throws 400 invalid_request listing every issue. */
  parse(value: unknown, rootPath?: string): Static<T>;
  issues(value: unknown, rootPath?: string): ErrorIssue[];
}

interface TbError {
  keyword: string;
  schemaPath?: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

/**
 * The issue for a union of literals (a closed list: `effect`, `status`...) that the value is not in,
 * naming the values allowed; null for another union. A value of the right type is INVALID_VALUE
 * (as an enum's is), another type INVALID_TYPE.
 */
function closedListIssue(union: TbError, errors: TbError[], path: string): ErrorIssue | null {
  const branches = errors.filter((c) => c.instancePath === union.instancePath && c.schemaPath?.startsWith(`${union.schemaPath}/anyOf/`));
  const allowed = branches.filter((c) => c.keyword === 'const').map((c) => c.params.allowedValue);
  if (allowed.length === 0 || branches.some((c) => c.keyword !== 'const' && c.keyword !== 'type')) return null;
  // A `null` branch (Nullable) fails on its type alone: null is one of the values allowed.
  if (branches.some((c) => c.keyword === 'type' && c.params.type === 'null')) allowed.push(null);
  const wrongType = branches.some((c) => c.keyword === 'type' && c.params.type !== 'null');
  return { path, code: wrongType ? 'INVALID_TYPE' : 'INVALID_VALUE', message: `"${path || 'body'}" is one of ${allowed.map(String).join(', ')}.` };
}

const pointerToPath = (pointer: string): string =>
  pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');

const join = (base: string, tail: string) => (base && tail ? `${base}.${tail}` : base || tail);

function toIssues(errors: TbError[], rootPath: string): ErrorIssue[] {
  const issues: ErrorIssue[] = [];
  // Branch errors of a union are noise once the union itself failed: keep the union's verdict.
  const unionPaths = new Set(errors.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => e.instancePath));
  for (const e of errors) {
    const path = pointerToPath(e.instancePath);
    let issue: ErrorIssue | null = null;
    switch (e.keyword) {
      case 'additionalProperties': {
        for (const field of (e.params.additionalProperties as string[]) ?? []) {
          // `path === ''` is the body itself; a field named '' inside it is still a field.
          issues.push({ path: join(rootPath, path === '' ? field : `${path}.${field}`), code: 'UNKNOWN_FIELD', message: `Unknown field "${field}".` });
        }
        continue;
      }
      case 'boolean': {
        // The `false` schema behind additionalProperties fails at the field itself.
        if (!/\/additionalProperties$/.test(String((e as { schemaPath?: string }).schemaPath ?? ''))) continue;
        // The field's own name, which may hold a dot ("a.b"), is the pointer's last segment.
        const field = pointerToPath(`/${e.instancePath.split('/').pop()}`);
        issue = { path: join(rootPath, path), code: 'UNKNOWN_FIELD', message: `Unknown field "${field}".` };
        break;
      }
      case 'required': {
        for (const field of (e.params.requiredProperties as string[]) ?? [e.params.missingProperty as string]) {
          if (field === undefined) continue;
          issues.push({ path: join(rootPath, join(path, field)), code: 'REQUIRED', message: `"${field}" is required.` });
        }
        continue;
      }
      case 'anyOf':
      case 'oneOf': {
        // When a branch of the right type failed on its content (pattern, length...), say that.
        const specific = errors.find((c) => c.instancePath === e.instancePath && !['type', 'anyOf', 'oneOf', 'const', 'enum'].includes(c.keyword));
        const closed = specific ? null : closedListIssue(e, errors, join(rootPath, path));
        issue = closed ?? (specific
          ? contentIssue(specific, join(rootPath, path), path)
          : { path: join(rootPath, path), code: 'INVALID_TYPE', message: `"${path || 'body'}" has the wrong type or form.` });
        break;
      }
      default: {
        if (unionPaths.has(e.instancePath)) continue;
        issue = contentIssue(e, join(rootPath, path), path);
      }
    }
    issues.push(issue);
  }
  return capIssues(issues);
}

/** A value of the right type whose content fails (a length, a pattern...), at `at`; `path` names it in the message. */
const contentIssue = (e: TbError, at: string, path: string): ErrorIssue =>
  e.keyword === 'pattern' && e.params.pattern === NO_CONTROL_CHARACTERS
    ? { path: at, code: 'CONTROL_CHARACTER', message: `"${path}" holds a control character or a line break (U+0000 to U+001F, U+007F to U+009F, U+2028, U+2029).` }
    : { path: at, code: codeFor(e.keyword), message: `"${path || 'body'}" ${e.message}.` };

function codeFor(keyword: string): string {
  switch (keyword) {
    case 'type':
      return 'INVALID_TYPE';
    case 'minLength':
      return 'TOO_SHORT';
    case 'maxLength':
      return 'TOO_LONG';
    case 'minItems':
      return 'TOO_FEW_ITEMS';
    case 'maxItems':
      return 'TOO_MANY_ITEMS';
    case 'pattern':
    case 'format':
      return 'INVALID_FORMAT';
    case 'enum':
    case 'const':
      return 'INVALID_VALUE';
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return 'OUT_OF_RANGE';
    case 'uniqueItems':
      return 'DUPLICATE_ITEMS';
    default:
      return 'INVALID';
  }
}

export function compile<T extends TSchema>(schema: T): Validator<T> {
  const compiled = Compile(schema);
  const issues = (value: unknown, rootPath = '') => toIssues([...compiled.Errors(value)] as TbError[], rootPath);
  return {
    check: (value: unknown): value is Static<T> => compiled.Check(value),
    issues,
    parse(value: unknown, rootPath = ''): Static<T> {
      if (compiled.Check(value)) return value as Static<T>;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw invalidRequest([{ path: rootPath || 'body', code: 'INVALID_TYPE', message: 'The body must be a JSON object.' }]);
      }
      throw invalidRequest(issues(value, rootPath));
    },
  };
}
