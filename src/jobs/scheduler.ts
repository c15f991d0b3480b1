// What web handlers need from the job system: put a one-off job on the schedule. The worker process
// (or, on the embedded default, the same process) runs it. A failure to schedule is never fatal to a
// command that already committed: every scheduled job has a recurring sweep behind it.
import type { Agenda } from 'agenda';

export interface Scheduler {
  schedule(name: string, at: Date, data: Record<string, unknown>): Promise<void>;
}

export const agendaScheduler = (agenda: Agenda): Scheduler => ({
  async schedule(name, at, data) {
    await agenda.schedule(at, name, data);
  },
});

/** For processes that run no jobs and tests that do not need them: the sweeps do the work. */
export const noScheduler: Scheduler = { async schedule() {} };
