// Agent (docs/reference/contract.md §2.2) and GET /v1/agents (4.10).
import Type from 'typebox';
import { AgentStatus, Nullable, Timestamp, Uuid } from './common.ts';

export const Agent = Type.Object({
  id: Uuid,
  name: Type.String(),
  description: Nullable(Type.String()),
  status: AgentStatus,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const AgentList = Type.Object({ agents: Type.Array(Agent) });
