// The baseline for `npm run bench`: a bare Koa route that parses the same JSON body with koa-body
// and returns it. What the decision path costs is measured against this.
import Koa from 'koa';
import { koaBody } from 'koa-body';

const app = new Koa();
app.use(koaBody({ jsonLimit: 64 * 1024 }));
app.use((ctx) => {
  ctx.status = 201;
  ctx.body = ctx.request.body;
});
const server = app.listen(Number(process.env.PORT) || 0, '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
