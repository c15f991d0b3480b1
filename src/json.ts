// JSON request bodies as the service reads them: JSON.parse, plus three things it does not say.
// - A number written with a fraction or an exponent (1.0, 1e3, 0.99999999999999999) that parses to a
//   whole number: JSON.parse rounds to the nearest double, so 0.99999999999999999 arrives as 1, and an
//   amount must not be a rounded fraction. Remembered per object and key (writtenAsInteger).
// - A name that appears twice in one object: JSON.parse keeps the last, while the body stored verbatim
//   shows both (a reader of the evidence may take the first). Refused (DuplicateKeyError).
// - A number beyond a double's range (an integer of 309 digits, 1e400): JSON.parse makes it Infinity,
//   which no limit judges by value (an integer field called it the wrong type, where a number just
//   below the range was too large). It is read as the largest double of its sign instead, so every
//   limit judges it as it judges any other huge number, and remembered (beyondDouble) for the fields
//   without limits, which refuse it.

const INTEGER_LITERAL = /^-?\d+$/;
/**
 * Text without a digit followed by '.', 'e' or 'E', nor 16 digits in a row, has no such number (every
 * integer of up to 15 digits is a double): parsed without a reviver.
 */
const NEEDS_REVIVER = /\d[.eE]|\d{16}/;

const notWrittenAsInteger = new WeakMap<object, Set<string>>();
const pastDoubleRange = new WeakMap<object, Set<string>>();
const writtenNumbers = new WeakMap<object, Map<string, string>>();

export class DuplicateKeyError extends Error {
  /** Dotted path of the repeated name ('metadata.note', 'policies.0.name'). */
  readonly path: string;
  constructor(path: string) {
    super(`"${path}" appears twice`);
    this.path = path;
  }
}

/** JSON.parse's result; throws SyntaxError for invalid JSON and DuplicateKeyError for a repeated name. */
export function parseJson(text: string): unknown {
  const value = NEEDS_REVIVER.test(text) ? JSON.parse(text, remember) : JSON.parse(text);
  const duplicate = firstDuplicateKey(text);
  if (duplicate !== null) throw new DuplicateKeyError(duplicate);
  return value;
}

function remember(this: object, key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== 'number') return value;
  const number = Number.isFinite(value) ? value : withinDoubleRange(this, key, value);
  // context.source: the number's text (Node 21+, Deno); without it nothing can be told, and nothing is remembered.
  if (Number.isInteger(number) && context?.source !== undefined && !INTEGER_LITERAL.test(context.source)) markNotWrittenAsInteger(this, key);
  if (number === value && context?.source !== undefined && context.source !== String(number)) {
    const written = exactDecimal(context.source);
    if (written !== exactDecimal(String(number))) {
      let numbers = writtenNumbers.get(this);
      if (numbers === undefined) writtenNumbers.set(this, (numbers = new Map()));
      numbers.set(key, written);
    }
  }
  return number;
}

const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * The exact value of a JSON number's text, one spelling per value: `0.<digits>e<exponent>`, the digits
 * without leading or trailing zeros (1.50, 15e-1 and 0.15e1 are all `0.15e1`; any zero is `0`). Never
 * what JSON.stringify writes for a double, which has no `0.` before an exponent.
 */
function exactDecimal(text: string): string {
  const [, sign, whole, fraction = '', exponent = '0'] = NUMBER.exec(text)!;
  const all = (whole + fraction).replace(/^0+/, '');
  const digits = all.replace(/0+$/, '');
  if (digits === '') return '0';
  // BigInt: an exponent may be written with more digits than a double keeps.
  const point = BigInt(exponent) - BigInt(fraction.length) + BigInt(all.length);
  return `${sign}0.${digits}e${point}`;
}

/**
 * holder[key]'s exact value as written (in the spelling of exactDecimal) when the double it was read as
 * is another number; undefined when the double is the number written, or it was not parsed by parseJson.
 */
export const writtenNumber = (holder: object, key: string): string | undefined => writtenNumbers.get(holder)?.get(key);

/** The largest double of the sign of `infinity`, a number too large for a double that holder[key] holds; remembered. */
export function withinDoubleRange(holder: object, key: string, infinity: number): number {
  mark(pastDoubleRange, holder, key);
  return infinity > 0 ? Number.MAX_VALUE : -Number.MAX_VALUE;
}

/** Whether holder[key] was written as a number beyond a double's range (and reads as ±Number.MAX_VALUE). */
export const beyondDouble = (holder: object, key: string): boolean => pastDoubleRange.get(holder)?.has(key) ?? false;

function mark(marks: WeakMap<object, Set<string>>, holder: object, key: string): void {
  let keys = marks.get(holder);
  if (keys === undefined) marks.set(holder, (keys = new Set()));
  keys.add(key);
}

/** Records that holder[key], a whole number, was not written as an integer literal (a YAML manifest's 1e3 or 100.0). */
export const markNotWrittenAsInteger = (holder: object, key: string): void => mark(notWrittenAsInteger, holder, key);

/** Whether holder[key] was written as an integer literal in the JSON parseJson read (true for anything not parsed by it). */
export const writtenAsInteger = (holder: object, key: string): boolean => !(notWrittenAsInteger.get(holder)?.has(key) ?? false);

/**
 * Whether objects and arrays in `text` open more than `max` deep (the outermost is level 1), by one
 * linear scan of the brackets outside strings that stops at the first one too deep. Run before
 * parsing: JSON.parse and the scans here take seconds over a megabyte of '[', and the answer does not
 * need them. Valid JSON or not: an unclosed '[' still counts.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c /* \ */) i++;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The path of the first name repeated in one object of `text`, which JSON.parse accepted; null when none is. */
function firstDuplicateKey(text: string): string | null {
  // One entry per open container: the names met so far in an object, null for an array; and per level,
  // the current name or index, for the path.
  const names: Array<Set<string> | null> = [];
  const path: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let end = i + 1;
      let escaped = false;
      for (let d = text.charCodeAt(end); d !== 0x22; d = text.charCodeAt(end)) {
        if (d === 0x5c /* \ */) {
          escaped = true;
          end += 2;
        } else end++;
      }
      let next = end + 1;
      while (isSpace(text.charCodeAt(next))) next++;
      const top = names.length - 1;
      if (text.charCodeAt(next) === 0x3a /* : */ && top >= 0) {
        const name = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end);
        const seen = names[top]!;
        if (seen.has(name)) return [...path.slice(0, top), name].join('.');
        seen.add(name);
        path[top] = name;
      }
      i = end;
    } else if (c === 0x7b /* { */) {
      names.push(new Set());
      path.push('');
    } else if (c === 0x5b /* [ */) {
      names.push(null);
      path.push('0');
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      names.pop();
      path.pop();
    } else if (c === 0x2c /* , */ && names.length > 0 && names[names.length - 1] === null) {
      path[path.length - 1] = String(Number(path[path.length - 1]) + 1);
    }
  }
  return null;
}
