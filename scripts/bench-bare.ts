// The baselines for `npm run bench`, each in its own process:
//   bare  (default): a Koa route that parses the same JSON body with koa-body and returns it.
//   floor (BENCH_FLOOR_FILE): a Koa route that parses the same body and returns a canned response of
//         the same size as a real decision (the file holds one), serialised by Koa on every request
//         as the service's own responses are. What a decision costs beyond that is the service's.
import { readFileSync } from 'node:fs';
import Koa from 'koa';
import { koaBody } from 'koa-body';

const floorFile = process.env.BENCH_FLOOR_FILE;
const canned: unknown = floorFile ? JSON.parse(readFileSync(floorFile, 'utf8')) : null;

const app = new Koa();
app.use(koaBody({ jsonLimit: 64 * 1024 }));
app.use((ctx) => {
  ctx.status = 201;
  ctx.body = canned ?? ctx.request.body;
});
const server = app.listen(Number(process.env.PORT) || 0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
