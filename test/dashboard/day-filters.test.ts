// The dashboard's "from" and "to" days, in an organisation whose clocks go back to midnight: Havana's
// 1 November 2026 starts at 00:00 CDT (04:00 UTC) and again at 00:00 CST (05:00 UTC). The day is from the
// first midnight, whatever the season on the day the filter is asked (Luxon resolves an ambiguous local
// time with the offset the zone has at Settings.now).
import test from 'ava';
import { Settings } from 'luxon';
import { Client, setUpDashboardOrg, startDashboardApp } from '../helpers/dashboard.ts';

let clock = new Date('2026-10-31T12:00:00.000Z');

for (const asked of ['2026-07-01T12:00:00.000Z', '2026-12-15T12:00:00.000Z']) {
  test.serial(`a purchase in the first hour of 1 November in Havana is 1 November's, asked in ${asked.slice(0, 7)}`, async (t) => {
    const app = await startDashboardApp({ now: () => clock });
    const luxonNow = Settings.now;
    t.teardown(async () => {
      Settings.now = luxonNow;
      await app.close();
    });
    clock = new Date('2026-10-31T12:00:00.000Z');
    const org = await setUpDashboardOrg(app, `havana-${asked.slice(5, 7)}`, [{ handle: 'vic', name: 'Vic Viewer', email: `vic-${asked.slice(5, 7)}@havana.example`, roles: ['viewer'] }], 'PT24H', (m) => {
      m.organization.timezone = 'America/Havana';
    });
    for (const [at, merchant] of [['2026-10-31T12:00:00.000Z', 'October Co'], ['2026-11-01T04:30:00.000Z', 'First Hour Co'], ['2026-11-01T05:30:00.000Z', 'Second Hour Co']]) {
      clock = new Date(at);
      const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant, amountMinor: '100', reason: 'paper' } });
      t.is(res.status, 201, res.text);
    }
    Settings.now = () => Date.parse(asked);
    const client = new Client(app.url);
    await client.signIn(`vic-${asked.slice(5, 7)}@havana.example`);
    const merchants = async (query: string) => {
      const page = await client.get(`/dashboard/purchases?${query}`);
      t.is(page.status, 200, page.text.slice(0, 300));
      return [...page.text.matchAll(/<td><a href="\/dashboard\/purchases\/[0-9a-f-]{36}">([^<]*)<\/a>/g)].map((m) => m[1]).sort();
    };
    t.deepEqual(await merchants('from=2026-11-01&to=2026-11-01'), ['First Hour Co', 'Second Hour Co']);
    t.deepEqual(await merchants('from=2026-10-31&to=2026-10-31'), ['October Co']);
  });
}
