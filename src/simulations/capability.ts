// What simulations contribute: the routes under /v1/simulations.
import type { Capability } from '../capability.ts';
import { simulationRoutes } from './routes.ts';

export const simulations: Capability = { name: 'simulations', routes: (deps) => [simulationRoutes(deps)] };
