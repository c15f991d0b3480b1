// Fault injection for tests, in the shape of mongod's own `failCommand` fail point
// (configureFailPoint, enabled by --setParameter enableTestCommands=1): the same test can make
// the listener and a real replica set answer WriteConflict or UnknownTransactionCommitResult.
import type { Document } from 'bson';
import { CommandError } from './errors.ts';

export type FailPointMode = 'alwaysOn' | 'off' | { times: number } | { skip: number } | { activationProbability: number };

export interface FailCommandData {
  failCommands: string[];
  errorCode?: number;
  errorLabels?: string[];
  /** Close the connection instead of answering. */
  closeConnection?: boolean;
  /** Run the command, then attach this writeConcernError (a commit that happened but is unconfirmed). */
  writeConcernError?: Document;
  /** Only for clients that gave this appName in their handshake. */
  appName?: string;
  /** Only for this "db.collection". */
  namespace?: string;
  /**
   * Only inside multi-document transactions (this listener's addition: mongod retries a
   * WriteConflict outside a transaction itself, so clients only ever see one inside).
   */
  inTransaction?: boolean;
}

export type FailAction =
  | { kind: 'error'; reply: Document }
  | { kind: 'close' }
  | { kind: 'writeConcernError'; writeConcernError: Document; errorLabels?: string[] };

interface Armed {
  mode: FailPointMode;
  data: FailCommandData;
  skipped: number;
  fired: number;
}

export class FailPoints {
  #failCommand: Armed | undefined;
  #entered = 0;

  /** configureFailPoint's body: only 'failCommand' exists here. Returns how often it fired (mongod's count). */
  configure(name: string, mode: FailPointMode, data: Document = {}): number {
    if (name !== 'failCommand') throw new CommandError('BadValue', `unknown fail point ${name}: this listener has only failCommand`);
    const count = this.#entered;
    this.#entered = 0;
    if (mode === 'off') {
      this.#failCommand = undefined;
      return count;
    }
    if (!Array.isArray(data.failCommands) || data.failCommands.some((c) => typeof c !== 'string')) {
      throw new CommandError('BadValue', 'failCommand needs data.failCommands, an array of command names');
    }
    this.#failCommand = { mode, data: data as FailCommandData, skipped: 0, fired: 0 };
    return count;
  }

  /** What to do instead of (or after) running this command, if anything. */
  check(command: string, context: { appName?: string; namespace?: string; inTransaction: boolean }): FailAction | undefined {
    const armed = this.#failCommand;
    if (!armed || !armed.data.failCommands.includes(command)) return undefined;
    const { data, mode } = armed;
    if (data.appName !== undefined && data.appName !== context.appName) return undefined;
    if (data.namespace !== undefined && data.namespace !== context.namespace) return undefined;
    if (data.inTransaction === true && !context.inTransaction) return undefined;
    if (typeof mode === 'object' && 'skip' in mode && armed.skipped < mode.skip) {
      armed.skipped++;
      return undefined;
    }
    if (typeof mode === 'object' && 'activationProbability' in mode && Math.random() >= mode.activationProbability) return undefined;
    if (typeof mode === 'object' && 'times' in mode) {
      if (armed.fired >= mode.times) return undefined;
      if (armed.fired + 1 >= mode.times) this.#failCommand = undefined;
    }
    armed.fired++;
    this.#entered++;
    if (data.closeConnection) return { kind: 'close' };
    if (data.writeConcernError) {
      // mongod reports a writeConcernError's labels (RetryableWriteError) on the reply itself.
      const { errorLabels, ...writeConcernError } = data.writeConcernError;
      return { kind: 'writeConcernError', writeConcernError, errorLabels: Array.isArray(errorLabels) ? errorLabels : undefined };
    }
    const code = data.errorCode ?? 1;
    const reply: Document = { ok: 0, errmsg: `Failing command ${command} via 'failCommand' failpoint`, code, codeName: codeName(code) };
    if (data.errorLabels?.length) reply.errorLabels = data.errorLabels;
    return { kind: 'error', reply };
  }
}

function codeName(code: number): string {
  const names: Record<number, string> = { 112: 'WriteConflict', 91: 'ShutdownInProgress', 11600: 'InterruptedAtShutdown', 251: 'NoSuchTransaction', 64: 'WriteConcernFailed', 50: 'MaxTimeMSExpired' };
  return names[code] ?? `Location${code}`;
}
