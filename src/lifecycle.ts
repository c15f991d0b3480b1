// A process's readiness and shutdown state: main.ts makes it, the probes (src/http/health.ts) report it,
// src/http/shutdown.ts flips `stopping`. Apart from both so that the dependencies (src/app-deps.ts) can
// name it without importing the HTTP layer.

/** What a process tells its probes about itself; main.ts owns it, shutdown.ts flips `stopping`. */
export interface Lifecycle {
  /** True when this process runs the Agenda jobs (the embedded default's web process, the worker). */
  runsJobs: boolean;
  jobsRunning: boolean;
  stopping: boolean;
}

export const newLifecycle = (runsJobs: boolean): Lifecycle => ({ runsJobs, jobsRunning: false, stopping: false });
