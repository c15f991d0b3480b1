// A manifest's text (the operator API's body, `npm start -- --manifest FILE`) to a value, bounded as
// client input is: nesting deeper than MAX_JSON_DEPTH is refused (400 invalid_request, issue TOO_DEEP)
// before anything recursive sees it, so a megabyte of '[' is refused in milliseconds rather than
// holding the event loop for seconds (the `yaml` package took about 26 s on one, ending in a stack
// overflow; JSON.parse with the duplicate-name scan about 2 s).
//
// JSON: the brackets are counted on the text first (nestsDeeperThan in src/json.ts), exactly.
// YAML: the `yaml` package's own Lexer and Parser build the document's syntax tree iteratively (the
// Parser keeps the nodes still open on an explicit stack); the Composer, which turns that tree into a
// document, and toJS recurse. So this feeds the Parser one token at a time and refuses once its stack
// of open nodes passes MAX_OPEN_YAML_NODES, then composes the same tokens: one parse, as yaml.parse
// would do it, stopped early. That stack is not the value's depth exactly (it also holds the document
// and a key being read: a 32-deep value holds 33 or 34), so its bound is twice the depth, and the
// value is checked exactly afterwards (checkParsed), with the same refusal. Flow ('[', '{'), block
// (indentation, '- ', '? ') and mixed nesting all push onto that stack; quoted scalars, block scalars
// and comments do not, so brackets inside them are not counted.
import { Composer, Lexer, Parser, isAlias, isPair, isScalar, isSeq, visit, type Document } from 'yaml';
import { MAX_JSON_DEPTH, checkParsed, parseBodyJson, tooDeep } from '../http/body.ts';
import { ApiError, invalidRequest } from '../http/errors.ts';
import { markNotWrittenAsInteger, withinDoubleRange } from '../json.ts';

const MAX_OPEN_YAML_NODES = 2 * MAX_JSON_DEPTH + 2;
const YAML_COLLECTIONS = 'YAML mappings and sequences';
/** Aliases a manifest may use (a "billion laughs" document expands a few aliases into gigabytes). */
const MAX_ALIAS_COUNT = 50;

const notYaml = (why = '') => new ApiError(400, 'malformed_json', `The manifest is not valid YAML${why}.`);

function* boundedSyntaxTree(text: string) {
  const parser = new Parser();
  for (const lexeme of new Lexer().lex(text)) {
    yield* parser.next(lexeme);
    if (parser.stack.length > MAX_OPEN_YAML_NODES) throw tooDeep(YAML_COLLECTIONS);
  }
  yield* parser.end();
}

/**
 * A number written otherwise than as a decimal integer (1e3, 100.0, 0x10, .inf), or beyond a double's
 * range, until the reviver says so (src/json.ts).
 */
class MarkedNumber {
  readonly value: number;
  readonly integerLiteral: boolean;
  constructor(value: number, integerLiteral: boolean) {
    this.value = value;
    this.integerLiteral = integerLiteral;
  }
}
const INTEGER_LITERAL = /^[-+]?\d+$/;

/**
 * Reads the document as JSON reads its text: a name given twice in one mapping is DUPLICATE_KEY at its
 * path (the yaml package refuses it without saying where; JSON.parse would keep the last), and a whole
 * number not written as an integer literal is remembered as such (src/json.ts writtenAsInteger), so that
 * `amountMinor: 1e3` or `0.99999999999999999` is refused as it is in a JSON manifest.
 */
function asJson(doc: Document.Parsed, text: string): void {
  // A key may be an alias (`*n : x`, `&n name` given before): it is the name it stands for.
  const keyOf = (key: unknown): unknown => (isAlias(key) ? key.resolve(doc) : key);
  visit(doc, {
    Map(_, map, path) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key = keyOf(pair.key);
        if (!isScalar(key)) continue;
        const name = String(key.value);
        if (!seen.has(name)) {
          seen.add(name);
          continue;
        }
        const at = [...pathOf([...path, map], keyOf), name].join('.');
        throw invalidRequest([{ path: at, code: 'DUPLICATE_KEY', message: `"${at}" is given twice; give each field once.` }]);
      }
    },
    Scalar(key, node) {
      if (key === 'key' || typeof node.value !== 'number' || !node.range) return;
      const integerLiteral = INTEGER_LITERAL.test(text.slice(node.range[0], node.range[1]));
      if (!integerLiteral || Math.abs(node.value) === Infinity) node.value = new MarkedNumber(node.value, integerLiteral);
    },
  });
}

/** The names and indexes leading to the last node of a visit's path (the document and mappings add none). */
function pathOf(chain: readonly unknown[], keyOf: (key: unknown) => unknown): string[] {
  const parts: string[] = [];
  for (let i = 0; i + 1 < chain.length; i++) {
    const parent = chain[i];
    const child = chain[i + 1];
    if (isSeq(parent)) parts.push(String(parent.items.indexOf(child as never)));
    else if (isPair(parent) && parent.value === child) {
      const key = keyOf(parent.key);
      parts.push(isScalar(key) ? String(key.value) : String(key));
    }
  }
  return parts;
}

function revive(this: object, key: unknown, value: unknown): unknown {
  if (!(value instanceof MarkedNumber)) return value;
  const number = Math.abs(value.value) === Infinity ? withinDoubleRange(this, String(key), value.value) : value.value;
  if (!value.integerLiteral) markNotWrittenAsInteger(this, String(key));
  return number;
}

export function parseYamlManifest(text: string): unknown {
  let doc: Document.Parsed | null = null;
  // forceDoc and the end offset as yaml.parse passes them: an empty text is one empty document.
  // Names given twice are found by asJson, which says where.
  // logLevel 'error': the package would otherwise write a process warning to stderr for every
  // collection used as a key (which the manifest refuses as an unknown field anyway), at a client's will.
  // schema 'core': a `%YAML 1.1` directive would otherwise switch to YAML 1.1's schema, where 020000 is
  // octal (8192), `yes` is true and 1_000 is 1000, and the same text would mean other limits.
  for (const next of new Composer({ uniqueKeys: false, logLevel: 'error', schema: 'core' }).compose(boundedSyntaxTree(text), true, text.length)) {
    if (doc !== null) throw notYaml(': it holds more than one document');
    doc = next;
  }
  if (doc === null || doc.errors.length > 0) throw notYaml();
  // A tag the reader does not know (`!!js/function`, `!custom`) would be read as the plain text after it.
  const unknownTag = doc.warnings.find((w) => w.code === 'TAG_RESOLVE_FAILED');
  if (unknownTag) throw notYaml(`: ${unknownTag.message.split('\n')[0]}`);
  asJson(doc, text);
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT, reviver: revive });
  } catch {
    throw notYaml(`: it uses more than ${MAX_ALIAS_COUNT} aliases`);
  }
  checkParsed(value, YAML_COLLECTIONS);
  return value;
}

export function parseJsonManifest(text: string): unknown {
  const value = parseBodyJson(text);
  checkParsed(value);
  return value;
}

export const parseManifest = (text: string, format: 'json' | 'yaml'): unknown => (format === 'yaml' ? parseYamlManifest(text) : parseJsonManifest(text));
