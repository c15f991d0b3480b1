// What a command handler is given: the listener's shared parts, the connection it came on, and
// the command itself.
import type { Document } from 'bson';
import type { Store, StoreSession } from '../store.ts';
import type { ConnectionLimits } from './connection-limits.ts';
import type { Cursors } from './cursors.ts';
import type { Databases } from './databases.ts';
import type { FailPoints } from './fail-points.ts';
import type { ScramConversation } from './scram.ts';
import type { QueryThreads } from './query-threads.ts';
import type { Sessions } from './sessions.ts';
import type { UserRecord, Users } from './users.ts';

export interface Server {
  databases: Databases;
  users: Users;
  cursors: Cursors;
  sessions: Sessions;
  failPoints: FailPoints;
  /** Where the analyst's reads run, each with a deadline. */
  queries: QueryThreads;
  /** Unauthenticated connections apart, authenticated ones per user. */
  connections: ConnectionLimits;
  /** host:port as clients reach it, reported as the replica set's only member. */
  me: string;
  setName: string;
  /** Whether configureFailPoint is allowed (tests only). */
  testCommands: boolean;
  startedAt: Date;
}

export interface Connection {
  id: number;
  remote: string;
  user?: UserRecord;
  scram?: ScramConversation;
  appName?: string;
  /** Aborted when the connection closes: what runs for it alone may stop (an analyst's read). */
  closed?: AbortSignal;
}

export interface Call {
  server: Server;
  conn: Connection;
  /** The command's $db. */
  db: string;
  /** The command's name as sent (its first key). */
  name: string;
  command: Document;
  /** The authenticated user's name, owner of sessions and cursors. */
  owner: string;
  /** Set when the command runs inside a multi-document transaction. */
  session?: StoreSession;
  /** The store behind $db; with create, opened if the listener allows that name. */
  store(create: boolean): Promise<Store | undefined>;
}
