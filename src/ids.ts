// UUIDv7 for things that sort by creation time (purchases, decisions, events: SPEC.md 2.1),
// UUIDv4 elsewhere. Both are bare UUIDs with no prefix.
import { v4, v7, validate } from 'uuid';

export const newId = (): string => v7();
export const newRandomId = (): string => v4();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value) && validate(value);
