/**
 * Prints the route table the UpdateRoutes rows use, for rerunning them by hand:
 *
 *   bun bench/tools/routes.ts N --batch   # ip -batch lines (the floor)
 *   bun bench/tools/routes.ts N --json    # grpc.UpdateRoutesRequest as protobuf JSON
 */
import { create, toJsonString } from "@bufbuild/protobuf";
import { UpdateRoutesRequestSchema } from "../../src/gen/agent_pb";
import { batchText, DEV, dest, GATEWAY } from "../lib/route-set";

const n = Number(process.argv[2]);
if (!Number.isInteger(n) || n < 0 || n > 65_280) {
  process.stderr.write("usage: routes.ts N (0..65280) --batch|--json\n");
  process.exit(2);
}
if (process.argv.includes("--json")) {
  const Routes = Array.from({ length: n }, (_, i) => ({
    dest: dest(i),
    gateway: GATEWAY,
    device: DEV,
  }));
  const req = create(UpdateRoutesRequestSchema, { routes: { Routes } });
  process.stdout.write(`${toJsonString(UpdateRoutesRequestSchema, req)}\n`);
} else {
  process.stdout.write(batchText(n));
}
